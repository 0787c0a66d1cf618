// Host shim: lets the generated CUDA C of tensor-ops compile with a host C++20 compiler
// (g++ -std=c++20 -pthread) and run on the CPU, for tests on machines without a GPU.
//
// - __global__/__device__/__forceinline__/__launch_bounds__ vanish; __shared__ is `static`
//   (one block runs at a time, under a global lock);
// - threadIdx/blockIdx/blockDim/gridDim are thread-local;
// - tops_shim_launch runs the grid: sequentially (block by block, thread by thread) for
//   kernels without __syncthreads, or, for kernels that use shared memory, with each CUDA
//   thread of a block as a fiber (ucontext, its own stack) on the launching thread:
//   __syncthreads switches to the next fiber, and a round that has run every live fiber up to
//   its next __syncthreads (or its end) is one barrier phase. No OS thread per CUDA thread, so
//   a 256-thread block with dozens of barriers costs microseconds, not context switches.
// - __shfl_down_sync (fiber launches only) is an exchange through the block's barrier: each
//   thread publishes its value in a per-block slot, waits, reads its partner's, waits again.
//   So every thread of the block must call it together (the kernels keep such calls in
//   uniform control flow, which is also what the warp-synchronous mask 0xffffffff asks).
// It cannot show data races, misaligned accesses or performance: those need a real GPU.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <pthread.h>
#include <ucontext.h>

// Only C-level headers: every kernel library starts with this file, so what it includes is
// parsed (or loaded from a precompiled header) once per kernel the CUDA stand-in builds.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

/// One block's CUDA threads as fibers (arrays sized for the block, owned by the launch).
struct tops_shim_block {
    ucontext_t scheduler;
    ucontext_t* fibers = nullptr;
    uint3* index = nullptr;
    char* done = nullptr;
    unsigned long long* exchange = nullptr; // __shfl_down_sync slots, one per thread
    char* stacks = nullptr;
    void (*kernel)(const void*) = nullptr; // runs the kernel body `body`
    const void* body = nullptr;
    unsigned current = 0;
};
inline thread_local tops_shim_block* tops_shim_current = nullptr;

/// Stack bytes of each fiber (kernels keep a few hundred bytes of locals).
constexpr size_t TOPS_SHIM_STACK = 64 * 1024;

template <class T> inline T __ldg(const T* p) { return *p; }

/// Ends the calling fiber's barrier phase: back to the scheduler, which resumes it in the
/// next round, after every other live fiber of the block has reached its barrier too.
inline void __syncthreads() {
    tops_shim_block* b = tops_shim_current;
    if (!b) return; // a sequential launch has no other thread to wait for
    swapcontext(&b->fibers[b->current], &b->scheduler);
}

/// The value of lane (own lane + delta) of the caller's warp of 32, or the caller's own value
/// when that lane is past the warp (or the block) — as the hardware's shuffle.
template <class T> inline T __shfl_down_sync(unsigned /*mask*/, T v, unsigned delta) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffle moves at most 8 bytes");
    tops_shim_block* b = tops_shim_current;
    if (!b) {
        std::fprintf(stderr, "shim: __shfl_down_sync in a kernel launched without fibers\n");
        std::abort();
    }
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned me = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    b->exchange[me] = bits;
    __syncthreads();
    T r = v;
    if (me % 32 + delta < 32 && me + delta < n) std::memcpy(&r, &b->exchange[me + delta], sizeof r);
    __syncthreads();
    return r;
}

/// A fiber's body: the kernel, then marked done (uc_link returns to the scheduler).
inline void tops_shim_fiber_main() {
    tops_shim_block* b = tops_shim_current;
    b->kernel(b->body);
    b->done[b->current] = 1;
}

/// Runs one block of `n` threads as fibers, round after round until every one has ended.
inline void tops_shim_run_block(tops_shim_block& b, dim3 block) {
    const unsigned n = block.x * block.y * block.z;
    std::memset(b.done, 0, n);
    std::memset(b.exchange, 0, n * sizeof *b.exchange);
    unsigned k = 0;
    for (unsigned tz = 0; tz < block.z; ++tz)
        for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) b.index[k++] = uint3{tx, ty, tz};
    for (unsigned i = 0; i < n; ++i) {
        std::memset(&b.fibers[i], 0, sizeof b.fibers[i]);
        getcontext(&b.fibers[i]);
        b.fibers[i].uc_stack.ss_sp = b.stacks + (size_t)i * TOPS_SHIM_STACK;
        b.fibers[i].uc_stack.ss_size = TOPS_SHIM_STACK;
        b.fibers[i].uc_link = &b.scheduler;
        makecontext(&b.fibers[i], tops_shim_fiber_main, 0);
    }
    tops_shim_current = &b;
    for (unsigned live = n; live > 0;) {
        live = 0;
        for (unsigned i = 0; i < n; ++i) {
            if (b.done[i]) continue;
            b.current = i;
            threadIdx = b.index[i];
            swapcontext(&b.scheduler, &b.fibers[i]);
            live += !b.done[i];
        }
    }
    tops_shim_current = nullptr;
}

/// The one lock launches run under (`__shared__` arrays are statics).
inline pthread_mutex_t* tops_shim_lock() {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    return &lock;
}

/// Runs `kernel` (a callable, `kernel()` runs one CUDA thread) over the grid. `threaded`: the
/// kernel uses __syncthreads (or shuffles), so each block's threads run as fibers; otherwise
/// a plain loop.
template <class F> inline void tops_shim_launch(dim3 grid, dim3 block, bool threaded, const F& kernel) {
    pthread_mutex_lock(tops_shim_lock());
    blockDim = block;
    gridDim = grid;
    tops_shim_block fibers;
    const size_t n = (size_t)block.x * block.y * block.z;
    if (threaded) {
        fibers.kernel = [](const void* body) { (*(const F*)body)(); };
        fibers.body = &kernel;
        fibers.fibers = (ucontext_t*)std::calloc(n, sizeof(ucontext_t));
        fibers.index = (uint3*)std::calloc(n, sizeof(uint3));
        fibers.done = (char*)std::calloc(n, 1);
        fibers.exchange = (unsigned long long*)std::calloc(n, sizeof(unsigned long long));
        fibers.stacks = (char*)std::malloc(n * TOPS_SHIM_STACK);
        if (!fibers.fibers || !fibers.index || !fibers.done || !fibers.exchange || !fibers.stacks) {
            std::fprintf(stderr, "shim: out of memory for a block of %zu fibers\n", n);
            std::abort();
        }
    }
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = uint3{bx, by, bz};
                if (threaded) {
                    tops_shim_run_block(fibers, block);
                    continue;
                }
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            threadIdx = uint3{tx, ty, tz};
                            kernel();
                        }
            }
    std::free(fibers.fibers);
    std::free(fibers.index);
    std::free(fibers.done);
    std::free(fibers.exchange);
    std::free(fibers.stacks);
    pthread_mutex_unlock(tops_shim_lock());
}
