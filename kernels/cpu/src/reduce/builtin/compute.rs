//! The scalar types reductions accumulate in (`f32`, `f64`, `i64`, and each dtype itself for
//! amax/argmax), with total arithmetic: integers wrap, nothing panics.

use tensor_core::Element;

/// A type a built-in reduction accumulates or compares in.
pub(crate) trait Compute: Element + PartialOrd {
    /// The least value (−∞ for floats, `MIN` for integers, `false`).
    const LOWEST: Self;
    /// The greatest value (+∞, `MAX`, `true`).
    const HIGHEST: Self;
    /// `a + b` (wrapping for integers; or for bool).
    fn add(self, o: Self) -> Self;
    /// `a * b` (wrapping for integers; and for bool).
    fn mul(self, o: Self) -> Self;
    /// True for a float NaN.
    fn is_nan(self) -> bool;
}

/// A float accumulator (`f32`, `f64`).
pub(crate) trait FloatCompute: Compute {
    /// NaN.
    const NAN: Self;
    /// `a - b`.
    fn sub(self, o: Self) -> Self;
    /// `a / b`.
    fn div(self, o: Self) -> Self;
    /// e^x.
    fn exp(self) -> Self;
    /// √x.
    fn sqrt(self) -> Self;
    /// `n` as this type.
    fn from_count(n: f64) -> Self;
}

macro_rules! float_compute {
    ($($t:ty),*) => { $(
        impl Compute for $t {
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn is_nan(self) -> bool { <$t>::is_nan(self) }
        }
        impl FloatCompute for $t {
            const NAN: Self = <$t>::NAN;
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn div(self, o: Self) -> Self { self / o }
            #[inline(always)] fn exp(self) -> Self { <$t>::exp(self) }
            #[inline(always)] fn sqrt(self) -> Self { <$t>::sqrt(self) }
            #[inline(always)] fn from_count(n: f64) -> Self { n as $t }
        }
    )* };
}
float_compute!(f32, f64);

macro_rules! int_compute {
    ($($t:ty),*) => { $(
        impl Compute for $t {
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn is_nan(self) -> bool { false }
        }
    )* };
}
int_compute!(u8, i8, i16, i32, i64);

impl Compute for bool {
    const LOWEST: Self = false;
    const HIGHEST: Self = true;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
}

/// Σ e^(x − m) over a slice whose elements are all `<= m`, 16 (f32) or 4 (f64) lanes at a
/// time with the lane algebra's vector `exp_nonpositive` (`exp`'s bits there, cheaper).
pub(crate) trait SumExp: FloatCompute {
    /// Σ e^(x − m), every `x <= m` (or NaN).
    fn sum_exp(xs: &[Self], m: Self) -> Self;
}

macro_rules! sum_exp {
    ($t:ty, $v:ty, $lanes:literal) => {
        impl SumExp for $t {
            #[inline(always)]
            fn sum_exp(xs: &[$t], m: $t) -> $t {
                use crate::value::Value;
                let mv = <$v>::splat(m);
                let mut acc = <$v>::zero();
                let mut chunks = xs.chunks_exact($lanes);
                for (k, c) in (&mut chunks).enumerate() {
                    // One vector per iteration: no widening across iterations (gathers).
                    crate::map::no_loop_vectorize();
                    prefetch_next_block(xs, k * $lanes);
                    acc = acc + (<$v>::load(c) - mv).exp_nonpositive();
                }
                let mut lanes = [0 as $t; $lanes];
                acc.store(&mut lanes);
                let tail: $t = chunks.remainder().iter().map(|&x| (x - m).exp()).sum();
                lanes.iter().sum::<$t>() + tail
            }
        }
    };
}
sum_exp!(f32, crate::value::F32x16, 16);
sum_exp!(f64, crate::value::F64x4, 4);

/// The greatest element of a slice by `>` (16 independent lanes) and whether any is NaN.
#[inline(always)]
pub(crate) fn max_and_nan<C: Compute, const PREFETCH: bool>(xs: &[C]) -> (C, bool) {
    max_scan::<C, PREFETCH, true>(xs)
}

/// The greatest element of a slice by `>` (16 independent lanes; a NaN is passed over, and
/// an all-NaN slice gives `C::LOWEST`), for folds whose NaN shows up on its own (softmax's
/// and logsumexp's Σ e^(x − max) is NaN with a NaN anywhere): no NaN flags are kept, which
/// [`max_and_nan`]'s loop spends a third of its instructions on.
#[inline(always)]
pub(crate) fn max_by_gt<C: Compute>(xs: &[C]) -> C {
    max_scan::<C, false, false>(xs).0
}

/// [`max_and_nan`], with the NaN flags kept only when `NAN` (else `false`).
#[inline(always)]
fn max_scan<C: Compute, const PREFETCH: bool, const NAN: bool>(xs: &[C]) -> (C, bool) {
    let mut m = [C::LOWEST; 16];
    // NaN flags as all-ones u32 masks, an f32 compare's own width: `bool` flags cost four
    // packing instructions per two vectors (amax over the rows of [8192, 8192] f32 on AMD
    // Zen 3 ran below argmax, whose scan already kept masks).
    let mut nan = [0u32; 16];
    let mut chunks = xs.chunks_exact(16);
    for (i, c) in (&mut chunks).enumerate() {
        if PREFETCH {
            prefetch_next_block(xs, 16 * i);
        }
        for k in 0..16 {
            m[k] = if c[k] > m[k] { c[k] } else { m[k] };
            if NAN {
                nan[k] |= u32::from(c[k].is_nan()).wrapping_neg();
            }
        }
    }
    // Through `black_box`: the lanes' final reduction out of sight, LLVM keeps the loop
    // above one vector per step (seeing it, it vectorised the loop as shuffles of lanes).
    let (m, nan) = std::hint::black_box((m, nan));
    let mut best = C::LOWEST;
    let mut any_nan = false;
    for &x in chunks.remainder().iter().chain(m.iter()) {
        best = if x > best { x } else { best };
        any_nan |= NAN && x.is_nan();
    }
    (best, any_nan | nan.iter().any(|&b| b != 0))
}

/// The least element of a slice by `<` and whether any is NaN.
#[inline(always)]
pub(crate) fn min_and_nan<C: Compute, const PREFETCH: bool>(xs: &[C]) -> (C, bool) {
    let mut m = [C::HIGHEST; 16];
    let mut nan = [0u32; 16]; // masks, as in `max_scan`
    let mut chunks = xs.chunks_exact(16);
    for (i, c) in (&mut chunks).enumerate() {
        if PREFETCH {
            prefetch_next_block(xs, 16 * i);
        }
        for k in 0..16 {
            m[k] = if c[k] < m[k] { c[k] } else { m[k] };
            nan[k] |= u32::from(c[k].is_nan()).wrapping_neg();
        }
    }
    // Through `black_box`: the lanes' final reduction out of sight, LLVM keeps the loop
    // above one vector per step (seeing it, it vectorised the loop as shuffles of lanes).
    let (m, nan) = std::hint::black_box((m, nan));
    let mut best = C::HIGHEST;
    let mut any_nan = false;
    for &x in chunks.remainder().iter().chain(m.iter()) {
        best = if x < best { x } else { best };
        any_nan |= x.is_nan();
    }
    (best, any_nan | nan.iter().any(|&b| b != 0))
}

/// Up to [`BLOCK`] elements of `xs` as `C`: `xs` itself when `I` is `C`, else converted
/// into `buf`.
#[inline(always)]
pub(crate) fn convert_block<'b, I: Element, C: Element>(xs: &'b [I], buf: &'b mut [C; BLOCK]) -> &'b [C] {
    let n = xs.len().min(BLOCK);
    if std::any::TypeId::of::<I>() == std::any::TypeId::of::<C>() {
        // SAFETY: `I` and `C` are the same type, so the slice is reinterpreted as itself.
        return unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<C>(), n) };
    }
    for (b, &x) in buf.iter_mut().zip(&xs[..n]) {
        *b = x.cast();
    }
    &buf[..n]
}

/// Elements a block fast path converts and folds at a time (a row leaf's size).
pub(crate) const BLOCK: usize = crate::reduce::ROW_LEAF;

/// Asks for the 16 elements one [`BLOCK`] after `xs[at..]` (the next block of a row leaf's
/// run, or the next leaf's), one line per call (a burst of prefetches per block stalls).
/// Called once per 16 elements in *one* pass over each block: the compute-bound pass of a
/// two-pass fold (logsumexp's e^x, which reads the block from cache, so the next block
/// streams in meanwhile: measured logsumexp over rows 0.46 → 0.8 of the read speed; asking
/// in both passes fell back to 0.55), or the only pass of a one-pass fold (sum, prod, mean,
/// amax, amin) and var's first: on an AMD Zen 5 machine, whose hardware prefetchers kept
/// less in flight, amax over the rows of [8192, 8192] f32 went 0.56 → 1.06–1.11 of the read
/// loop and sum 0.93–1.01 → 1.08–1.09 when the loop itself ran at 48–49 GB/s (0.80 / 0.82
/// in a run where it reached 64).
#[inline(always)]
pub(crate) fn prefetch_next_block<C>(xs: &[C], at: usize) {
    let next = xs.as_ptr().wrapping_add(BLOCK + at).cast::<u8>();
    crate::map::prefetch_lines(next, 16 * std::mem::size_of::<C>());
}
