//! The scalar types reductions accumulate in (`f32`, `f64`, `i64`, and each dtype itself for
//! amax/argmax), with total arithmetic: integers wrap, nothing panics.

use tensor_core::Element;

/// A type a built-in reduction accumulates or compares in.
pub trait Compute: Element + PartialOrd {
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
    /// The greatest element of `xs` by `>` and whether any is NaN (the value is unspecified
    /// when one is). Floats override it with register-resident vector lanes.
    #[inline(always)]
    fn scan_max(xs: &[Self]) -> (Self, bool) {
        array_extreme(xs, Self::LOWEST, |x, m| x > m)
    }
    /// The least element of `xs` by `<` and whether any is NaN.
    #[inline(always)]
    fn scan_min(xs: &[Self]) -> (Self, bool) {
        array_extreme(xs, Self::HIGHEST, |x, m| x < m)
    }
}

/// A float accumulator (`f32`, `f64`).
pub trait FloatCompute: Compute {
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
    /// Σ x over a slice, in independent vector lanes combined at the end.
    fn sum_lanes(xs: &[Self]) -> Self;
    /// Σ (x − mean)² over a slice, in independent vector lanes.
    fn sum_sq_dev(xs: &[Self], mean: Self) -> Self;
}

macro_rules! float_compute {
    ($($t:ty: $n:literal),*) => { $(
        impl Compute for $t {
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn is_nan(self) -> bool { <$t>::is_nan(self) }
            #[inline(always)]
            fn scan_max(xs: &[Self]) -> (Self, bool) {
                vector_extreme::<$t, $n>(xs, <$t>::NEG_INFINITY, |x, m| x > m)
            }
            #[inline(always)]
            fn scan_min(xs: &[Self]) -> (Self, bool) {
                vector_extreme::<$t, $n>(xs, <$t>::INFINITY, |x, m| x < m)
            }
        }
        impl FloatCompute for $t {
            const NAN: Self = <$t>::NAN;
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn div(self, o: Self) -> Self { self / o }
            #[inline(always)] fn exp(self) -> Self { <$t>::exp(self) }
            #[inline(always)] fn sqrt(self) -> Self { <$t>::sqrt(self) }
            #[inline(always)] fn from_count(n: f64) -> Self { n as $t }
            #[inline(always)]
            fn sum_lanes(xs: &[Self]) -> Self {
                <$t as SumExp>::sum_map(xs, |v| v)
            }
            #[inline(always)]
            fn sum_sq_dev(xs: &[Self], mean: Self) -> Self {
                use tensor_kernels_cpu::value::Value;
                let m = <<$t as SumExp>::Vector as Value>::splat(mean);
                <$t as SumExp>::sum_map(xs, move |v| {
                    let d = v - m;
                    d * d
                })
            }
        }
    )* };
}
// One 512-bit register of lanes per accumulator (two 256-bit ones under AVX2).
float_compute!(f32: 16, f64: 8);

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

/// Sums over a slice in explicit vectors of the lane algebra: 16 (f32) or 4 (f64) lanes,
/// two independent accumulators, one vector per loop step.
pub trait SumExp: FloatCompute {
    /// The lane algebra's vector of this type.
    type Vector: tensor_kernels_cpu::value::Value<Elem = Self>;
    /// Σ f(x): `f` maps a vector of elements (the tail goes through it as one padded vector
    /// whose padding lanes are dropped).
    fn sum_map(xs: &[Self], f: impl Fn(Self::Vector) -> Self::Vector) -> Self;
    /// Σ e^(x − m).
    #[inline(always)]
    fn sum_exp(xs: &[Self], m: Self) -> Self {
        use tensor_kernels_cpu::value::Value;
        let mv = Self::Vector::splat(m);
        Self::sum_map(xs, move |v| (v - mv).exp())
    }
}

macro_rules! sum_exp {
    ($t:ty, $v:ty, $lanes:literal) => {
        impl SumExp for $t {
            type Vector = $v;
            #[inline(always)]
            fn sum_map(xs: &[$t], f: impl Fn($v) -> $v) -> $t {
                use tensor_kernels_cpu::value::Value;
                let mut a0 = <$v>::zero();
                let mut a1 = <$v>::zero();
                let mut pairs = xs.chunks_exact(2 * $lanes);
                for c in &mut pairs {
                    // One step per pair of vectors: no widening across iterations (gathers).
                    tensor_kernels_cpu::map::no_loop_vectorize();
                    a0 = a0 + f(<$v>::load(&c[..$lanes]));
                    a1 = a1 + f(<$v>::load(&c[$lanes..]));
                }
                let rest = pairs.remainder();
                let mut lanes = [0 as $t; $lanes];
                let mut k = 0;
                while k < rest.len() {
                    let n = (rest.len() - k).min($lanes);
                    let mut pad = [0 as $t; $lanes];
                    pad[..n].copy_from_slice(&rest[k..k + n]);
                    let mut y = [0 as $t; $lanes];
                    f(<$v>::load(&pad)).store(&mut y);
                    for (l, &v) in lanes.iter_mut().zip(&y[..n]) {
                        *l += v;
                    }
                    k += n;
                }
                let mut acc = [0 as $t; $lanes];
                (a0 + a1).store(&mut acc);
                for (a, l) in acc.iter_mut().zip(lanes) {
                    *a += l;
                }
                let mut half = $lanes / 2;
                while half > 0 {
                    for i in 0..half {
                        acc[i] += acc[i + half];
                    }
                    half /= 2;
                }
                acc[0]
            }
        }
    };
}
sum_exp!(f32, tensor_kernels_cpu::value::F32x16, 16);
sum_exp!(f64, tensor_kernels_cpu::value::F64x4, 4);

/// The greatest element of a slice by `>` and whether any is NaN (the value is unspecified
/// when one is).
#[inline(always)]
pub fn max_and_nan<C: Compute>(xs: &[C]) -> (C, bool) {
    C::scan_max(xs)
}

/// The least element of a slice by `<` and whether any is NaN.
#[inline(always)]
pub fn min_and_nan<C: Compute>(xs: &[C]) -> (C, bool) {
    C::scan_min(xs)
}

/// The extreme by `better` with 16 independent lanes (any element type), and a NaN flag.
#[inline(always)]
fn array_extreme<C: Compute>(xs: &[C], init: C, better: impl Fn(C, C) -> bool) -> (C, bool) {
    let mut m = [init; 16];
    let mut nan = [false; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        for k in 0..16 {
            m[k] = if better(c[k], m[k]) { c[k] } else { m[k] };
            nan[k] |= c[k].is_nan();
        }
    }
    let mut best = init;
    let mut any_nan = false;
    for &x in chunks.remainder().iter().chain(m.iter()) {
        best = if better(x, best) { x } else { best };
        any_nan |= x.is_nan();
    }
    (best, any_nan | nan.iter().any(|&b| b))
}

/// `r[k] = f(k)` for every lane of an array value (a plain loop, always inlined, which LLVM
/// turns into one vector operation; `std::array::from_fn` is not always inlined).
#[inline(always)]
fn lanes<T: Copy, const N: usize>(mut r: [T; N], f: impl Fn(usize) -> T) -> [T; N] {
    for (k, x) in r.iter_mut().enumerate() {
        *x = f(k);
    }
    r
}

/// The extreme by `better` over two register-resident accumulators of `N` float lanes (each
/// updated as a whole value per step, so LLVM keeps it in a vector register), with NaNs
/// flagged by an unordered-compare mask on the side.
#[inline(always)]
fn vector_extreme<C: Compute, const N: usize>(xs: &[C], init: C, better: impl Fn(C, C) -> bool) -> (C, bool) {
    let mut m0 = [init; N];
    let mut m1 = [init; N];
    let mut bad = [0u32; N];
    let mut chunks = xs.chunks_exact(2 * N);
    for c in &mut chunks {
        tensor_kernels_cpu::map::no_loop_vectorize();
        let (a, b) = c.split_at(N);
        m0 = lanes(m0, |k| if better(a[k], m0[k]) { a[k] } else { m0[k] });
        m1 = lanes(m1, |k| if better(b[k], m1[k]) { b[k] } else { m1[k] });
        bad = lanes(bad, |k| bad[k] | (a[k].is_nan() | b[k].is_nan()) as u32);
    }
    let mut best = init;
    let mut any_nan = bad.iter().any(|&b| b != 0);
    for &x in chunks.remainder().iter().chain(m0.iter()).chain(m1.iter()) {
        best = if better(x, best) { x } else { best };
        any_nan |= x.is_nan();
    }
    (best, any_nan)
}

/// Up to [`BLOCK`] elements of `xs` as `C`: `xs` itself when `I` is `C`, else converted
/// into `buf`.
#[inline(always)]
pub fn convert_block<'b, I: Element, C: Element>(xs: &'b [I], buf: &'b mut [C; BLOCK]) -> &'b [C] {
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
pub const BLOCK: usize = tensor_kernels_cpu::reduce::ROW_LEAF;
