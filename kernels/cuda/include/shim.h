// Host shim: lets the generated CUDA C of tensor-ops compile with a host C++20 compiler
// (g++ -std=c++20 -pthread) and run on the CPU, for tests on machines without a GPU.
//
// - __global__/__device__/__forceinline__/__launch_bounds__ vanish; __shared__ is `static`
//   (one block runs at a time, under a global lock);
// - threadIdx/blockIdx/blockDim/gridDim are thread-local;
// - tops_shim_launch runs the grid: sequentially (block by block, thread by thread) for
//   kernels without __syncthreads, or with one std::thread per CUDA thread of a block and a
//   std::barrier as __syncthreads for kernels that use shared memory.
// It cannot show data races, misaligned accesses or performance: those need a real GPU.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __CUDA_ARCH__
#error "shim.h is for host compilers only"
#endif

#define __global__
#define __launch_bounds__(...)
#undef __device__
#define __device__
#undef __forceinline__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

// `inline` variables: one instance across every translation unit of the shim library
// (a kernel in one file and the launcher of another must see the same thread indices).
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline thread_local std::barrier<>* tops_shim_barrier = nullptr;

template <class T> inline T __ldg(const T* p) { return *p; }
inline void __syncthreads() {
    if (tops_shim_barrier) tops_shim_barrier->arrive_and_wait();
}

/// Runs `kernel` over the grid. `threaded`: one std::thread per CUDA thread of each block
/// (needed when the kernel calls __syncthreads); otherwise a plain loop.
inline void tops_shim_launch(dim3 grid, dim3 block, bool threaded, const std::function<void()>& kernel) {
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                uint3 b = {bx, by, bz};
                if (!threaded) {
                    for (unsigned tz = 0; tz < block.z; ++tz)
                        for (unsigned ty = 0; ty < block.y; ++ty)
                            for (unsigned tx = 0; tx < block.x; ++tx) {
                                blockIdx = b;
                                threadIdx = {tx, ty, tz};
                                blockDim = block;
                                gridDim = grid;
                                kernel();
                            }
                    continue;
                }
                std::barrier<> bar((std::ptrdiff_t)(block.x * block.y * block.z));
                std::vector<std::thread> threads;
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx)
                            threads.emplace_back([&, tx, ty, tz] {
                                blockIdx = b;
                                threadIdx = {tx, ty, tz};
                                blockDim = block;
                                gridDim = grid;
                                tops_shim_barrier = &bar;
                                kernel();
                                tops_shim_barrier = nullptr;
                                bar.arrive_and_drop(); // an exited thread leaves the barrier

                            });
                for (auto& t : threads) t.join();
            }
}
