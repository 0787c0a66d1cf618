// tensor-ops CUDA kernels of the sparse layouts' steps behind the ops on sparse tensors
// (tensor_core::registry::sparse documents each step; kernels/cuda/src/sparse/gather.rs,
// segment.rs and spmm.rs plan and launch them): where index columns sit in a coalesced
// pattern, rows gathered by position or by index column (binary maps), each segment's
// max/min (amax/amin), softmax, and the CSR × dense product (spmm/spmv). Built on
// sparse.cuh (its grid-stride loop and segment starts). Every kernel takes a
// `tops_sparse_args`; an index, position or permutation entry read from the data is checked
// before anything is addressed through it: a bad one sets the error flag `*err` (read back
// by the host, an `Err`) and writes nothing there. Results follow the CPU rows
// (kernels/cpu/src/sparse/lookup.rs, segment.rs, spmm.rs) exactly: the same comparisons, NaN
// rules and arithmetic in the same order. Compiled by NVRTC, and by the host C++ compiler
// under kernels/cuda-testing/include/shim.h in tests.
#pragma once

/// Row-major order of column `t` of `table` (`[sd, m]`) against column `q` of `qry`
/// (`[sd, n]`): -1, 0 or 1.
TOPS_D int tops_sp_cmp_columns(const long long* table, long long m, long long t, const long long* qry, long long n,
                               long long q, long long sd) {
    for (long long d = 0; d < sd; ++d) {
        const long long a = table[d * m + t], b = qry[d * n + q];
        if (a != b) return a < b ? -1 : 1;
    }
    return 0;
}

/// sparse_coo_lookup: each query column's one-based column number in the sorted, unique
/// table, 0 when absent (a binary search per query). ptr: out [n], table [sd, m], queries
/// [sd, n]. n = queries; p: sd, m.
TOPS_D void tops_sp_lookup(const tops_sparse_args& a) {
    long long* out = (long long*)a.ptr[0];
    const long long* table = (const long long*)a.ptr[1];
    const long long* qry = (const long long*)a.ptr[2];
    const long long sd = a.p[0], m = a.p[1], n = a.n;
    TOPS_SP_GRID_STRIDE(q, n) {
        long long lo = 0, hi = m;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            if (tops_sp_cmp_columns(table, m, mid, qry, n, q, sd) < 0) lo = mid + 1;
            else hi = mid;
        }
        out[q] = lo < m && tops_sp_cmp_columns(table, m, lo, qry, n, q, sd) == 0 ? lo + 1 : 0;
    }
}

/// sparse_gather_rows: out[j] = source[positions[j] - base], zeros where positions[j] <
/// base, as raw `B` words, a thread per (row, element); a row of 0 elements still checks its
/// position (one thread per row). A position past the source's rows sets `*err`. ptr: out
/// [n, row], source [m, row], positions [n], err. n = n * max(row, 1); p: m, row, base.
template <class B> TOPS_D void tops_sp_gather_rows(const tops_sparse_args& a) {
    B* out = (B*)a.ptr[0];
    const B* src = (const B*)a.ptr[1];
    const long long* pos = (const long long*)a.ptr[2];
    long long* err = (long long*)a.ptr[3];
    const long long m = a.p[0], row = a.p[1], base = a.p[2];
    const long long width = row > 0 ? row : 1;
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / width, e = t - j * width;
        const long long at = pos[j];
        if (at < base) {
            if (e < row) out[j * row + e] = (B)0;
            continue;
        }
        // wrapping, as the CPU's `wrapping_sub`: no signed overflow
        const unsigned long long p = (unsigned long long)at - (unsigned long long)base;
        if (p >= (unsigned long long)m) {
            *err = 1;
            continue;
        }
        if (e < row) out[j * row + e] = src[(long long)p * row + e];
    }
}

/// sparse_dense_gather: the dense slice at each index column, as raw `B` words, a thread
/// per (column, element) (one per column when the slices are empty, to check its indices).
/// An index outside its size sets `*err`. ptr: out [n, row], dense [*sizes, row], indices
/// [sd, n], sizes [sd], err. n = n * max(row, 1); p: sd, ncols, row.
template <class B> TOPS_D void tops_sp_dense_gather(const tops_sparse_args& a) {
    B* out = (B*)a.ptr[0];
    const B* dense = (const B*)a.ptr[1];
    const long long* idx = (const long long*)a.ptr[2];
    const long long* sizes = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long sd = a.p[0], n = a.p[1], row = a.p[2];
    const long long width = row > 0 ? row : 1;
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / width, e = t - j * width;
        const long long p = tops_sp_position(idx, sd, n, j, sizes);
        if (p < 0) {
            *err = 1;
            continue;
        }
        if (e < row) out[j * row + e] = dense[p * row + e];
    }
}

/// Whether `x` is NaN (never for integers and bool).
template <class T> TOPS_D bool tops_sp_nan(T x) { return x != x; }
template <> TOPS_D bool tops_sp_nan<__half>(__half x) { return tops_sp_nan(__half2float(x)); }
template <> TOPS_D bool tops_sp_nan<__nv_bfloat16>(__nv_bfloat16 x) { return tops_sp_nan(__bfloat162float(x)); }
template <> TOPS_D bool tops_sp_nan<tops_f8e4m3>(tops_f8e4m3 x) { return tops_sp_nan(tops_f8_value(x)); }
template <> TOPS_D bool tops_sp_nan<tops_f8e5m2>(tops_f8e5m2 x) { return tops_sp_nan(tops_f8_value(x)); }

/// `b > a` (`max`) or `b < a`, as the values compare (f16/bf16 through f32: exact).
template <class T> TOPS_D bool tops_sp_beats(T b, T a, bool max) { return max ? b > a : b < a; }
template <> TOPS_D bool tops_sp_beats<__half>(__half b, __half a, bool max) {
    return tops_sp_beats(__half2float(b), __half2float(a), max);
}
template <> TOPS_D bool tops_sp_beats<__nv_bfloat16>(__nv_bfloat16 b, __nv_bfloat16 a, bool max) {
    return tops_sp_beats(__bfloat162float(b), __bfloat162float(a), max);
}
template <> TOPS_D bool tops_sp_beats<tops_f8e4m3>(tops_f8e4m3 b, tops_f8e4m3 a, bool max) {
    return tops_sp_beats(tops_f8_value(b), tops_f8_value(a), max);
}
template <> TOPS_D bool tops_sp_beats<tops_f8e5m2>(tops_f8e5m2 b, tops_f8e5m2 a, bool max) {
    return tops_sp_beats(tops_f8_value(b), tops_f8_value(a), max);
}

/// `a` or `b`, whichever is greater (`max`) or less; NaN propagates (the first NaN met), as
/// the CPU's `pick`.
template <class T> TOPS_D T tops_sp_pick(T a, T b, bool max) {
    const bool a_nan = tops_sp_nan(a), b_nan = tops_sp_nan(b);
    return a_nan || (!b_nan && !tops_sp_beats(b, a, max)) ? a : b;
}

/// Sorted entry `k`'s entry number, or -1 (setting `*err`) when it is outside 0..nnz.
TOPS_D long long tops_sp_perm_at(const long long* perm, long long k, long long nnz, long long* err) {
    const long long s = perm[k];
    if (s < 0 || s >= nnz) {
        *err = 1;
        return -1;
    }
    return s;
}

/// sparse_segment_extreme: the first sorted entry of each segment takes the segment's max
/// (`kind` 0) or min over its values in sorted order, then over a zero when the segment has
/// fewer than `group` entries; a thread per (entry, dense element). ptr: out [nseg, row],
/// values [nnz, row], perm, segments, err. n = nnz * row; p: nnz, nseg, row, kind, group.
template <class T> TOPS_D void tops_sp_segment_extreme(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const T* vals = (const T*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long* seg = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long nnz = a.p[0], nseg = a.p[1], row = a.p[2], group = a.p[4];
    const bool max = a.p[3] == 0;
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        if (!tops_sp_segment_start(seg, j, nseg, err)) continue;
        const long long s = seg[j];
        long long first = tops_sp_perm_at(perm, j, nnz, err);
        if (first < 0) continue;
        T acc = vals[first * row + e];
        long long k = j + 1;
        for (; k < nnz && seg[k] == s; ++k) {
            const long long src = tops_sp_perm_at(perm, k, nnz, err);
            if (src < 0) break;
            acc = tops_sp_pick(acc, vals[src * row + e], max);
        }
        if (k - j < group) acc = tops_sp_pick(acc, tops_zero<T>(), max);
        out[s * row + e] = acc;
    }
}

/// An f64 result stored as `T` the way the CPU rows store it (`Element::cast`, i.e. the
/// `half` crate's `from_f64`): f32 and f64 rounded once; f16 through f32 (the conversion of
/// an x86 host with F16C: two roundings); bf16 rounded to nearest-even from the f64 with its
/// low 32 bits dropped (`half`'s `bf16::from_f64`). Not `__double2half`/`__double2bfloat16`,
/// which round once and would differ from the CPU near halfway points.
template <class T> TOPS_D T tops_sp_store_f64(double x) { return tops_cast<T>(x); }
template <> TOPS_D __half tops_sp_store_f64<__half>(double x) { return __float2half_rn((float)x); }
template <> TOPS_D __nv_bfloat16 tops_sp_store_f64<__nv_bfloat16>(double x) {
#ifdef __CUDA_ARCH__
    const unsigned long long u = (unsigned long long)__double_as_longlong(x);
#else
    unsigned long long u;
    __builtin_memcpy(&u, &x, sizeof u);
#endif
    const unsigned int hi = (unsigned int)(u >> 32); // sign, 11 exponent bits, 20 mantissa bits
    const unsigned int sign = (hi >> 16) & 0x8000u;
    const int exp = (int)((hi >> 20) & 0x7ffu);
    const unsigned int man = hi & 0xfffffu;
    unsigned int r;
    if (exp == 0x7ff) {
        const bool nan = man != 0 || (unsigned int)u != 0;
        r = sign | 0x7f80u | (nan ? 0x40u | (man >> 13) : 0u);
    } else {
        const int e = exp - 1023 + 127; // the bf16 biased exponent
        if (e >= 0xff) {
            r = sign | 0x7f80u;
        } else {
            // the significand with its hidden bit, shifted down to 7 (normal) or fewer bits
            const unsigned int m = man | 0x100000u;
            const int shift = e > 0 ? 13 : 14 - e;
            unsigned int q = 0;
            if (shift < 32) {
                q = m >> shift;
                const unsigned int rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
                if (rem > half || (rem == half && (q & 1u))) q += 1; // a carry moves the exponent
            }
            r = e > 0 ? sign | (((unsigned int)e << 7) + (q - 0x80u)) : sign | q;
        }
    }
    return __ushort_as_bfloat16((unsigned short)r);
}

/// sparse_segment_softmax: the first sorted entry of each segment computes the softmax (or,
/// `log`, log_softmax) of the segment's values in f64, one dense element at a time, as the CPU
/// does: the max in sorted order (NaN if any is), the sum of exp in sorted order, then each
/// output, written in the entries' own order (out[perm[k]]). A thread per (entry, dense
/// element). ptr: out [nnz, row], values [nnz, row], perm, segments, err. n = nnz * row;
/// p: nnz, row, log.
template <class T> TOPS_D void tops_sp_segment_softmax(const tops_sparse_args& a) {
    T* out = (T*)a.ptr[0];
    const T* vals = (const T*)a.ptr[1];
    const long long* perm = (const long long*)a.ptr[2];
    const long long* seg = (const long long*)a.ptr[3];
    long long* err = (long long*)a.ptr[4];
    const long long nnz = a.p[0], row = a.p[1];
    const bool log_out = a.p[2] != 0;
    TOPS_SP_GRID_STRIDE(t, a.n) {
        const long long j = t / row, e = t - j * row;
        if (j > 0 && seg[j] == seg[j - 1]) continue;
        const long long s = seg[j];
        long long end = j;
        bool ok = true;
        for (; end < nnz && seg[end] == s; ++end) ok = ok && tops_sp_perm_at(perm, end, nnz, err) >= 0;
        if (!ok) continue;
        double hi = tops_f64_of_bits(0xfff0000000000000ull); // -inf
        bool any_nan = false;
        for (long long k = j; k < end; ++k) {
            const double v = tops_cast<double>(vals[perm[k] * row + e]);
            if (v > hi || v != v) hi = v;
            any_nan = any_nan || v != v;
        }
        if (any_nan) hi = tops_f64_of_bits(0x7ff8000000000000ull); // f64::NAN
        double total = 0.0;
        for (long long k = j; k < end; ++k) total += exp(tops_cast<double>(vals[perm[k] * row + e]) - hi);
        const double lse = log(total);
        for (long long k = j; k < end; ++k) {
            const double shifted = tops_cast<double>(vals[perm[k] * row + e]) - hi;
            const double r = log_out ? shifted - lse : exp(shifted) / total;
            out[perm[k] * row + e] = tops_sp_store_f64<T>(r);
        }
    }
}

/// The type a sparse product sums in: f32 for f16/bf16, the dtype itself for f32/f64.
template <class T> struct tops_sp_acc { typedef T type; };
template <> struct tops_sp_acc<__half> { typedef float type; };
template <> struct tops_sp_acc<__nv_bfloat16> { typedef float type; };
template <> struct tops_sp_acc<tops_f8e4m3> { typedef float type; };
template <> struct tops_sp_acc<tops_f8e5m2> { typedef float type; };

/// The operands of a CSR × dense product as its kernels' argument block holds them (ptr:
/// out, crow, col, values, dense, err; p: m, n, k, nnz; see `tops_sp_csr_spmm`).
template <class T, class I> struct tops_sp_csr_product {
    T* out;
    const I* crow;
    const I* col;
    const T* vals;
    const T* dense;
    long long* err;
    long long m, n, k, nnz;
    TOPS_D explicit tops_sp_csr_product(const tops_sparse_args& a)
        : out((T*)a.ptr[0]), crow((const I*)a.ptr[1]), col((const I*)a.ptr[2]), vals((const T*)a.ptr[3]),
          dense((const T*)a.ptr[4]), err((long long*)a.ptr[5]), m(a.p[0]), n(a.p[1]), k(a.p[2]), nnz(a.p[3]) {}
};

/// sparse_csr_spmm (spmm/spmv): out [m, n] = CSR [m, k] × dense [k, n], a thread per output
/// element; consecutive threads take consecutive columns of a row, so a warp's reads of a
/// dense row are coalesced and its reads of the row's entries are broadcasts (spmv, n = 1,
/// plans `tops_sp_csr_spmv_rows` instead). Each element is summed from zero over its row's entries in entry order,
/// each product and each sum rounded on its own (no FMA: NVRTC compiles with --fmad=false, the
/// shim with -ffp-contract=off), f16/bf16 in f32 rounded once at the store: the CPU row's
/// arithmetic (kernels/cpu/src/sparse/spmm.rs), bit for bit. Thread 0 checks that crow runs
/// from 0 to nnz (`err[1]`); a row pointer below 0, falling or past nnz, or a column outside
/// 0..k sets `err[0]` before anything is read through it, and the element is not written.
/// ptr: out [m, n], crow [m + 1], col [nnz] (both of index type I: int or long long),
/// values [nnz], dense [k, n], err [2].
/// n = max(m * n, 1) (one item to check crow's ends on an empty product); p: m, n, k, nnz.
template <class T, class I> TOPS_D void tops_sp_csr_spmm(const tops_sparse_args& a) {
    typedef typename tops_sp_acc<T>::type A;
    const tops_sp_csr_product<T, I> o(a);
    const I* const crow = o.crow;
    const long long m = o.m, n = o.n, k = o.k, nnz = o.nnz;
    TOPS_SP_GRID_STRIDE(t, a.n) {
        if (t == 0 && (crow[0] != 0 || crow[m] != nnz)) o.err[1] = 1;
        if (t >= m * n) continue; // the one item of an empty product
        const long long r = t / n, c = t - r * n;
        const long long lo = crow[r], hi = crow[r + 1];
        if (lo < 0 || lo > hi || hi > nnz) {
            o.err[0] = 1;
            continue;
        }
        A s = tops_cast<A>(0.0);
        bool ok = true;
        // four entries a round: their columns, then their values and dense elements, are
        // loaded together (one entry at a time waited two dependent loads each), and the
        // products are added in entry order
        for (long long j0 = lo; ok && j0 < hi; j0 += 4) {
            long long q[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                q[u] = j0 + u < hi ? (long long)o.col[j0 + u] : 0;
                ok = ok && q[u] >= 0 && q[u] < k;
            }
            if (!ok) break;
            A prod[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                prod[u] = j0 + u < hi ? tops_cast<A>(o.vals[j0 + u]) * tops_cast<A>(o.dense[q[u] * n + c]) : tops_cast<A>(0.0);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                if (j0 + u < hi) s = s + prod[u];
            }
        }
        if (!ok) {
            o.err[0] = 1;
            continue;
        }
        o.out[t] = tops_cast<T>(s);
    }
}

/// spmv (a dense operand of one column) with `G` lanes a row (`G` divides 32; rows
/// grid-strided by groups of lanes): each round the lanes load `G` consecutive entries'
/// columns and values together (adjacent addresses) and gather their vector elements, then
/// every lane adds the round's products to the row's sum in entry order, each broadcast by
/// a shuffle, so the sum is `tops_sp_csr_spmm`'s bit for bit (entry order, no FMA) with `G`
/// loads in flight where a thread a row had one chain of dependent loads. A bad row
/// pointer or column sets `err[0]` and leaves the row unwritten, as there.
template <class T, class I, int G> TOPS_D void tops_sp_csr_spmv_rows(const tops_sparse_args& a) {
    typedef typename tops_sp_acc<T>::type A;
    const tops_sp_csr_product<T, I> o(a);
    const I* const crow = o.crow;
    const long long m = o.m, k = o.k, nnz = o.nnz;
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = (int)(threadIdx.x % G);
    // the group's lanes of its warp (the shuffles' mask)
    const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (threadIdx.x % 32 - lane);
    const long long groups = (long long)gridDim.x * blockDim.x / G;
    if (thread == 0 && (crow[0] != 0 || crow[m] != nnz)) o.err[1] = 1;
    for (long long r = thread / G; r < m; r += groups) {
        const long long lo = crow[r], hi = crow[r + 1];
        if (lo < 0 || lo > hi || hi > nnz) {
            if (lane == 0) o.err[0] = 1;
            continue;
        }
        A s = tops_cast<A>(0.0);
        int bad = 0;
        for (long long j0 = lo; j0 < hi; j0 += G) {
            const long long j = j0 + lane;
            A prod = tops_cast<A>(0.0);
            if (j < hi) {
                const long long q = o.col[j];
                if (q < 0 || q >= k) {
                    bad = 1;
                } else {
                    prod = tops_cast<A>(o.vals[j]) * tops_cast<A>(o.dense[q]);
                }
            }
            const int count = hi - j0 < G ? (int)(hi - j0) : G;
            for (int i = 0; i < count; ++i) s = s + __shfl_sync(mask, prod, i, G);
        }
        // a bad column anywhere in the row: no lane writes it
#pragma unroll
        for (int d = 1; d < G; d <<= 1) bad |= __shfl_xor_sync(mask, bad, d, G);
        if (bad) {
            if (lane == 0) o.err[0] = 1;
            continue;
        }
        if (lane == 0) o.out[r] = tops_cast<T>(s);
    }
}
