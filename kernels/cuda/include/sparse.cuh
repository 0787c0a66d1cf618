// tensor-ops CUDA kernels of the sparse layouts' steps (tensor_core::registry::sparse documents
// each step; kernels/cuda/src/sparse/ plans and launches them): scatter into dense, the
// coalesce steps after the sort (segments' flags, unique indices, segment sums), to_sparse
// (nonzero flags, indices, values) and the CSR row pointers. Every kernel takes a
// `tops_sparse_args` and walks its count grid-strided. An index read from the data is checked
// before anything is addressed through it: a bad one sets the error flag `*err` (read back by
// the host, an `Err`) and writes nothing. Sums follow the CPU rows exactly: the same order and,
// for f16/bf16, the same rounding after every add. Compiled by NVRTC, and by the host C++
// compiler under kernels/cuda-testing/include/shim.h in tests.
#pragma once

/// `a + b` as the CPU rows add (`SparseElem::add`): integers wrapping, bool `or`,
/// f8/f16/bf16 through f32 rounded after each add.
template <class T> TOPS_D T tops_sp_add(T a, T b) {
    return (T)((unsigned long long)(long long)a + (unsigned long long)(long long)b);
}
template <> TOPS_D bool tops_sp_add<bool>(bool a, bool b) { return a || b; }
template <> TOPS_D float tops_sp_add<float>(float a, float b) { return a + b; }
template <> TOPS_D double tops_sp_add<double>(double a, double b) { return a + b; }
template <> TOPS_D __half tops_sp_add<__half>(__half a, __half b) {
    return __float2half_rn(__half2float(a) + __half2float(b));
}
template <> TOPS_D __nv_bfloat16 tops_sp_add<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}
template <> TOPS_D tops_f8e4m3 tops_sp_add<tops_f8e4m3>(tops_f8e4m3 a, tops_f8e4m3 b) {
    return tops_cast<tops_f8e4m3>(tops_f8_value(a) + tops_f8_value(b));
}
template <> TOPS_D tops_f8e5m2 tops_sp_add<tops_f8e5m2>(tops_f8e5m2 a, tops_f8e5m2 b) {
    return tops_cast<tops_f8e5m2>(tops_f8_value(a) + tops_f8_value(b));
}

/// Compare-and-swap of a 32-bit word: the old value.
TOPS_D unsigned int tops_sp_cas32(unsigned int* p, unsigned int expected, unsigned int desired) {
#ifdef __CUDA_ARCH__
    return atomicCAS(p, expected, desired);
#else
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
#endif
}

/// The low bits of a 1- or 2-byte integer element, zero-extended.
TOPS_D unsigned int tops_sp_bits(bool x) { return x ? 1u : 0u; }
TOPS_D unsigned int tops_sp_bits(unsigned char x) { return x; }
TOPS_D unsigned int tops_sp_bits(signed char x) { return (unsigned char)x; }
TOPS_D unsigned int tops_sp_bits(short x) { return (unsigned short)x; }

/// `*p = tops_sp_add(*p, v)` atomically, for the integer and bool dtypes (whose sums do not
/// depend on the order): the native atomicAdd for 32/64-bit integers, a compare-and-swap
/// loop on the aligned 32-bit word holding the element for 1/2-byte ones.
template <class T> TOPS_D void tops_sp_atomic_add(T* p, T v) {
    unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ull);
    const unsigned int shift = (unsigned int)((unsigned long long)p & 3ull) * 8u;
    const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *(volatile unsigned int*)word;
    for (;;) {
        const T cur = (T)((old & mask) >> shift);
        const unsigned int next = (old & ~mask) | (tops_sp_bits(tops_sp_add(cur, v)) << shift);
        const unsigned int seen = tops_sp_cas32(word, old, next);
        if (seen == old) return;
        old = seen;
    }
}
template <> TOPS_D void tops_sp_atomic_add<int>(int* p, int v) {
#ifdef __CUDA_ARCH__
    atomicAdd((unsigned int*)p, (unsigned int)v);
#else
    __atomic_fetch_add((unsigned int*)p, (unsigned int)v, __ATOMIC_SEQ_CST);
#endif
}
template <> TOPS_D void tops_sp_atomic_add<long long>(long long* p, long long v) {
#ifdef __CUDA_ARCH__
    atomicAdd((unsigned long long*)p, (unsigned long long)v);
#else
    __atomic_fetch_add((unsigned long long*)p, (unsigned long long)v, __ATOMIC_SEQ_CST);
#endif
}

/// Whether index columns `x` and `y` of `idx` (`[sd, nnz]`) are equal.
TOPS_D bool tops_sp_same_column(const long long* idx, long long sd, long long nnz, long long x, long long y) {
    for (long long d = 0; d < sd; ++d)
        if (idx[d * nnz + x] != idx[d * nnz + y]) return false;
    return true;
}

/// The row-major position of index column `j` in the sparse sizes `sizes[0..sd]`, or -1
/// when an index is outside them.
TOPS_D long long tops_sp_position(const long long* idx, long long sd, long long nnz, long long j,
                                  const long long* sizes) {
    long long pos = 0;
    for (long long d = 0; d < sd; ++d) {
        const long long i = idx[d * nnz + j];
        if (i < 0 || i >= sizes[d]) return -1;
        pos = pos * sizes[d] + i;
    }
    return pos;
}

#define TOPS_SP_GRID_STRIDE(i, count)                                                              \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (count);             \
         i += (long long)gridDim.x * blockDim.x)

/// to_dense's first step: zeros the output, viewed as raw words of its element size.
/// ptr: out; n = elements.
template <class T> TOPS_D void tops_sp_zero(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    TOPS_SP_GRID_STRIDE(i, a.n) { out[i] = (T)0; }
}

/// to_dense of entries with distinct positions (coalesced): out[pos(j)] = out[pos(j)] + v[j],
/// a thread per element. ptr: out, indices [sd, nnz], values [nnz, row], sizes [sd], err.
/// n = nnz * row; p: sd, nnz, row.
template <class T> TOPS_D void tops_sp_scatter_unique(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const T* vals = (const T*)a.ptr[2];
    const long long* sizes = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long sd = a.p[0], nnz = a.p[1], row = a.p[2];
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        const long long pos = tops_sp_position(idx, sd, nnz, j, sizes);
        if (pos < 0) {
            *err = 1;
            continue;
        }
        out[pos * row + e] = tops_sp_add(out[pos * row + e], vals[t]);
    }
}

/// to_dense with duplicates for the integer and bool dtypes: each element added atomically
/// (their sums do not depend on the order). Operands as `tops_sp_scatter_unique`.
template <class T> TOPS_D void tops_sp_scatter_atomic(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const T* vals = (const T*)a.ptr[2];
    const long long* sizes = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long sd = a.p[0], nnz = a.p[1], row = a.p[2];
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        const long long pos = tops_sp_position(idx, sd, nnz, j, sizes);
        if (pos < 0) {
            *err = 1;
            continue;
        }
        tops_sp_atomic_add(out + pos * row + e, vals[t]);
    }
}

/// to_dense with duplicates for the float dtypes, whose sums depend on the order: over the
/// stable sorted order `perm` (ptr[5]), the first entry of each run of equal columns adds
/// the run's values in entry order, as the CPU adds them. Operands as
/// `tops_sp_scatter_unique`, plus perm.
template <class T> TOPS_D void tops_sp_scatter_runs(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const T* vals = (const T*)a.ptr[2];
    const long long* sizes = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long* perm = (const long long*)a.ptr[5];
    const long long sd = a.p[0], nnz = a.p[1], row = a.p[2];
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        const long long first = perm[j];
        if (j > 0 && tops_sp_same_column(idx, sd, nnz, perm[j - 1], first)) continue;
        const long long pos = tops_sp_position(idx, sd, nnz, first, sizes);
        if (pos < 0) {
            *err = 1;
            continue;
        }
        T acc = out[pos * row + e];
        for (long long k = j; k < nnz && (k == j || tops_sp_same_column(idx, sd, nnz, perm[k], first)); ++k)
            acc = tops_sp_add(acc, vals[perm[k] * row + e]);
        out[pos * row + e] = acc;
    }
}

/// coalesce, segments' flags: 1 where a sorted column differs from the one before (0 for the
/// first); an inclusive scan then numbers the segments. ptr: out [nnz], indices, perm.
/// n = nnz; p: sd.
TOPS_D void tops_sp_segment_flags(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long sd = a.p[0], nnz = a.n;
    TOPS_SP_GRID_STRIDE(j, nnz) {
        out[j] = j > 0 && !tops_sp_same_column(idx, sd, nnz, perm[j - 1], perm[j]) ? 1 : 0;
    }
}

/// Whether sorted entry `j` starts a segment; sets `*err` (and answers false) when its
/// segment number is outside 0..nseg.
TOPS_D bool tops_sp_segment_start(const long long* seg, long long j, long long nseg, long long* err) {
    if (j > 0 && seg[j] == seg[j - 1]) return false;
    if (seg[j] < 0 || seg[j] >= nseg) {
        *err = 1;
        return false;
    }
    return true;
}

/// coalesce, unique indices: each segment's column from its first sorted entry. ptr: out
/// [sd, nseg], indices, perm, segments, err. n = nnz; p: sd, nseg.
TOPS_D void tops_sp_unique_indices(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const long long* idx = (const long long*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long* seg = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long sd = a.p[0], nseg = a.p[1], nnz = a.n;
    TOPS_SP_GRID_STRIDE(j, nnz) {
        if (!tops_sp_segment_start(seg, j, nseg, err)) continue;
        for (long long d = 0; d < sd; ++d) out[d * nseg + seg[j]] = idx[d * nnz + perm[j]];
    }
}

/// coalesce, segment sums: the first sorted entry of each segment adds the segment's values
/// in sorted order into the zeroed output, a thread per (entry, dense element). ptr: out
/// [nseg, row], values [nnz, row], perm, segments, err. n = nnz * row; p: nnz, nseg, row.
template <class T> TOPS_D void tops_sp_segment_sum(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const T* vals = (const T*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long* seg = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long nnz = a.p[0], nseg = a.p[1], row = a.p[2];
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        if (!tops_sp_segment_start(seg, j, nseg, err)) continue;
        const long long s = seg[j];
        T acc = out[s * row + e];
        for (long long k = j; k < nnz && seg[k] == s; ++k) acc = tops_sp_add(acc, vals[perm[k] * row + e]);
        out[s * row + e] = acc;
    }
}

/// to_sparse, nonzero flags: 1 where the dense row of a position holds a nonzero element
/// (NaN counts, -0.0 does not); an inclusive scan then gives the counts. ptr: out
/// [positions], dense. n = positions; p: row.
template <class T> TOPS_D void tops_sp_dense_flags(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const T* dense = (const T*)a.ptr[1];
    const long long row = a.p[0];
    TOPS_SP_GRID_STRIDE(p, a.n) {
        long long nz = 0;
        for (long long e = 0; e < row && !nz; ++e) nz = tops_cast<bool>(dense[p * row + e]) ? 1 : 0;
        out[p] = nz;
    }
}

/// The entry number of position `p` when it is specified (its count rose), else -1; sets
/// `*err` for an entry number outside 0..nnz.
TOPS_D long long tops_sp_entry(const long long* counts, long long p, long long nnz, long long* err) {
    const long long before = p > 0 ? counts[p - 1] : 0;
    if (counts[p] == before) return -1;
    if (before < 0 || before >= nnz) {
        *err = 1;
        return -1;
    }
    return before;
}

/// to_sparse, indices: the multi-index of each specified position. ptr: out [sd, nnz],
/// counts, sizes [sd], err. n = positions; p: sd, nnz.
TOPS_D void tops_sp_dense_indices(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const long long* counts = (const long long*)a.ptr[1];
    const long long* sizes = (const long long*)a.ptr[2];
    long long* err = (long long*)a.ptr[3];
    const long long sd = a.p[0], nnz = a.p[1];
    TOPS_SP_GRID_STRIDE(p, a.n) {
        const long long k = tops_sp_entry(counts, p, nnz, err);
        if (k < 0) continue;
        long long rest = p;
        for (long long d = sd - 1; d >= 0; --d) {
            out[d * nnz + k] = rest % sizes[d];
            rest /= sizes[d];
        }
    }
}

/// to_sparse, values: the dense row of each specified position, copied as raw `B` words,
/// a thread per (position, element). ptr: out [nnz, row], counts, dense, err.
/// n = positions * row; p: nnz, row.
template <class B> TOPS_D void tops_sp_dense_values(const tops_sparse_args& a) {
    B* out = (B*)a.ptr[0];
    const long long* counts = (const long long*)a.ptr[1];
    const B* dense = (const B*)a.ptr[2];
    long long* err = (long long*)a.ptr[3];
    const long long nnz = a.p[0], row = a.p[1];
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long p = t / row, e = t - p * row;
        const long long k = tops_sp_entry(counts, p, nnz, err);
        if (k >= 0) out[k * row + e] = dense[t];
    }
}

/// COO → CSR: crow[r] = the number of sorted rows below r (a binary search per r); rows
/// that are not sorted set `*err`. ptr: out [nrows + 1], rows [nnz], err. n = nrows + 1;
/// p: nnz.
TOPS_D void tops_sp_rows_to_crow(const tops_sparse_args& a) {
    long long* crow = (long long*)a.ptr[0];
    const long long* rows = (const long long*)a.ptr[1];
    long long* err = (long long*)a.ptr[2];
    const long long nnz = a.p[0];
    const long long count = a.n > nnz ? a.n : nnz;
    TOPS_SP_GRID_STRIDE(i, count) {
        if (i + 1 < nnz && rows[i + 1] < rows[i]) *err = 1;
        if (i >= a.n) continue;
        long long lo = 0, hi = nnz;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            if (rows[mid] < i) lo = mid + 1;
            else hi = mid;
        }
        crow[i] = lo;
    }
}

/// CSR → COO: the row of each entry, the last r with crow[r] <= j (a binary search per
/// entry); crow_indices that do not rise from 0 to nnz set `*err`. ptr: out [nnz], crow
/// [nrows + 1], err. n = nnz; p: nrows.
TOPS_D void tops_sp_crow_to_rows(const tops_sparse_args& a) {
    long long* rows = (long long*)a.ptr[0];
    const long long* crow = (const long long*)a.ptr[1];
    long long* err = (long long*)a.ptr[2];
    const long long nnz = a.n, nrows = a.p[0];
    const long long count = nnz > nrows + 1 ? nnz : nrows + 1;
    TOPS_SP_GRID_STRIDE(i, count) {
        if (i <= nrows) {
            const bool bad = (i == 0 && crow[0] != 0) || (i == nrows && crow[i] != nnz) ||
                             (i < nrows && crow[i + 1] < crow[i]);
            if (bad) *err = 1;
        }
        if (i >= nnz) continue;
        long long lo = 0, hi = nrows + 1;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            if (crow[mid] <= i) lo = mid + 1;
            else hi = mid;
        }
        rows[i] = lo - 1;
    }
}
