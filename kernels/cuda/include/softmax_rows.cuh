// tensor-ops CUDA softmax / log_softmax of dense rows: the fused kernel behind `softmax` and
// `log_softmax` along the last dim of a dense float tensor on CUDA (f16/bf16 computed in
// float, rounded once). Needs reduce.cuh
// (tops_red_logsumexp, tops_warp_combine) in front of it. Compiled by NVRTC, and by the
// host C++ compiler under kernels/cuda-testing/include/shim.h in tests.
#pragma once

/// Softmax (`LOG` false: e^(x − M) · (1 / S)) or log_softmax (`LOG`: (x − M) − ln S) of the
/// dense rows of `a.ptr[1]` (rows of `a.params[0]` elements, `a.n` elements in all) into
/// `a.ptr[0]`, which may be the same memory (each element is read, then written, by one
/// thread, after the block's barrier). A block per row (grid-strided): the row's maximum M
/// and S = Σ e^(x − M) folded by `tops_red_logsumexp` in each thread, combined by warp
/// shuffles and one shared-memory step; then each thread reads its own elements again —
/// the block has just read them, so from L1/L2 rather than DRAM — and writes them. A row
/// holding NaN or +∞ comes out all NaN and a row of −∞ NaN, as the max-subtracted form
/// gives on the CPU. `T`: the storage type; `C`: the compute type.
template <class T, class C, bool LOG> TOPS_D void tops_softmax_rows(const tops_contig_args& a) {
    typedef tops_red_logsumexp<C> R;
    typedef typename R::acc_t A;
    const R red(a.params);
    __shared__ A part[32];
    __shared__ C row_stat[2];
    const long long n = (long long)a.params[0];
    const long long rows = n > 0 ? (long long)(a.n / (unsigned long long)n) : 0;
    const T* x = (const T*)a.ptr[1];
    T* y = (T*)a.ptr[0];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nthreads = blockDim.x, nwarps = (nthreads + 31) >> 5;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        A acc = red.identity();
        for (long long k = tid; k < n; k += nthreads) acc = red.fold(acc, xr[k], k);
        // Every thread takes part in both exchange rounds (uniform control flow).
        acc = tops_warp_combine(red, acc);
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        acc = lane < nwarps ? part[lane] : red.identity();
        acc = tops_warp_combine(red, acc);
        if (tid == 0) {
            row_stat[0] = acc.m;
            row_stat[1] = LOG ? (C)log(acc.s) : (C)1 / acc.s;
        }
        __syncthreads();
        // M − M: 0 for a finite maximum, NaN for +∞ (every output of such a row is NaN).
        const C m = row_stat[0], c = row_stat[1], nan_if_inf = m - m;
        for (long long k = tid; k < n; k += nthreads) {
            const C v = (tops_cast<C>(xr[k]) - m) + nan_if_inf;
            yr[k] = tops_cast<T>(LOG ? v - c : tops_red_exp(v) * c);
        }
        __syncthreads(); // part and row_stat serve the next row
    }
}
