// tensor-ops CUDA reductions: the built-in reducers and the three kernel templates every
// reduction launch instantiates (kernels/cuda/src/reduce_codegen.rs wraps them into
// `extern "C"` kernels). Semantics are those of the CPU reducers
// (kernels/cpu/src/reduce/builtin/reducers.rs): the same accumulators, NaN rules and finishes.
//
// A reducer R (one struct template over its accumulate type C) has
//   typedef ... acc_t;                          the accumulator (at most TOPS_REDUCE_ACC_BYTES)
//   R(const tops_param* params);                built from the op's params
//   acc_t identity() const;                     what an empty extent folds to
//   template <class I> acc_t fold(acc_t, I x, long long index) const;
//                                               `index`: the element's logical index along the
//                                               reduced dims (row-major in the input's order)
//   acc_t combine(acc_t a, acc_t b) const;      a covers elements before or beside b's
//   template <class O> O finish(acc_t, long long n) const;   n = the reduced extent
// and tops_shfl_down(acc_t, int) exchanges an accumulator within a warp.
//
// Kernels (blockDim.x a multiple of 32 for the row kernel; the column kernel's is 32 x by):
//   rows:    a block per (output, slice of the reduced extent); threads stride the slice (16-byte
//            vector loads along a dense run), then warp shuffles + one shared-memory step;
//   columns: a thread per output (adjacent threads, adjacent outputs: coalesced) and threadIdx.y
//            splitting the slice, combined through shared memory in y order;
//   finish:  a thread per output combining its slices' partials in slice order (the second
//            pass of a split reduction). Every order is fixed by the launch plan: results do
//            not depend on timing.
// Compiled by NVRTC, and by the host C++ compiler under kernels/cuda-testing/include/shim.h in tests.
#pragma once

#define TOPS_REDUCE_ACC_BYTES 32
#define TOPS_REDUCE_MAX_Y 8

// ---------------------------------------------------------------- warp exchange
TOPS_D int tops_shfl_down(int v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TOPS_D long long tops_shfl_down(long long v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TOPS_D float tops_shfl_down(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TOPS_D double tops_shfl_down(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TOPS_D bool tops_shfl_down(bool v, int d) { return tops_shfl_down((int)v, d) != 0; }
TOPS_D signed char tops_shfl_down(signed char v, int d) { return (signed char)tops_shfl_down((int)v, d); }
TOPS_D unsigned char tops_shfl_down(unsigned char v, int d) { return (unsigned char)tops_shfl_down((int)v, d); }
TOPS_D short tops_shfl_down(short v, int d) { return (short)tops_shfl_down((int)v, d); }

// ---------------------------------------------------------------- accumulate-type helpers
template <class C> struct tops_bound {
    static TOPS_D C lowest() { return tops_lim<C>::lo(); }
    static TOPS_D C highest() { return tops_lim<C>::hi(); }
};
template <> struct tops_bound<bool> {
    static TOPS_D bool lowest() { return false; }
    static TOPS_D bool highest() { return true; }
};
template <> struct tops_bound<float> {
    static TOPS_D float lowest() { return -(float)tops_f64_of_bits(0x7ff0000000000000ull); }
    static TOPS_D float highest() { return (float)tops_f64_of_bits(0x7ff0000000000000ull); }
};
template <> struct tops_bound<double> {
    static TOPS_D double lowest() { return -tops_f64_of_bits(0x7ff0000000000000ull); }
    static TOPS_D double highest() { return tops_f64_of_bits(0x7ff0000000000000ull); }
};

template <class C> TOPS_D bool tops_isnan(C x) { return x != x; }
/// 1 / x, correctly rounded.
TOPS_D double tops_rcp(double x) {
#ifdef __CUDA_ARCH__
    return __drcp_rn(x);
#else
    return 1.0 / x;
#endif
}
TOPS_D float tops_red_exp(float x) { return expf(x); }
TOPS_D double tops_red_exp(double x) { return exp(x); }
TOPS_D float tops_red_sqrt(float x) { return sqrtf(x); }
TOPS_D double tops_red_sqrt(double x) { return sqrt(x); }
TOPS_D double tops_red_nan() { return tops_f64_of_bits(0x7ff8000000000000ull); }

// ---------------------------------------------------------------- one-value reducers
// (sum, prod, mean, all and any are #[tensor_op(reduce)] definitions: ops/src/builtin/reduce/logic.rs)
/// NaN-propagating maximum: a NaN accumulator stays.
template <class C> TOPS_D C tops_max_nan(C a, C b) { return (b > a || tops_isnan(b)) ? b : a; }
/// NaN-propagating minimum.
template <class C> TOPS_D C tops_min_nan(C a, C b) { return (b < a || tops_isnan(b)) ? b : a; }

/// The greatest (MAX) or least element; NaN propagates.
template <class C, bool MAX> struct tops_red_extreme {
    typedef C acc_t;
    TOPS_D explicit tops_red_extreme(const tops_param*) {}
    static TOPS_D C pick(C a, C b) { return MAX ? tops_max_nan(a, b) : tops_min_nan(a, b); }
    TOPS_D acc_t identity() const { return MAX ? tops_bound<C>::lowest() : tops_bound<C>::highest(); }
    template <class I> TOPS_D acc_t fold(acc_t a, I x, long long) const { return pick(a, tops_cast<C>(x)); }
    TOPS_D acc_t combine(acc_t a, acc_t b) const { return pick(a, b); }
    template <class O> TOPS_D O finish(acc_t a, long long) const { return tops_cast<O>(a); }
};
template <class C> struct tops_red_amax : tops_red_extreme<C, true> {
    TOPS_D explicit tops_red_amax(const tops_param* p) : tops_red_extreme<C, true>(p) {}
};
template <class C> struct tops_red_amin : tops_red_extreme<C, false> {
    TOPS_D explicit tops_red_amin(const tops_param* p) : tops_red_extreme<C, false>(p) {}
};

// ---------------------------------------------------------------- log-sum-exp
/// A running maximum and Σ e^(x − max).
template <class C> struct tops_lse_acc {
    C m, s;
};
template <class C> TOPS_D tops_lse_acc<C> tops_shfl_down(tops_lse_acc<C> a, int d) {
    tops_lse_acc<C> r;
    r.m = tops_shfl_down(a.m, d);
    r.s = tops_shfl_down(a.s, d);
    return r;
}

/// ln Σ e^x, online (max-rescaled); finished in double.
template <class C> struct tops_red_logsumexp {
    typedef tops_lse_acc<C> acc_t;
    TOPS_D explicit tops_red_logsumexp(const tops_param*) {}
    static TOPS_D acc_t make(C m, C s) {
        acc_t r;
        r.m = m;
        r.s = s;
        return r;
    }
    static TOPS_D acc_t merge(acc_t a, acc_t b) {
        // Equal maxima (±∞ included): the sums add, no rescale (∞ − ∞ would be NaN).
        if (a.m == b.m) return make(a.m, a.s + b.s);
        if (b.m > a.m) return make(b.m, b.s + a.s * tops_red_exp(a.m - b.m));
        if (a.m > b.m) return make(a.m, a.s + b.s * tops_red_exp(b.m - a.m));
        return make(a.m, (C)tops_red_nan());
    }
    TOPS_D acc_t identity() const { return make(tops_bound<C>::lowest(), (C)0); }
    template <class I> TOPS_D acc_t fold(acc_t a, I x, long long) const {
        const C v = tops_cast<C>(x);
        if (tops_isnan(v)) return make(a.m, (C)tops_red_nan());
        return merge(a, make(v, (C)1));
    }
    TOPS_D acc_t combine(acc_t a, acc_t b) const {
        if (tops_isnan(a.s) || tops_isnan(b.s)) return make(a.m, (C)tops_red_nan());
        return merge(a, b);
    }
    template <class O> TOPS_D O finish(acc_t a, long long) const {
        if (a.s == (C)0) return tops_cast<O>(tops_bound<C>::lowest()); // nothing folded: ln 0
        return tops_cast<O>((double)a.m + log((double)a.s));
    }
};

// ---------------------------------------------------------------- variance (Welford)
/// Welford's (count, mean, Σ(x − mean)²).
template <class C> struct tops_welford {
    double n;
    C mean, m2;
};
template <class C> TOPS_D tops_welford<C> tops_shfl_down(tops_welford<C> a, int d) {
    tops_welford<C> r;
    r.n = tops_shfl_down(a.n, d);
    r.mean = tops_shfl_down(a.mean, d);
    r.m2 = tops_shfl_down(a.m2, d);
    return r;
}

/// var (SQRT = false) or std (SQRT = true) with params[0] the correction (PyTorch's).
template <class C, bool SQRT> struct tops_red_variance {
    typedef tops_welford<C> acc_t;
    double correction;
    TOPS_D explicit tops_red_variance(const tops_param* p) : correction((double)p[0]) {}
    static TOPS_D acc_t make(double n, C mean, C m2) {
        acc_t r;
        r.n = n;
        r.mean = mean;
        r.m2 = m2;
        return r;
    }
    TOPS_D acc_t identity() const { return make(0.0, (C)0, (C)0); }
    template <class I> TOPS_D acc_t fold(acc_t a, I x, long long) const {
        const C v = tops_cast<C>(x);
        const double n = a.n + 1.0;
        const C d = v - a.mean;
        const C mean = a.mean + d / (C)n;
        return make(n, mean, a.m2 + d * (v - mean));
    }
    /// Four values at once: their own mean and squared deviations (two passes over four
    /// registers), combined with `a` as `combine` does; a quarter of the divisions.
    template <class I> TOPS_D acc_t fold4(acc_t a, I x0, I x1, I x2, I x3) const {
        const C v0 = tops_cast<C>(x0), v1 = tops_cast<C>(x1), v2 = tops_cast<C>(x2), v3 = tops_cast<C>(x3);
        const C mean = ((v0 + v1) + (v2 + v3)) * (C)0.25;
        const C d0 = v0 - mean, d1 = v1 - mean, d2 = v2 - mean, d3 = v3 - mean;
        const C m2 = (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        if (a.n == 0.0) return make(4.0, mean, m2);
        // combine(a, {4, mean, m2}) with w = 4 / n weighing the new values: 4 · rcp(n) is
        // the correctly rounded quotient (scaling by 4 is exact), without the division's
        // slow-path call, whose saved registers spilled on sm_90
        const double n = a.n + 4.0, w = 4.0 * tops_rcp(n);
        const C d = mean - a.mean;
        return make(n, a.mean + d * (C)w, (a.m2 + m2) + (d * d) * (C)(a.n * w));
    }
    TOPS_D acc_t combine(acc_t a, acc_t b) const {
        if (a.n == 0.0) return b;
        if (b.n == 0.0) return a;
        // one reciprocal instead of two divisions (each a slow-path call on the device; a
        // row's block combines ten times per thread): weights within an ulp of the quotients
        const double n = a.n + b.n, wb = b.n * tops_rcp(n);
        const C d = b.mean - a.mean;
        const C mean = a.mean + d * (C)wb;
        return make(n, mean, (a.m2 + b.m2) + (d * d) * (C)(a.n * wb));
    }
    template <class O> TOPS_D O finish(acc_t a, long long) const {
        const double denom = a.n - correction;
        const C var = a.m2 / (C)(denom > 0.0 ? denom : 0.0);
        return tops_cast<O>(SQRT ? tops_red_sqrt(var) : var);
    }
};
template <class C> struct tops_red_var : tops_red_variance<C, false> {
    TOPS_D explicit tops_red_var(const tops_param* p) : tops_red_variance<C, false>(p) {}
};
template <class C> struct tops_red_std : tops_red_variance<C, true> {
    TOPS_D explicit tops_red_std(const tops_param* p) : tops_red_variance<C, true>(p) {}
};

// ---------------------------------------------------------------- argmax / argmin
#define TOPS_ARG_NONE 9223372036854775807LL
/// A candidate: value and logical index (TOPS_ARG_NONE: nothing seen).
template <class C> struct tops_arg_acc {
    C v;
    long long i;
};
template <class C> TOPS_D tops_arg_acc<C> tops_shfl_down(tops_arg_acc<C> a, int d) {
    tops_arg_acc<C> r;
    r.v = tops_shfl_down(a.v, d);
    r.i = tops_shfl_down(a.i, d);
    return r;
}

/// The winner of two candidates: a NaN beats a number, `MAX` picks between numbers (greater
/// or less), ties and two NaNs go to the smaller index. Symmetric: any combine order agrees.
template <class C, bool MAX> TOPS_D tops_arg_acc<C> tops_arg_pick(tops_arg_acc<C> a, tops_arg_acc<C> b) {
    if (a.i == TOPS_ARG_NONE) return b;
    if (b.i == TOPS_ARG_NONE) return a;
    const bool an = tops_isnan(a.v), bn = tops_isnan(b.v);
    bool b_wins;
    if (an || bn) {
        b_wins = (an && bn) ? b.i < a.i : bn;
    } else if (MAX ? b.v > a.v : b.v < a.v) {
        b_wins = true;
    } else if (MAX ? a.v > b.v : a.v < b.v) {
        b_wins = false;
    } else {
        b_wins = b.i < a.i;
    }
    return b_wins ? b : a;
}

template <class C, bool MAX> struct tops_red_arg {
    typedef tops_arg_acc<C> acc_t;
    TOPS_D explicit tops_red_arg(const tops_param*) {}
    TOPS_D acc_t identity() const {
        acc_t r;
        r.v = tops_cast<C>(0);
        r.i = TOPS_ARG_NONE;
        return r;
    }
    template <class I> TOPS_D acc_t fold(acc_t a, I x, long long index) const {
        acc_t b;
        b.v = tops_cast<C>(x);
        b.i = index;
        return tops_arg_pick<C, MAX>(a, b);
    }
    TOPS_D acc_t combine(acc_t a, acc_t b) const { return tops_arg_pick<C, MAX>(a, b); }
    template <class O> TOPS_D O finish(acc_t a, long long) const { return tops_cast<O>(a.i); }

    // A thread's run in increasing index order (see "runs" below): the best value and its
    // 32-bit position, where a later element wins only when strictly better (or the first
    // NaN): ties keep the earlier, smaller index, as `tops_arg_pick` decides them.
    struct run_t {
        C v;
        int pos;
    };
    TOPS_D run_t run_identity() const {
        run_t r;
        r.v = tops_cast<C>(0);
        r.pos = -1;
        return r;
    }
    template <class I> TOPS_D run_t run_fold(run_t r, I x, int pos) const {
        const C c = tops_cast<C>(x);
        // !(c <= best): c greater, or c NaN; a NaN best is never replaced
        const bool better = MAX ? !(c <= r.v) : !(c >= r.v);
        if (r.pos < 0 || (better && !tops_isnan(r.v))) {
            r.v = c;
            r.pos = pos;
        }
        return r;
    }
    TOPS_D acc_t run_finish(run_t r, long long base, long long step) const {
        acc_t a = identity();
        if (r.pos >= 0) {
            a.v = r.v;
            a.i = (base + r.pos) * step;
        }
        return a;
    }
};
template <class C> struct tops_red_argmax : tops_red_arg<C, true> {
    TOPS_D explicit tops_red_argmax(const tops_param* p) : tops_red_arg<C, true>(p) {}
};
template <class C> struct tops_red_argmin : tops_red_arg<C, false> {
    TOPS_D explicit tops_red_argmin(const tops_param* p) : tops_red_arg<C, false>(p) {}
};

// ---------------------------------------------------------------- #[tensor_op(reduce)] bodies
// What the CUDA C of a user's reduction is written against (tensor-macros/src/cuda_reducer.rs,
// the four functions written by the map bodies' C emitter): tuples are tops_tupleN with fields
// f0.., the result is converted to the accumulator field by field; arithmetic is the prelude's.
template <class A> struct tops_tuple1 { A f0; };
template <class A, class B> struct tops_tuple2 { A f0; B f1; };
template <class A, class B, class D> struct tops_tuple3 { A f0; B f1; D f2; };
template <class A> TOPS_D tops_tuple1<A> tops_tuple(A a) { tops_tuple1<A> t; t.f0 = a; return t; }
template <class A, class B> TOPS_D tops_tuple2<A, B> tops_tuple(A a, B b) {
    tops_tuple2<A, B> t;
    t.f0 = a;
    t.f1 = b;
    return t;
}
template <class A, class B, class D> TOPS_D tops_tuple3<A, B, D> tops_tuple(A a, B b, D c) {
    tops_tuple3<A, B, D> t;
    t.f0 = a;
    t.f1 = b;
    t.f2 = c;
    return t;
}
template <class A> TOPS_D tops_tuple1<A> tops_shfl_down(tops_tuple1<A> t, int d) {
    t.f0 = tops_shfl_down(t.f0, d);
    return t;
}
template <class A, class B> TOPS_D tops_tuple2<A, B> tops_shfl_down(tops_tuple2<A, B> t, int d) {
    t.f0 = tops_shfl_down(t.f0, d);
    t.f1 = tops_shfl_down(t.f1, d);
    return t;
}
template <class A, class B, class D> TOPS_D tops_tuple3<A, B, D> tops_shfl_down(tops_tuple3<A, B, D> t, int d) {
    t.f0 = tops_shfl_down(t.f0, d);
    t.f1 = tops_shfl_down(t.f1, d);
    t.f2 = tops_shfl_down(t.f2, d);
    return t;
}

/// `x` as `To` (Rust `as` for values, field by field for tuples).
template <class To> struct tops_conv_t;
template <class To, class F> TOPS_D To tops_conv(F x) { return tops_conv_t<To>::from(x); }
template <class To> struct tops_conv_t {
    template <class F> static TOPS_D To from(F x) { return tops_cast<To>(x); }
};
template <class A> struct tops_conv_t<tops_tuple1<A> > {
    template <class F> static TOPS_D tops_tuple1<A> from(F x) { return tops_tuple(tops_conv<A>(x.f0)); }
};
template <class A, class B> struct tops_conv_t<tops_tuple2<A, B> > {
    template <class F> static TOPS_D tops_tuple2<A, B> from(F x) {
        return tops_tuple(tops_conv<A>(x.f0), tops_conv<B>(x.f1));
    }
};
template <class A, class B, class D> struct tops_conv_t<tops_tuple3<A, B, D> > {
    template <class F> static TOPS_D tops_tuple3<A, B, D> from(F x) {
        return tops_tuple(tops_conv<A>(x.f0), tops_conv<B>(x.f1), tops_conv<D>(x.f2));
    }
};

// ---------------------------------------------------------------- index math
/// Output `o`'s offsets: in the input (its kept coordinates) and in the output.
TOPS_D void tops_reduce_kept(const tops_reduce_args& a, long long o, long long& in_off, long long& out_off) {
    in_off = 0;
    out_off = 0;
#pragma unroll
    for (int d = 0; d < TOPS_MAX_DIMS; ++d) {
        if (d == a.kdim) break;
        const long long c = o % a.ksize[d];
        o /= a.ksize[d];
        in_off += c * a.kin[d];
        out_off += c * a.kout[d];
    }
}

/// Reduced position `r`'s input offset and logical index.
TOPS_D void tops_reduce_pos(const tops_reduce_args& a, long long r, long long& in_off, long long& index) {
    in_off = 0;
    index = 0;
#pragma unroll
    for (int d = 0; d < TOPS_MAX_DIMS; ++d) {
        if (d == a.rdim) break;
        const long long c = r % a.rsize[d];
        r /= a.rsize[d];
        in_off += c * a.rin[d];
        index += c * a.ridx[d];
    }
}

/// The accumulator of all lanes of the warp, in lane 0 (combined lower lanes first).
template <class R> TOPS_D typename R::acc_t tops_warp_combine(const R& red, typename R::acc_t acc) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc = red.combine(acc, tops_shfl_down(acc, d));
    return acc;
}

/// Stores a finished task: the output when the extent is not split, else its partial.
template <class R, class O>
TOPS_D void tops_reduce_store(const tops_reduce_args& a, const R& red, typename R::acc_t acc, long long o, long long s,
                              long long out_off) {
    if (a.split == 1) {
        ((O*)a.out)[out_off] = red.template finish<O>(acc, a.n_red);
    } else {
        ((typename R::acc_t*)a.work)[o * a.split + s] = acc;
    }
}

// ---------------------------------------------------------------- sources
// A source S hands the kernels the values they reduce, addressed by the input offset the plan
// gives (`kin + off`):
//   typedef ... value_t;                         what fold receives
//   value_t at(long long off) const;             the value at an offset
//   long long dense_head(long long off, long long len) const;
//                                                for a run of `len` consecutive offsets from
//                                                `off`: how many to fold one by one before
//                                                16-byte vectors start, or -1 for no vectors
//   tops_pack<value_t, V> pack(long long off) const;   V = 16 / sizeof(value_t) values
//   static constexpr int prefetch;               > 1: the kernels may load several vectors
//                                                (or rows) before folding them

/// An input tensor in memory.
template <class I> struct tops_mem_src {
    typedef I value_t;
    static constexpr int prefetch = 4; // loads a thread may have in flight before folding
    const I* __restrict__ p;
    TOPS_D explicit tops_mem_src(const void* in) : p((const I*)in) {}
    TOPS_D I at(long long off) const { return p[off]; }
    TOPS_D long long dense_head(long long off, long long len) const {
        const unsigned long long base = (unsigned long long)(p + off);
        if (base % sizeof(I) != 0) return -1;
        const long long head = (long long)(((16 - base % 16) % 16) / sizeof(I));
        return head < len ? head : len;
    }
    TOPS_D tops_pack<I, 16 / sizeof(I)> pack(long long off) const {
        return *(const tops_pack<I, 16 / sizeof(I)>*)(p + off);
    }
};

/// The head a dense run of `value_t` at offset `off` of a 16-byte aligned tensor has: what a
/// virtual source (a fused chain's result, never stored) reports, so that it folds exactly
/// as the eager reduction of the stored result would.
template <class T> TOPS_D long long tops_aligned_head(long long off, long long len) {
    const long long per = 16 / (long long)sizeof(T);
    const long long head = (per - off % per) % per;
    return head < len ? head : len;
}

/// Folds four values in order: the reducer's `fold4` when it has one (Welford: fewer
/// divisions), else four `fold`s. `i` is the first value's index, `step` the next's offset.
/// (An indexed four-value fold for argmax — the best of four by value compares, then one
/// pick — measured 25-30 % slower on an H200, 2026-11-27: its `v[k]` went to local memory.)
template <class R, class I>
TOPS_D auto tops_fold4_of(const R& red, typename R::acc_t a, I x0, I x1, I x2, I x3, long long, long long, int)
    -> decltype(red.fold4(a, x0, x1, x2, x3)) {
    return red.fold4(a, x0, x1, x2, x3);
}
template <class R, class I>
TOPS_D typename R::acc_t tops_fold4_of(const R& red, typename R::acc_t a, I x0, I x1, I x2, I x3, long long i,
                                       long long step, long) {
    a = red.fold(a, x0, i);
    a = red.fold(a, x1, i + step);
    a = red.fold(a, x2, i + 2 * step);
    return red.fold(a, x3, i + 3 * step);
}
template <class R, class I>
TOPS_D typename R::acc_t tops_fold4(const R& red, typename R::acc_t a, I x0, I x1, I x2, I x3, long long i,
                                    long long step) {
    return tops_fold4_of(red, a, x0, x1, x2, x3, i, step, 0);
}

// ---------------------------------------------------------------- runs
// The elements one thread folds in the row and column kernels lie at increasing positions
// k = 0, 1, … of its slice, whose logical indices are (base + k) · step with step > 0. A
// folder takes them by position:
//   tops_fold_each: the reducer's own fold with each element's 64-bit index;
//   tops_fold_run:  for a reducer with a run form (argmax/argmin: a value and a 32-bit
//                   position, no 64-bit index arithmetic per element), folded in that form
//                   and turned into an accumulator once, by `run_finish`.
// Both give the same accumulator: the run form relies on the order, the plain fold does not.

template <class R> struct tops_fold_each {
    typedef typename R::acc_t A;
    R red;
    A acc;
    long long base, step;
    TOPS_D tops_fold_each(const R& r, long long b, long long s) : red(r), acc(r.identity()), base(b), step(s) {}
    template <class I> TOPS_D void add(I x, long long k) { acc = red.fold(acc, x, (base + k) * step); }
    /// Four values at positions k, k + dk, k + 2dk, k + 3dk.
    template <class I> TOPS_D void add4(I x0, I x1, I x2, I x3, long long k, long long dk) {
        acc = tops_fold4(red, acc, x0, x1, x2, x3, (base + k) * step, dk * step);
    }
    TOPS_D A result() const { return acc; }
};

template <class R> struct tops_fold_run {
    typedef typename R::acc_t A;
    typedef typename R::run_t T;
    R red;
    T run;
    long long base, step;
    TOPS_D tops_fold_run(const R& r, long long b, long long s) : red(r), run(r.run_identity()), base(b), step(s) {}
    template <class I> TOPS_D void add(I x, long long k) { run = red.run_fold(run, x, (int)k); }
    template <class I> TOPS_D void add4(I x0, I x1, I x2, I x3, long long k, long long dk) {
        run = red.run_fold(run, x0, (int)k);
        run = red.run_fold(run, x1, (int)(k + dk));
        run = red.run_fold(run, x2, (int)(k + 2 * dk));
        run = red.run_fold(run, x3, (int)(k + 3 * dk));
    }
    TOPS_D A result() const { return red.run_finish(run, base, step); }
};

/// Whether R has a run form (`run_t`).
template <class R, class = void> struct tops_has_run { static constexpr bool value = false; };
template <class R> struct tops_has_run<R, decltype((void)sizeof(typename R::run_t))> {
    static constexpr bool value = true;
};

/// Calls `body(folder)` with the run folder when R has a run form, the slice fits 32-bit
/// positions and the indices increase (step > 0), else with the plain folder; returns the
/// thread's accumulator.
template <class R, class Body>
TOPS_D typename R::acc_t tops_fold_positions(const R& red, long long base, long long step, long long len,
                                             const Body& body) {
    if constexpr (tops_has_run<R>::value) {
        if (step > 0 && len < 2147483647LL) {
            tops_fold_run<R> f(red, base, step);
            body(f);
            return f.result();
        }
    }
    tops_fold_each<R> f(red, base, step);
    body(f);
    return f.result();
}

/// The bytes a thread's running state takes (the run form's when the reducer has one):
/// what decides how many loads the kernels keep in flight.
template <class R, bool RUN = tops_has_run<R>::value> struct tops_state_bytes {
    static constexpr int value = (int)sizeof(typename R::acc_t);
};
template <class R> struct tops_state_bytes<R, true> {
    static constexpr int value = (int)sizeof(typename R::run_t);
};

/// Folds the V values of a vector at positions k, k + 1, …: V == 4 as one `add4` (Welford's
/// fold4 needs a quarter of the divisions; wider packs of heavy accumulators would spill on
/// sm_90), heavy states (16 bytes or more) two at a time, light ones fully unrolled.
template <int V, int STATE, class F, class P> TOPS_D void tops_fold_pack(F& f, const P& pk, long long k) {
    if constexpr (V == 4) {
        f.add4(pk.v[0], pk.v[1], pk.v[2], pk.v[3], k, 1);
    } else if constexpr (STATE >= 16) {
#pragma unroll 2
        for (int j = 0; j < V; ++j) f.add(pk.v[j], k + j);
    } else {
#pragma unroll
        for (int j = 0; j < V; ++j) f.add(pk.v[j], k + j);
    }
}

/// The row kernel's dense run: a scalar head up to 16-byte alignment, 16-byte vectors (four
/// in flight before they are folded, in the same order, for a memory source of 4- or 8-byte
/// values: a fused chain's vectors cost registers enough already, and four vectors of
/// narrower ones spill on sm_90), a tail. Positions are offsets from the slice's start.
template <class R, class S> struct tops_rows_dense_body {
    S src;
    long long first_off, head, len;
    int tid, nthreads;
    template <class F> TOPS_D void operator()(F& f) const {
        typedef typename S::value_t I;
        constexpr int V = 16 / (int)sizeof(I);
        for (long long k = tid; k < head; k += nthreads) f.add(src.at(first_off + k), k);
        const long long nvec = (len - head) / V;
        long long v = tid;
        if constexpr (S::prefetch > 1 && V <= 4) {
            for (; v + 3 * nthreads < nvec; v += 4 * nthreads) {
                tops_pack<I, V> pk[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) pk[u] = src.pack(first_off + head + (v + u * nthreads) * V);
#pragma unroll
                for (int u = 0; u < 4; ++u) tops_fold_pack<V, tops_state_bytes<R>::value>(f, pk[u], head + (v + u * nthreads) * V);
            }
            // The one to three vectors a thread has left (every thread of a row of 2 Ki
            // f32, or of a split's slice, has some) are loaded together too, then folded
            // in the same order: one at a time, each would wait a full load's latency.
            // (Past the end a thread loads the last vector again, unfolded: no load is
            // conditional.)
            if (v < nvec) {
                tops_pack<I, V> pk[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const long long w = v + u * nthreads < nvec ? v + u * nthreads : nvec - 1;
                    pk[u] = src.pack(first_off + head + w * V);
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    if (v + u * nthreads < nvec) tops_fold_pack<V, tops_state_bytes<R>::value>(f, pk[u], head + (v + u * nthreads) * V);
                }
                v = nvec;
            }
        }
        for (; v < nvec; v += nthreads) {
            const tops_pack<I, V> pk = src.pack(first_off + head + v * V);
            tops_fold_pack<V, tops_state_bytes<R>::value>(f, pk, head + v * V);
        }
        for (long long k = head + nvec * V + tid; k < len; k += nthreads) f.add(src.at(first_off + k), k);
    }
};

/// The row kernel's one strided reduced dim: offsets by multiplication.
template <class S> struct tops_strided_body {
    S src;
    long long kin, rs, r0, r1;
    int tid, nthreads;
    template <class F> TOPS_D void operator()(F& f) const {
        for (long long r = r0 + tid; r < r1; r += nthreads) f.add(src.at(kin + r * rs), r - r0);
    }
};

/// The column kernel's one reduced dim: offsets by multiplication (no 64-bit division per
/// element), eight (states of up to 16 bytes from memory: f32 Welford's with its
/// reciprocals, argmax's run; f64 Welford's 24 bytes spill), then four rows' values in
/// flight before they are folded, in order.
template <class R, class S> struct tops_columns_body {
    S src;
    long long kin, rs, r0, r1;
    int ty, by;
    template <class F> TOPS_D void operator()(F& f) const {
        typedef typename S::value_t I;
        long long r = r0 + ty;
        if constexpr (S::prefetch > 1 && tops_state_bytes<R>::value <= 16) {
            for (; r + 7 * by < r1; r += 8 * by) {
                I x[8];
#pragma unroll
                for (int u = 0; u < 8; ++u) x[u] = src.at(kin + (r + u * by) * rs);
                f.add4(x[0], x[1], x[2], x[3], r - r0, by);
                f.add4(x[4], x[5], x[6], x[7], r + 4 * by - r0, by);
            }
        }
        for (; r + 3 * by < r1; r += 4 * by) {
            const I v0 = src.at(kin + r * rs), v1 = src.at(kin + (r + by) * rs);
            const I v2 = src.at(kin + (r + 2 * by) * rs), v3 = src.at(kin + (r + 3 * by) * rs);
            f.add4(v0, v1, v2, v3, r - r0, by);
        }
        for (; r < r1; r += by) f.add(src.at(kin + r * rs), r - r0);
    }
};

// ---------------------------------------------------------------- kernels
/// A block per (output, slice): reducing along the innermost (densest) input dim.
template <class R, class S, class O> TOPS_D void tops_reduce_rows_of(const tops_reduce_args& a, const S& src) {
    typedef typename R::acc_t A;
    typedef typename S::value_t I;
    static_assert(sizeof(A) <= TOPS_REDUCE_ACC_BYTES, "accumulator larger than a workspace slot");
    const R red(a.params);
    __shared__ A part[32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nthreads = blockDim.x, nwarps = (nthreads + 31) >> 5;
    const long long tasks = a.n_out * a.split;
    for (long long t = blockIdx.x; t < tasks; t += gridDim.x) {
        const long long o = t / a.split, s = t % a.split;
        long long kin, kout;
        tops_reduce_kept(a, o, kin, kout);
        const long long r0 = s * a.chunk;
        const long long r1 = r0 + a.chunk < a.n_red ? r0 + a.chunk : a.n_red;
        const long long len = r1 > r0 ? r1 - r0 : 0;
        A acc = red.identity();
        const long long head = (a.rdim == 1 && a.rin[0] == 1) ? src.dense_head(kin + r0, len) : -1;
        if (head >= 0) {
            // A dense run: a scalar head up to 16-byte alignment, 16-byte vectors, a tail;
            // element k of the slice has index (r0 + k) · step.
            const long long first_off = kin + r0;
            const tops_rows_dense_body<R, S> body{src, first_off, head, len, tid, nthreads};
            acc = tops_fold_positions(red, r0, a.ridx[0], len, body);
        } else if (a.rdim == 1) {
            // One strided reduced dim: offsets by multiplication.
            const tops_strided_body<S> body{src, kin, a.rin[0], r0, r1, tid, nthreads};
            acc = tops_fold_positions(red, r0, a.ridx[0], len, body);
        } else {
            for (long long r = r0 + tid; r < r1; r += nthreads) {
                long long off, index;
                tops_reduce_pos(a, r, off, index);
                acc = red.fold(acc, src.at(kin + off), index);
            }
        }
        // Every thread takes part in both exchange rounds (uniform control flow).
        acc = tops_warp_combine(red, acc);
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        acc = lane < nwarps ? part[lane] : red.identity();
        acc = tops_warp_combine(red, acc);
        if (tid == 0) tops_reduce_store<R, O>(a, red, acc, o, s, kout);
        __syncthreads();
    }
}

/// The row kernel over an input tensor of `I`.
template <class R, class I, class O> TOPS_D void tops_reduce_rows(const tops_reduce_args& a) {
    tops_reduce_rows_of<R, tops_mem_src<I>, O>(a, tops_mem_src<I>(a.in));
}

/// 32 adjacent outputs per block (threadIdx.x), threadIdx.y splitting the slice: reducing
/// along a strided dim, every load coalesced across the kept dense dim.
template <class R, class S, class O> TOPS_D void tops_reduce_columns_of(const tops_reduce_args& a, const S& src) {
    typedef typename R::acc_t A;
    typedef typename S::value_t I;
    static_assert(sizeof(A) <= TOPS_REDUCE_ACC_BYTES, "accumulator larger than a workspace slot");
    const R red(a.params);
    __shared__ A part[TOPS_REDUCE_MAX_Y][32];
    const int tx = threadIdx.x, ty = threadIdx.y, by = blockDim.y;
    const long long tasks = ((a.n_out + 31) / 32) * a.split;
    for (long long t = blockIdx.x; t < tasks; t += gridDim.x) {
        const long long o = (t / a.split) * 32 + tx, s = t % a.split;
        const bool live = o < a.n_out;
        long long kin = 0, kout = 0;
        if (live) tops_reduce_kept(a, o, kin, kout);
        const long long r0 = s * a.chunk;
        const long long r1 = r0 + a.chunk < a.n_red ? r0 + a.chunk : a.n_red;
        A acc = red.identity();
        if (live && a.rdim == 1) {
            // One reduced dim: offsets by multiplication (no 64-bit division per element),
            // eight (then four) rows' values in flight before they are folded, in order.
            const tops_columns_body<R, S> body{src, kin, a.rin[0], r0, r1, ty, by};
            acc = tops_fold_positions(red, r0, a.ridx[0], r1 - r0, body);
        } else if (live) {
            for (long long r = r0 + ty; r < r1; r += by) {
                long long off, index;
                tops_reduce_pos(a, r, off, index);
                acc = red.fold(acc, src.at(kin + off), index);
            }
        }
        part[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && live) {
            A v = part[0][tx];
            for (int k = 1; k < by; ++k) v = red.combine(v, part[k][tx]);
            tops_reduce_store<R, O>(a, red, v, o, s, kout);
        }
        __syncthreads();
    }
}

/// The column kernel over an input tensor of `I`.
template <class R, class I, class O> TOPS_D void tops_reduce_columns(const tops_reduce_args& a) {
    tops_reduce_columns_of<R, tops_mem_src<I>, O>(a, tops_mem_src<I>(a.in));
}

/// A thread per output folding its whole extent — at most E elements along one reduced dim
/// — in order, U outputs a thread with all their loads in flight before any fold: tiny
/// extents (a sum over [n, 4] along either dim), where a block or a warp per output would
/// idle. Needs split == 1, rdim == 1 and n_red <= E (the planner's `ReducePass::Small`).
template <class R, class S, class O, int E> TOPS_D void tops_reduce_small_of(const tops_reduce_args& a, const S& src) {
    typedef typename R::acc_t A;
    typedef typename S::value_t I;
    constexpr int U = E <= 4 ? 4 : (E <= 8 ? 2 : 1);
    const R red(a.params);
    const long long per = (long long)blockDim.x;
    const long long stride = (long long)gridDim.x * per * U;
    const long long rs = a.rin[0], is = a.ridx[0];
    const int n = (int)a.n_red;
    for (long long o0 = (long long)blockIdx.x * per * U + threadIdx.x; o0 < a.n_out; o0 += stride) {
        I v[U][E];
        long long kout[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const long long o = o0 + u * per;
            kout[u] = 0;
            if (o < a.n_out) {
                long long kin;
                if (a.kdim == 1) {
                    kin = o * a.kin[0];
                    kout[u] = o * a.kout[0];
                } else {
                    tops_reduce_kept(a, o, kin, kout[u]);
                }
#pragma unroll
                for (int k = 0; k < E; ++k)
                    if (k < n) v[u][k] = src.at(kin + k * rs);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (o0 + u * per < a.n_out) {
                A acc = red.identity();
#pragma unroll
                for (int k = 0; k < E; ++k)
                    if (k < n) acc = red.fold(acc, v[u][k], k * is);
                ((O*)a.out)[kout[u]] = red.template finish<O>(acc, a.n_red);
            }
        }
    }
}

/// The small-extent kernel over an input tensor of `I`.
template <class R, class I, class O, int E> TOPS_D void tops_reduce_small(const tops_reduce_args& a) {
    tops_reduce_small_of<R, tops_mem_src<I>, O, E>(a, tops_mem_src<I>(a.in));
}

/// `acc` combined with partials `p[s]` for s = first, first + step, … < end, in that order,
/// four loads issued before their four combines (each combine waited on its own load before
/// the next was issued: a finishing thread's partials came back one latency at a time).
template <class R, class A>
TOPS_D void tops_combine_partials(const R& red, A& acc, const A* __restrict__ p, long long first, long long end, long long step) {
    long long s = first;
    for (; s + 3 * step < end; s += 4 * step) {
        A w[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) w[u] = p[s + u * step];
#pragma unroll
        for (int u = 0; u < 4; ++u) acc = red.combine(acc, w[u]);
    }
    for (; s < end; s += step) acc = red.combine(acc, p[s]);
}

/// The second pass of a split reduction when outputs are few: a block per output, thread t
/// combining partials t, t + blockDim.x, … (as the row kernel folds its elements), then the
/// warps' and the block's in lane order.
template <class R, class O> TOPS_D void tops_reduce_finish_wide(const tops_reduce_args& a) {
    typedef typename R::acc_t A;
    const R red(a.params);
    __shared__ A part[32];
    const A* __restrict__ work = (const A*)a.work;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = (blockDim.x + 31) >> 5;
    for (long long o = blockIdx.x; o < a.n_out; o += gridDim.x) {
        long long kin, kout;
        tops_reduce_kept(a, o, kin, kout);
        A acc = red.identity();
        tops_combine_partials(red, acc, work + o * a.split, tid, a.split, blockDim.x);
        acc = tops_warp_combine(red, acc);
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        acc = lane < nwarps ? part[lane] : red.identity();
        acc = tops_warp_combine(red, acc);
        if (tid == 0) ((O*)a.out)[kout] = red.template finish<O>(acc, a.n_red);
        __syncthreads();
    }
}

/// The second pass of a split reduction: a thread per output combines its partials.
template <class R, class O> TOPS_D void tops_reduce_finish(const tops_reduce_args& a) {
    typedef typename R::acc_t A;
    const R red(a.params);
    const A* __restrict__ work = (const A*)a.work;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < a.n_out; o += nthreads) {
        A acc = work[o * a.split];
        tops_combine_partials(red, acc, work + o * a.split, 1, a.split, 1);
        long long kin, kout;
        tops_reduce_kept(a, o, kin, kout);
        ((O*)a.out)[kout] = red.template finish<O>(acc, a.n_red);
    }
}
