// tensor-ops CUDA kernels behind the sparse layouts' sort and scans (kernels/cuda/src/sparse/
// sort.rs and scan.rs plan them): a tiled inclusive/exclusive scan of i64 (a tile per block,
// the tiles' totals scanned again, then added), the identity permutation, per-dim minimum and
// maximum of index rows (partials per block, finished on the host), and the two kernels of a
// stable LSD radix-sort pass of a permutation by one digit of one index row: per-tile digit
// histograms, and the stable scatter through the scanned histograms. Block sizes and items per
// thread are template arguments, written by the Rust planner (one definition of each).
// Compiled by NVRTC, and by the host C++ compiler under kernels/cuda-testing/include/shim.h.
#pragma once

/// Digits of one radix pass: 4 bits, 16 buckets.
#define TOPS_SP_RADIX 16

/// Scan of tile `blockIdx.x` (THREADS × ITEMS elements): out = inclusive (p[0] == 0) or
/// exclusive (p[0] == 1) prefix sums of in within the tile; the tile's total to sums[tile]
/// when sums is not null. ptr: out, in (may be out), sums. n = elements.
template <int THREADS, int ITEMS> TOPS_D void tops_sp_scan_tiles(const tops_sparse_args& a) {
    __shared__ long long part[THREADS];
    long long* out = (long long*)a.ptr[0];
    const long long* in = (const long long*)a.ptr[1];
    long long* sums = (long long*)a.ptr[2];
    const bool exclusive = a.p[0] != 0;
    const int t = threadIdx.x;
    const long long base = (long long)blockIdx.x * THREADS * ITEMS + (long long)t * ITEMS;
    long long v[ITEMS];
    long long total = 0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        v[k] = base + k < a.n ? in[base + k] : 0;
        total += v[k];
    }
    part[t] = total;
    __syncthreads();
    for (int off = 1; off < THREADS; off <<= 1) {
        const long long add = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += add;
        __syncthreads();
    }
    long long run = part[t] - total;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (base + k < a.n) out[base + k] = exclusive ? run : run + v[k];
        run += v[k];
    }
    if (t == THREADS - 1 && sums) sums[blockIdx.x] = part[t];
}

/// Adds offs[tile] (the exclusive scan of the tiles' totals) to every element of tile
/// `blockIdx.x`. ptr: out, offs. n = elements.
template <int THREADS, int ITEMS> TOPS_D void tops_sp_scan_add(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const long long add = ((const long long*)a.ptr[1])[blockIdx.x];
    const long long base = (long long)blockIdx.x * THREADS * ITEMS;
    for (int k = threadIdx.x; k < THREADS * ITEMS; k += THREADS)
        if (base + k < a.n) out[base + k] += add;
}

/// out[i] = i. ptr: out. n = elements.
TOPS_D void tops_sp_iota(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += (long long)gridDim.x * blockDim.x)
        out[i] = i;
}

/// Per dim d of indices [sd, nnz], this block's minimum and maximum to
/// out[(d * gridDim.x + block) * 2 + {0, 1}] (i64 max / min for an empty share). ptr: out,
/// indices. n = nnz; p: sd.
template <int THREADS> TOPS_D void tops_sp_minmax(const tops_sparse_args& a) {
    __shared__ long long lo[THREADS];
    __shared__ long long hi[THREADS];
    long long* out = (long long*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const long long nnz = a.n, sd = a.p[0];
    const int t = threadIdx.x;
    for (long long d = 0; d < sd; ++d) {
        long long l = 0x7fffffffffffffffll, h = -0x7fffffffffffffffll - 1;
        for (long long j = (long long)blockIdx.x * THREADS + t; j < nnz; j += (long long)gridDim.x * THREADS) {
            const long long x = idx[d * nnz + j];
            l = x < l ? x : l;
            h = x > h ? x : h;
        }
        lo[t] = l;
        hi[t] = h;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
            if (t < s) {
                lo[t] = lo[t + s] < lo[t] ? lo[t + s] : lo[t];
                hi[t] = hi[t + s] > hi[t] ? hi[t + s] : hi[t];
            }
            __syncthreads();
        }
        if (t == 0) {
            out[(d * gridDim.x + blockIdx.x) * 2] = lo[0];
            out[(d * gridDim.x + blockIdx.x) * 2 + 1] = hi[0];
        }
        __syncthreads();
    }
}

/// The digit of entry `p` in a pass: bits [shift, shift + 4) of key[p] - lo.
TOPS_D unsigned int tops_sp_digit(const long long* key, long long p, unsigned long long lo, long long shift) {
    return (unsigned int)((((unsigned long long)key[p] - lo) >> shift) & (TOPS_SP_RADIX - 1));
}

/// Counts the digits of this block's tile (thread t: items t*ITEMS.. in order) into
/// cnt[digit * THREADS + t].
template <int THREADS, int ITEMS>
TOPS_D void tops_sp_radix_count(const tops_sparse_args& a, unsigned int* cnt) {
    const long long* key = (const long long*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const unsigned long long lo = (unsigned long long)a.p[0];
    const int t = threadIdx.x;
    for (int d = 0; d < TOPS_SP_RADIX; ++d) cnt[d * THREADS + t] = 0;
    const long long base = (long long)blockIdx.x * THREADS * ITEMS + (long long)t * ITEMS;
    for (int k = 0; k < ITEMS; ++k)
        if (base + k < a.n) cnt[tops_sp_digit(key, perm[base + k], lo, a.p[1]) * THREADS + t] += 1;
    __syncthreads();
}

/// Radix pass, histograms: hist[digit * tiles + tile] = the tile's entries with that digit.
/// ptr: hist, key (one index row), perm (the order so far). n = nnz; p: lo, shift, tiles.
template <int THREADS, int ITEMS> TOPS_D void tops_sp_radix_hist(const tops_sparse_args& a) {
    __shared__ unsigned int cnt[TOPS_SP_RADIX * THREADS];
    tops_sp_radix_count<THREADS, ITEMS>(a, cnt);
    const int t = threadIdx.x;
    if (t < TOPS_SP_RADIX) {
        long long s = 0;
        for (int u = 0; u < THREADS; ++u) s += cnt[t * THREADS + u];
        ((long long*)a.ptr[0])[t * a.p[2] + blockIdx.x] = s;
    }
}

/// Radix pass, scatter: each entry of the tile to offs[digit * tiles + tile] (the exclusive
/// scan of the histograms, digit-major) + the entries of its digit before it in the tile —
/// earlier threads', then its own earlier items: stable. ptr: out (the new order), key,
/// perm, offs. n = nnz; p: lo, shift, tiles.
template <int THREADS, int ITEMS> TOPS_D void tops_sp_radix_scatter(const tops_sparse_args& a) {
    __shared__ unsigned int cnt[TOPS_SP_RADIX * THREADS];
    __shared__ long long start[TOPS_SP_RADIX];
    tops_sp_radix_count<THREADS, ITEMS>(a, cnt);
    const int t = threadIdx.x;
    if (t < TOPS_SP_RADIX) {
        unsigned int run = 0;
        for (int u = 0; u < THREADS; ++u) {
            const unsigned int c = cnt[t * THREADS + u];
            cnt[t * THREADS + u] = run;
            run += c;
        }
        start[t] = ((const long long*)a.ptr[3])[t * a.p[2] + blockIdx.x];
    }
    __syncthreads();
    long long* out = (long long*)a.ptr[0];
    const long long* key = (const long long*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long base = (long long)blockIdx.x * THREADS * ITEMS + (long long)t * ITEMS;
    for (int k = 0; k < ITEMS; ++k) {
        if (base + k >= a.n) break;
        const long long p = perm[base + k];
        const unsigned int d = tops_sp_digit(key, p, (unsigned long long)a.p[0], a.p[1]);
        out[start[d] + cnt[d * THREADS + t]] = p;
        cnt[d * THREADS + t] += 1;
    }
}
