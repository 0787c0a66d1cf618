// Host shim: lets the generated CUDA C of tensor-ops compile with a host C++20 compiler
// (g++ -std=c++20 -pthread) and run on the CPU, for tests on machines without a GPU.
//
// - __global__/__device__/__forceinline__/__launch_bounds__ vanish; __shared__ is `static`
//   (one block runs at a time, under a global lock);
// - threadIdx/blockIdx/blockDim/gridDim are thread-local;
// - tops_shim_launch runs the grid: sequentially (block by block, thread by thread) for
//   kernels without __syncthreads, or, for kernels that use shared memory, with each CUDA
//   thread of a block as a fiber (its own stack; switched by saving the registers a call
//   preserves on x86-64, by ucontext elsewhere) on the launching thread:
//   __syncthreads switches to the next fiber, and a round that has run every live fiber up to
//   its next __syncthreads (or its end) is one barrier phase. No OS thread per CUDA thread, so
//   a 256-thread block with dozens of barriers costs microseconds, not context switches.
// - __shfl_down_sync and __shfl_xor_sync (fiber launches only) are exchanges through the
//   block's barrier: each
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

#if defined(__x86_64__) && !defined(TOPS_SHIM_UCONTEXT) // -DTOPS_SHIM_UCONTEXT: the portable switch
/// A suspended fiber (or the scheduler): its saved stack pointer. x86-64 switches with
/// `tops_shim_switch` below: glibc's swapcontext makes a system call (sigprocmask) on every
/// switch, and that was about 90% of the run time of the tests that launch kernels with
/// barriers (each `__syncthreads` is two switches per CUDA thread).
struct tops_shim_fiber {
    void* sp = nullptr;
};

/// Saves the callee-saved registers, the SSE and x87 control words and the stack pointer of
/// the running code in `*from`, and resumes the code suspended in `to` (SysV x86-64:
/// `from` in rdi, `to` in rsi). No signal mask is touched: no system call.
extern "C" inline __attribute__((naked, noinline, used, visibility("hidden"))) void tops_shim_switch(void** /*from*/, void* /*to*/) {
    asm volatile(
        "pushq %rbp\n\t"
        "pushq %rbx\n\t"
        "pushq %r12\n\t"
        "pushq %r13\n\t"
        "pushq %r14\n\t"
        "pushq %r15\n\t"
        "subq $8, %rsp\n\t"
        "stmxcsr (%rsp)\n\t"
        "fnstcw 4(%rsp)\n\t"
        "movq %rsp, (%rdi)\n\t"
        "movq %rsi, %rsp\n\t"
        "ldmxcsr (%rsp)\n\t"
        "fldcw 4(%rsp)\n\t"
        "addq $8, %rsp\n\t"
        "popq %r15\n\t"
        "popq %r14\n\t"
        "popq %r13\n\t"
        "popq %r12\n\t"
        "popq %rbx\n\t"
        "popq %rbp\n\t"
        "ret\n\t");
}

/// Makes `f` start `entry` (which never returns) on `stack` at its first switch-in: a frame
/// as `tops_shim_switch` leaves it, with `entry` as the return address and the stack
/// aligned as at a function's entry.
inline void tops_shim_fiber_init(tops_shim_fiber& f, char* stack, size_t size, void (*entry)()) {
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;          // a null return address past `entry`: the end of backtraces
    *--sp = (void*)entry;     // `ret` jumps here with rsp % 16 == 8, as after a call
    for (int i = 0; i < 6; ++i) *--sp = nullptr; // rbp rbx r12 r13 r14 r15
    unsigned csr[2] = {0, 0};
    asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
    --sp;
    std::memcpy(sp, csr, sizeof csr); // the control words: the launching thread's
    f.sp = sp;
}

/// Suspends the running code in `from` and resumes `to`.
inline void tops_shim_fiber_switch(tops_shim_fiber& from, tops_shim_fiber& to) { tops_shim_switch(&from.sp, to.sp); }
#else
/// A suspended fiber (or the scheduler): a ucontext (other architectures than x86-64).
struct tops_shim_fiber {
    ucontext_t uc;
};

/// Makes `f` start `entry` (which never returns) on `stack` at its first switch-in.
inline void tops_shim_fiber_init(tops_shim_fiber& f, char* stack, size_t size, void (*entry)()) {
    std::memset(&f.uc, 0, sizeof f.uc);
    getcontext(&f.uc);
    f.uc.uc_stack.ss_sp = stack;
    f.uc.uc_stack.ss_size = size;
    f.uc.uc_link = nullptr;
    makecontext(&f.uc, entry, 0);
}

/// Suspends the running code in `from` and resumes `to`.
inline void tops_shim_fiber_switch(tops_shim_fiber& from, tops_shim_fiber& to) { swapcontext(&from.uc, &to.uc); }
#endif

/// One block's CUDA threads as fibers (arrays sized for the block, owned by the launch).
struct tops_shim_block {
    tops_shim_fiber scheduler;
    tops_shim_fiber* fibers = nullptr;
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
    tops_shim_fiber_switch(b->fibers[b->current], b->scheduler);
}

/// Every shuffle's exchange: `v` posted in the caller's slot, then the value posted by
/// thread `partner(me, n)` of the block (`me`: the caller's index in its block of `n`), or
/// the caller's own `v` when the partner is `n` or past it. `name`: the shuffle, for the
/// error of a launch without fibers.
template <class T, class P> inline T tops_shim_shuffle(const char* name, T v, P partner) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffle moves at most 8 bytes");
    tops_shim_block* b = tops_shim_current;
    if (!b) {
        std::fprintf(stderr, "shim: %s in a kernel launched without fibers\n", name);
        std::abort();
    }
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned me = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned from = partner(me, n);
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    b->exchange[me] = bits;
    __syncthreads();
    T r = v;
    if (from < n) std::memcpy(&r, &b->exchange[from], sizeof r);
    __syncthreads();
    return r;
}

/// The value of lane (own lane + delta) of the caller's warp of 32, or the caller's own value
/// when that lane is past the warp (or the block) — as the hardware's shuffle.
template <class T> inline T __shfl_down_sync(unsigned /*mask*/, T v, unsigned delta) {
    return tops_shim_shuffle("__shfl_down_sync", v, [delta](unsigned me, unsigned n) {
        return me % 32 + delta < 32 ? me + delta : n;
    });
}

/// The value of lane (own lane ^ mask) of the caller's warp of 32, or the caller's own value
/// when that lane is past the block — as the hardware's butterfly shuffle (a mask below the
/// width stays in the caller's segment, so the width changes nothing).
template <class T> inline T __shfl_xor_sync(unsigned /*mask*/, T v, int lane_mask, int /*width*/ = 32) {
    return tops_shim_shuffle("__shfl_xor_sync", v, [lane_mask](unsigned me, unsigned) {
        return me - me % 32 + ((me % 32) ^ ((unsigned)lane_mask & 31));
    });
}

/// The value of lane `src` of the caller's segment of `width` lanes (a power of two up to
/// 32) of its warp — as the hardware's indexed shuffle.
template <class T> inline T __shfl_sync(unsigned /*mask*/, T v, int src, int width = 32) {
    return tops_shim_shuffle("__shfl_sync", v, [src, width](unsigned me, unsigned) {
        const unsigned w = (unsigned)width;
        return me - me % w + ((unsigned)src % w);
    });
}

/// A fiber's body: the kernel, then marked done and back to the scheduler for good.
[[noreturn]] inline void tops_shim_fiber_main() {
    tops_shim_block* b = tops_shim_current;
    b->kernel(b->body);
    b->done[b->current] = 1;
    tops_shim_fiber_switch(b->fibers[b->current], b->scheduler);
    std::abort(); // a finished fiber is never resumed
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
    for (unsigned i = 0; i < n; ++i)
        tops_shim_fiber_init(b.fibers[i], b.stacks + (size_t)i * TOPS_SHIM_STACK, TOPS_SHIM_STACK, tops_shim_fiber_main);
    tops_shim_current = &b;
    for (unsigned live = n; live > 0;) {
        live = 0;
        for (unsigned i = 0; i < n; ++i) {
            if (b.done[i]) continue;
            b.current = i;
            threadIdx = b.index[i];
            tops_shim_fiber_switch(b.scheduler, b.fibers[i]);
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
        fibers.fibers = (tops_shim_fiber*)std::calloc(n, sizeof(tops_shim_fiber));
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
