//! The built-in reducers, generic over the stored input `I`, the accumulator type `C` and
//! the stored output `O` (the rows in `rows.rs` pick them per dtype from the core's dtype
//! rule).

use super::compute::{
    convert_block, max_and_nan, max_by_gt, min_and_nan, prefetch_next_block, Compute, FloatCompute, SumExp, BLOCK,
};
use crate::placement::{half_page_skew, PAGE};
use crate::reduce::{prefetch_row_segment, row_segments, Reducer, ROW_SEGMENT};
use std::marker::PhantomData;
use tensor_core::{Element, Scalar};

/// The zero-sized marker of a reducer's types.
type Types<I, C, O> = PhantomData<fn() -> (I, C, O)>;

/// Declares a reducer struct generic over its types (and zero-sized when it takes no param).
macro_rules! reducer_struct {
    ($($(#[$m:meta])* $name:ident<$($t:ident),*>;)*) => { $(
        $(#[$m])*
        pub(crate) struct $name<$($t),*>(PhantomData<fn() -> ($($t,)*)>);
    )* };
}

reducer_struct! {
    /// The greatest element; NaN propagates.
    AMax<I, C, O>;
    /// The least element; NaN propagates.
    AMin<I, C, O>;
    /// ln Σ e^x, online: a running maximum and a sum rescaled to it.
    LogSumExp<I, C, O>;
    /// The index of the first greatest element (a NaN counts as greatest: the first NaN).
    ArgMax<I, C>;
    /// The index of the first least element (the first NaN if any).
    ArgMin<I, C>;
}

macro_rules! no_params {
    () => {
        fn new(_: &[Scalar]) -> Self {
            Self(PhantomData)
        }
    };
}

/// A reducer whose accumulator is one value of `C`: identity, fold (`acc`, `x` as `C`),
/// combine (same as fold) and finish (`acc`, the count `n`), plus extra items.
macro_rules! one_value_reducer {
    ($name:ident: $bound:ident, identity = $id:expr, merge = $merge:expr, finish = $finish:expr $(, $extra:item)*) => {
        impl<I: Element, C: $bound, O: Element> Reducer for $name<I, C, O> {
            type In = I;
            type Acc = C;
            type Out = O;
            no_params!();
            #[inline(always)]
            fn identity(&self) -> C {
                $id
            }
            #[inline(always)]
            fn fold(&self, acc: C, x: I, _: i64) -> C {
                $merge(acc, x.cast())
            }
            #[inline(always)]
            fn combine(&self, a: C, b: C) -> C {
                $merge(a, b)
            }
            #[inline(always)]
            fn finish(&self, acc: C, n: usize) -> O {
                $finish(acc, n)
            }
            $($extra)*
        }
    };
}

/// NaN-propagating maximum: of two numbers the greater (`a` on a tie, so ±0 keeps the
/// first), NaN when either is NaN.
///
/// The last choice is between the max and `a + b`, never the accumulator `a` as loaded: as
/// `if b > a || b.is_nan() { b } else { a }` the column fold's `*acc = max_nan(*acc, x)`
/// became a store only where `b` wins, which LLVM emits as `vmaskmovps` under AVX2 —
/// microcoded on AMD Zen 3, where amax over the first dim of [8192, 8192] f32 read at
/// 0.4–0.6 of the read loop. Now a max, a NaN test, a blend and a plain store. (Integers
/// have no NaN arm, so for i64, which has no AVX2 max, LLVM still masks the store.)
#[inline(always)]
fn max_nan<C: Compute>(a: C, b: C) -> C {
    let m = if b > a { b } else { a };
    if a.is_nan() | b.is_nan() {
        a.add(b)
    } else {
        m
    }
}

/// NaN-propagating minimum (as [`max_nan`]).
#[inline(always)]
fn min_nan<C: Compute>(a: C, b: C) -> C {
    let m = if b < a { b } else { a };
    if a.is_nan() | b.is_nan() {
        a.add(b)
    } else {
        m
    }
}

/// The fast path of amax/amin over a contiguous run: blocks converted to `C`, the extreme
/// by 16 independent lanes, NaN detected on the side.
macro_rules! extreme_run {
    ($scan:path, $merge:ident) => {
        #[inline(always)]
        fn fold_run(&self, xs: &[I], _: i64, _: i64) -> C {
            let mut buf = [C::ZERO; BLOCK];
            let mut acc = self.identity();
            for chunk in xs.chunks(BLOCK) {
                let b = convert_block(chunk, &mut buf);
                let (m, nan) = $scan(b);
                let m = if nan { b.iter().copied().find(|x| x.is_nan()).unwrap_or(m) } else { m };
                acc = $merge(acc, m);
            }
            acc
        }
    };
}

one_value_reducer!(AMax: Compute, identity = C::LOWEST, merge = max_nan, finish = |a: C, _| a.cast(),
    extreme_run!(max_and_nan::<C, true>, max_nan););
one_value_reducer!(AMin: Compute, identity = C::HIGHEST, merge = min_nan, finish = |a: C, _| a.cast(),
    extreme_run!(min_and_nan::<C, true>, min_nan););

/// Merges two (max, Σ e^(x − max)) pairs.
#[inline(always)]
fn lse_merge<C: FloatCompute>((m1, s1): (C, C), (m2, s2): (C, C)) -> (C, C) {
    if m1 == m2 {
        // Equal maxima (±∞ included): the sums add, no rescale (∞ − ∞ would be NaN).
        (m1, s1.add(s2))
    } else if m2 > m1 {
        (m2, s2.add(s1.mul(m1.sub(m2).exp())))
    } else if m1 > m2 {
        (m1, s1.add(s2.mul(m2.sub(m1).exp())))
    } else {
        // A NaN maximum (only reached through a NaN sum elsewhere): NaN.
        (m1, C::NAN)
    }
}

impl<I: Element, C: SumExp, O: Element> Reducer for LogSumExp<I, C, O> {
    type In = I;
    type Acc = (C, C);
    type Out = O;
    no_params!();
    #[inline(always)]
    fn identity(&self) -> (C, C) {
        (C::LOWEST, C::ZERO)
    }
    #[inline(always)]
    fn fold(&self, acc: (C, C), x: I, _: i64) -> (C, C) {
        let x: C = x.cast();
        if x.is_nan() {
            return (acc.0, C::NAN);
        }
        lse_merge(acc, (x, C::ONE))
    }
    #[inline(always)]
    fn combine(&self, a: (C, C), b: (C, C)) -> (C, C) {
        if a.1.is_nan() || b.1.is_nan() {
            return (a.0, C::NAN);
        }
        lse_merge(a, b)
    }
    /// Per block: the maximum (16 lanes), then Σ e^(x − max) with the vector `exp`; one
    /// pass over memory (the block is re-read from L1).
    #[inline(always)]
    fn fold_run(&self, xs: &[I], _: i64, _: i64) -> (C, C) {
        let mut buf = [C::ZERO; BLOCK];
        let mut acc = self.identity();
        for chunk in xs.chunks(BLOCK) {
            let b = convert_block(chunk, &mut buf);
            // The maximum without NaN flags: a NaN next to a finite maximum makes the sum
            // NaN by itself (e^NaN), and only the rare ±∞ blocks look for one.
            let m = max_by_gt(b);
            let block = if m == C::LOWEST || m == C::HIGHEST {
                if b.iter().any(|x| x.is_nan()) {
                    (m, C::NAN)
                } else {
                    // All −∞ (each adds 1 at an equal maximum), or +∞ present (only the +∞
                    // count).
                    (m, C::from_count(b.iter().filter(|&&x| x == m).count() as f64))
                }
            } else {
                (m, C::sum_exp(b, m))
            };
            acc = self.combine(acc, block);
        }
        acc
    }
    #[inline(always)]
    fn finish(&self, (m, s): (C, C), _: usize) -> O {
        if s == C::ZERO {
            // Nothing folded: ln 0 = −∞.
            return C::LOWEST.cast();
        }
        // In f64: an f64 output (softmax's pass) keeps m + ln s unrounded even at |m| ≫ 1.
        let (m, s): (f64, f64) = (m.cast(), s.cast());
        (m + s.ln()).cast()
    }
}

/// Welford's running (count, mean, Σ(x − mean)²), merged by Chan's formula; `var` or, with
/// `SQRT`, `std`, dividing by `n − correction` (NaN or ∞ when that is ≤ 0, as PyTorch).
pub(crate) struct Var<I, C, O, const SQRT: bool> {
    correction: f64,
    _types: Types<I, C, O>,
}

impl<I: Element, C: FloatCompute, O: Element, const SQRT: bool> Reducer for Var<I, C, O, SQRT> {
    type In = I;
    type Acc = (f64, C, C);
    type Out = O;
    /// Welford's update is exact enough over long runs; longer leaves write and merge
    /// fewer 16-byte accumulator rows.
    const COLUMN_LEAF_ROWS: usize = 256;
    fn new(params: &[Scalar]) -> Self {
        Var { correction: params.first().map_or(1.0, |p| p.to_f64()), _types: PhantomData }
    }
    #[inline(always)]
    fn identity(&self) -> (f64, C, C) {
        (0.0, C::ZERO, C::ZERO)
    }
    #[inline(always)]
    fn fold(&self, (n, mean, m2): (f64, C, C), x: I, _: i64) -> (f64, C, C) {
        let x: C = x.cast();
        let n = n + 1.0;
        let d = x.sub(mean);
        let mean = mean.add(d.div(C::from_count(n)));
        (n, mean, m2.add(d.mul(x.sub(mean))))
    }
    #[inline(always)]
    fn combine(&self, a: (f64, C, C), b: (f64, C, C)) -> (f64, C, C) {
        if a.0 == 0.0 {
            return b;
        }
        if b.0 == 0.0 {
            return a;
        }
        let n = a.0 + b.0;
        let d = b.1.sub(a.1);
        let mean = a.1.add(d.mul(C::from_count(b.0 / n)));
        let m2 = a.2.add(b.2).add(d.mul(d).mul(C::from_count(a.0 * b.0 / n)));
        (n, mean, m2)
    }
    /// Per block: the block's mean and Σ(x − mean)² (16 lanes each, the block re-read from
    /// L1), merged by Chan's formula: one pass over memory, no division per element.
    #[inline(always)]
    fn fold_run(&self, xs: &[I], _: i64, _: i64) -> (f64, C, C) {
        let mut buf = [C::ZERO; BLOCK];
        let mut acc = self.identity();
        for chunk in xs.chunks(BLOCK) {
            let b = convert_block(chunk, &mut buf);
            let n = b.len() as f64;
            let mean = lane_sum(b, true, |x| x).div(C::from_count(n));
            // The second pass reads the block from cache: the next one streams in meanwhile.
            let m2 = lane_sum(b, false, |x| {
                let d = x.sub(mean);
                d.mul(d)
            });
            acc = self.combine(acc, (n, mean, m2));
        }
        acc
    }
    /// Two rows of leaf accumulators: when every column of both has folded the same count
    /// (a dense column tile), Chan's factors are computed once for the row, not per column.
    #[inline(always)]
    fn combine_rows(&self, a: &mut [(f64, C, C)], b: &[(f64, C, C)]) {
        let (Some(&(na, _, _)), Some(&(nb, _, _))) = (a.first(), b.first()) else {
            return;
        };
        let uniform = na > 0.0 && nb > 0.0 && a.iter().all(|x| x.0 == na) && b.iter().all(|x| x.0 == nb);
        if !uniform {
            for (x, &y) in a.iter_mut().zip(b) {
                *x = self.combine(*x, y);
            }
            return;
        }
        let n = na + nb;
        let (fb, fab) = (C::from_count(nb / n), C::from_count(na * nb / n));
        for (x, &y) in a.iter_mut().zip(b) {
            let d = y.1.sub(x.1);
            *x = (n, x.1.add(d.mul(fb)), x.2.add(y.2).add(d.mul(d).mul(fab)));
        }
    }
    /// Columns: Welford's update, one pass over the leaf's rows — every column has seen the
    /// same count, so the division by it is one multiply by a shared reciprocal — with
    /// mean and Σ(x − mean)² as plain arrays the compiler vectorises (a second pass over
    /// the rows, even from cache, cost as much as reading them from memory).
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [(f64, C, C)], rows: &[&[I]], _: &[i64]) {
        let w = accs.len();
        let Some(first) = rows.first() else {
            return;
        };
        let mut mean: Vec<C> = first.iter().take(w).map(|&x| x.cast()).collect();
        let mut m2_buf = Vec::new();
        let m2 = half_page_apart(&mut m2_buf, w, C::ZERO, mean.as_ptr().cast());
        // Welford's first step: Σ(x − mean)² = (x − x)², 0 but NaN for ±∞ or NaN (so a
        // column of one NaN or ∞ has a NaN variance, as the element-by-element fold gives).
        for (q, &mu) in m2.iter_mut().zip(&mean) {
            let d = mu.sub(mu);
            *q = d.mul(d);
        }
        // The reciprocal of the count after row `r`.
        let inv_after = |r: usize| C::ONE.div(C::from_count((r + 1) as f64));
        let update = |mu: C, q: C, x: C, inv: C| {
            let d = x.sub(mu);
            let mu = mu.add(d.mul(inv));
            (mu, q.add(d.mul(x.sub(mu))))
        };
        // Four rows per sweep (the same updates in the same order): the mean and m2 rows
        // (64 KiB for an 8192-column f32 tile, more than L1) are loaded and stored once for
        // all four (var over dim 0 of [8192, 8192] f32 on AMD Zen 5: two rows per sweep
        // 41-42 GB/s, four 46-47).
        let next = |k: usize| rows.get(k).copied().unwrap_or_default();
        let mut r = 1;
        while r + 3 < rows.len() {
            let quad = [rows[r], rows[r + 1], rows[r + 2], rows[r + 3]];
            let inv = [inv_after(r), inv_after(r + 1), inv_after(r + 2), inv_after(r + 3)];
            for s in (0..w).step_by(ROW_SEGMENT) {
                let e = (s + ROW_SEGMENT).min(w);
                for k in 4..8 {
                    prefetch_row_segment(next(r + k), s);
                }
                let xs = quad[0][s..e].iter().zip(&quad[1][s..e]).zip(quad[2][s..e].iter().zip(&quad[3][s..e]));
                for ((mu, q), ((&x0, &x1), (&x2, &x3))) in mean[s..e].iter_mut().zip(m2[s..e].iter_mut()).zip(xs) {
                    let (m, qq) = update(*mu, *q, x0.cast(), inv[0]);
                    let (m, qq) = update(m, qq, x1.cast(), inv[1]);
                    let (m, qq) = update(m, qq, x2.cast(), inv[2]);
                    (*mu, *q) = update(m, qq, x3.cast(), inv[3]);
                }
            }
            r += 4;
        }
        // At most three rows are left.
        for (r, row) in rows.iter().enumerate().skip(r) {
            let inv1 = inv_after(r);
            row_segments(rows, r, w, |s, e| {
                for ((mu, q), &x) in mean[s..e].iter_mut().zip(m2[s..e].iter_mut()).zip(row[s..e].iter()) {
                    (*mu, *q) = update(*mu, *q, x.cast(), inv1);
                }
            });
        }
        let n = rows.len() as f64;
        for ((a, &mu), &q) in accs.iter_mut().zip(&mean).zip(m2.iter()) {
            *a = (n, mu, q);
        }
    }
    #[inline(always)]
    fn finish(&self, (n, _, m2): (f64, C, C), _: usize) -> O {
        let var = m2.div(C::from_count((n - self.correction).max(0.0)));
        if SQRT {
            var.sqrt().cast()
        } else {
            var.cast()
        }
    }
}

/// Σ f(x) over a slice with 64 independent accumulators (four vectors of 16 lanes for
/// f32, so the adds are not one dependent chain), combined pairwise; with `prefetch`,
/// asking for the next block as it goes ([`prefetch_next_block`]).
#[inline(always)]
fn lane_sum<C: FloatCompute>(xs: &[C], prefetch: bool, f: impl Fn(C) -> C) -> C {
    const LANES: usize = 64;
    let mut acc = [C::ZERO; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for (i, c) in (&mut chunks).enumerate() {
        if prefetch {
            for q in (0..LANES).step_by(16) {
                prefetch_next_block(xs, LANES * i + q);
            }
        }
        for k in 0..LANES {
            acc[k] = acc[k].add(f(c[k]));
        }
    }
    // The rest's terms padded with +0 (no lane's bits change: lanes start at +0, so are
    // never -0), and the lanes through `black_box` before their final sum: `acc` is only
    // indexed by constants and the loop above keeps it in registers (indexed by position,
    // or with its final sum in sight, LLVM kept it on the stack, stored and reloaded every
    // step).
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut terms = [C::ZERO; LANES];
        for (t, &x) in terms.iter_mut().zip(rest) {
            *t = f(x);
        }
        for k in 0..LANES {
            acc[k] = acc[k].add(terms[k]);
        }
    }
    let mut acc = std::hint::black_box(acc);
    let mut half = LANES / 2;
    while half > 0 {
        for k in 0..half {
            acc[k] = acc[k].add(acc[k + half]);
        }
        half /= 2;
    }
    acc[0]
}

/// `w` elements of `buf` (filled with `fill`) starting on a line half a page (mod 4 KiB)
/// after `other` ([`half_page_skew`]): a column fold that stores to one row and loads the
/// next from the other, index by index, then never stalls on 4K aliasing, as two rows of
/// 16 KiB allocated one after the other did. `T` is a primitive (its size its alignment,
/// so the skew is a whole number of elements).
fn half_page_apart<T: Copy>(buf: &mut Vec<T>, w: usize, fill: T, other: *const u8) -> &mut [T] {
    let size = std::mem::size_of::<T>().max(1);
    buf.clear();
    buf.resize(w + PAGE / size, fill);
    let k = half_page_skew(buf.as_ptr() as usize, other as usize) / size;
    &mut buf[k..k + w]
}

mod arg;
