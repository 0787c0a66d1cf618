// tensor-ops CUDA softmax / log_softmax of dense rows: the fused kernels behind `softmax` and
// `log_softmax` along the last dim of a dense float tensor on CUDA (f16/bf16 computed in
// float, rounded once). Needs reduce.cuh (tops_shfl_down, tops_max_nan, tops_bound,
// tops_red_exp) in front of it. Compiled by NVRTC, and by the
// host C++ compiler under kernels/cuda-testing/include/shim.h in tests.
#pragma once

// The two forms the planner picks from (kernels/cuda/src/softmax_rows.rs): a row held in
// registers by a group of LANES threads (rows of up to 1024·NV·VEC elements: one DRAM read,
// one write), and a block per row streaming the row three times (max, Σ, output: the
// second and third reads find the row in L2). Both load and store `VEC` elements at a time
// (16 bytes; VEC is 1 when the rows are not 16-byte aligned).

TOPS_D float tops_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
TOPS_D double tops_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }

/// The NaN-propagating maximum (MAX) or the sum of `v` over a group of LANES threads (a power
/// of two; the groups tile the block), returned to every thread of the group. Groups within
/// a warp exchange by butterfly shuffles (every lane combines the same two partials at each
/// step, in either order: the same sum on every lane), with no barrier; wider groups through
/// `slots` (shared memory of at least LANES / 32 entries a group) and two barriers. Every
/// thread of the block calls it.
template <int LANES, bool MAX, class C> TOPS_D C tops_softmax_group(C v, C* slots) {
    const int tid = threadIdx.x;
    if (LANES <= 32) {
#pragma unroll
        for (int d = LANES / 2; d > 0; d >>= 1) {
            const C o = tops_shfl_xor(v, d);
            v = MAX ? tops_max_nan(v, o) : v + o;
        }
        return v;
    } else {
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) {
            const C o = tops_shfl_down(v, d);
            v = MAX ? tops_max_nan(v, o) : v + o;
        }
        if ((tid & 31) == 0) slots[tid >> 5] = v;
        __syncthreads();
        // the group's warps' slots, in order
        const C* own = slots + (tid / LANES) * (LANES / 32);
        v = own[0];
        for (int w = 1; w < LANES / 32; ++w) v = MAX ? tops_max_nan(v, own[w]) : v + own[w];
        __syncthreads(); // the slots serve the next exchange
        return v;
    }
}

/// Softmax (`LOG` false) or log_softmax of the dense rows of `a.ptr[1]` (rows of
/// `a.params[0]` elements, a multiple of VEC; `a.n` in all) into `a.ptr[0]` (which may be the
/// same memory): each group of LANES threads (blockDim.x / LANES groups a block, grid-strided
/// over the rows) loads its row into registers, NV vectors of VEC elements a thread; the
/// row's maximum M, then Σ e^(x − M) are exchanged in the group, and the outputs are
/// written from the registers. A row holding NaN or +∞ comes out all NaN and a row of −∞
/// NaN, as the max-subtracted form gives on the CPU.
template <class T, class C, bool LOG, int VEC, int NV, int LANES>
TOPS_D void tops_softmax_rows_regs(const tops_contig_args& a) {
    __shared__ C slots[128];
    const long long n = (long long)a.params[0];
    const long long rows = n > 0 ? (long long)(a.n / (unsigned long long)n) : 0;
    const T* x = (const T*)a.ptr[1];
    T* y = (T*)a.ptr[0];
    const int tid = threadIdx.x, q = tid & (LANES - 1), g = tid / LANES;
    const long long per_block = blockDim.x / LANES;
    const C ninf = tops_bound<C>::lowest();
    const long long stride = (long long)gridDim.x * per_block;
    // Rows of one vector a lane (NV = 1: the short rows, which a block meets many times
    // over): the next row's vector is loaded before this row is reduced and written, so a
    // lane has a load in flight through the reductions (its row's values are only one).
    const long long e1 = (long long)q * VEC;
    tops_pack<T, VEC> ahead{};
    bool ahead_ok = false;
    if constexpr (NV == 1) {
        const long long r0 = (long long)blockIdx.x * per_block + g;
        ahead_ok = r0 < rows && e1 < n;
        if (ahead_ok) ahead = *(const tops_pack<T, VEC>*)(x + r0 * n + e1);
    }
    for (long long base = (long long)blockIdx.x * per_block; base < rows; base += stride) {
        const long long r = base + g;
        const bool active = r < rows;
        C v[NV * VEC];
        C m = ninf;
        if constexpr (NV == 1) {
            const tops_pack<T, VEC> p = ahead;
            const bool ok = ahead_ok;
            const long long rn = r + stride;
            ahead_ok = rn < rows && e1 < n;
            if (ahead_ok) ahead = *(const tops_pack<T, VEC>*)(x + rn * n + e1);
#pragma unroll
            for (int k = 0; k < VEC; ++k) v[k] = ok ? tops_cast<C>(p.v[k]) : ninf;
        } else {
#pragma unroll
            for (int j = 0; j < NV; ++j) {
                const long long e = ((long long)j * LANES + q) * VEC;
                if (active && e < n) {
                    const tops_pack<T, VEC> p = *(const tops_pack<T, VEC>*)(x + r * n + e);
#pragma unroll
                    for (int k = 0; k < VEC; ++k) v[j * VEC + k] = tops_cast<C>(p.v[k]);
                } else {
#pragma unroll
                    for (int k = 0; k < VEC; ++k) v[j * VEC + k] = ninf;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < NV * VEC; ++i) m = tops_max_nan(m, v[i]);
        m = tops_softmax_group<LANES, true>(m, slots);
        // M − M: 0 for a finite maximum, NaN for ±∞ or NaN (every output of the row is NaN).
        const C nan_if_inf = m - m;
        C s = (C)0;
#pragma unroll
        for (int i = 0; i < NV * VEC; ++i) {
            const C t = (v[i] - m) + nan_if_inf;
            const C e = tops_red_exp(t); // 0 for the padding (−∞) of a finite row
            s += e;
            v[i] = LOG ? t : e;
        }
        s = tops_softmax_group<LANES, false>(s, slots);
        const C c = LOG ? (C)log(s) : (C)1 / s;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const long long e = ((long long)j * LANES + q) * VEC;
            if (active && e < n) {
                tops_pack<T, VEC> p;
#pragma unroll
                for (int k = 0; k < VEC; ++k) p.v[k] = tops_cast<T>(LOG ? v[j * VEC + k] - c : v[j * VEC + k] * c);
                *(tops_pack<T, VEC>*)(y + r * n + e) = p;
            }
        }
    }
}

/// The maximum (MAX) or sum of `v` over the block (blockDim.x a multiple of 32, at most
/// 1024), returned to every thread; `slots`: 32 shared entries.
template <bool MAX, class C> TOPS_D C tops_softmax_block(C v, C* slots) {
    const int tid = threadIdx.x, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        const C o = tops_shfl_down(v, d);
        v = MAX ? tops_max_nan(v, o) : v + o;
    }
    if ((tid & 31) == 0) slots[tid >> 5] = v;
    __syncthreads();
    v = slots[0];
    for (int w = 1; w < nwarps; ++w) v = MAX ? tops_max_nan(v, slots[w]) : v + slots[w];
    __syncthreads();
    return v;
}

/// Softmax / log_softmax of rows too long for registers: a block per row (grid-strided),
/// reading the row three times in VEC-element vectors — its maximum, Σ e^(x − M), then the
/// outputs. The row (at most `softmax_rows::MAX_ROW` elements) is read from DRAM once and
/// found in L2 the other two times. Same results for NaN and ±∞ as the register form.
template <class T, class C, bool LOG, int VEC> TOPS_D void tops_softmax_rows_stream(const tops_contig_args& a) {
    __shared__ C slots[32];
    typedef tops_pack<T, VEC> P;
    // vectors a thread loads before it uses them (fewer for f64, whose exp needs registers)
    const int U = sizeof(C) == 8 ? 1 : 4;
    const long long n = (long long)a.params[0];
    const long long rows = n > 0 ? (long long)(a.n / (unsigned long long)n) : 0;
    const long long nv = n / VEC;
    const long long step = blockDim.x;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const P* xr = (const P*)((const T*)a.ptr[1] + r * n);
        P* yr = (P*)((T*)a.ptr[0] + r * n);
        C m = tops_bound<C>::lowest();
        for (long long i0 = threadIdx.x; i0 < nv; i0 += step * U) {
            P p[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i0 + u * step < nv) p[u] = xr[i0 + u * step];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i0 + u * step < nv)
#pragma unroll
                    for (int k = 0; k < VEC; ++k) m = tops_max_nan(m, tops_cast<C>(p[u].v[k]));
        }
        m = tops_softmax_block<true>(m, slots);
        const C nan_if_inf = m - m;
        C s = (C)0;
        for (long long i0 = threadIdx.x; i0 < nv; i0 += step * U) {
            P p[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i0 + u * step < nv) p[u] = xr[i0 + u * step];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i0 + u * step < nv)
#pragma unroll
                    for (int k = 0; k < VEC; ++k) s += tops_red_exp((tops_cast<C>(p[u].v[k]) - m) + nan_if_inf);
        }
        s = tops_softmax_block<false>(s, slots);
        const C c = LOG ? (C)log(s) : (C)1 / s;
        for (long long i0 = threadIdx.x; i0 < nv; i0 += step * U) {
            P p[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (i0 + u * step < nv) p[u] = xr[i0 + u * step];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (i0 + u * step < nv) {
                    P o;
#pragma unroll
                    for (int k = 0; k < VEC; ++k) {
                        const C t = (tops_cast<C>(p[u].v[k]) - m) + nan_if_inf;
                        o.v[k] = tops_cast<T>(LOG ? t - c : tops_red_exp(t) * c);
                    }
                    yr[i0 + u * step] = o;
                }
            }
        }
    }
}
