// Included in front of every program the stand-in's NVRTC compiles: the host shim (so the
// CUDA C builds and runs on the CPU) and the list of device pointers of each kernel argument
// block of args.cuh, so the stand-in's cuLaunchKernel can check that each one addresses a
// live device allocation. Test-only.
#pragma once
#include "shim.h"

/// Appends `p` (when non-null) to `out`; counts it even past `cap`.
inline void tops_standin_push(const void* p, unsigned long long* out, int cap, int& n) {
    if (!p) return;
    if (n < cap) out[n] = (unsigned long long)(uintptr_t)p;
    ++n;
}

/// The device pointers of an argument block, told apart by its fields (the blocks of
/// args.cuh: `ptr[]` operands, or `out`/`in`/`work`, or `dst`/`src`, or a fused reduction's
/// `r` and `m`); -1 for a block of another shape (no pointer check).
template <class A> inline int tops_standin_pointers(const A& a, unsigned long long* out, int cap) {
    int n = 0;
    if constexpr (requires { a.r.work; a.m.ptr[0]; }) {
        tops_standin_push(a.r.out, out, cap, n);
        tops_standin_push(a.r.in, out, cap, n);
        tops_standin_push(a.r.work, out, cap, n);
        for (auto p : a.m.ptr) tops_standin_push(p, out, cap, n);
    } else if constexpr (requires { a.ptr[0]; }) {
        for (auto p : a.ptr) tops_standin_push(p, out, cap, n);
    } else if constexpr (requires { a.out; a.in; a.work; }) {
        tops_standin_push(a.out, out, cap, n);
        tops_standin_push(a.in, out, cap, n);
        tops_standin_push(a.work, out, cap, n);
    } else if constexpr (requires { a.dst; a.src; }) {
        tops_standin_push(a.dst, out, cap, n);
        tops_standin_push(a.src, out, cap, n);
    } else {
        return -1;
    }
    return n;
}
