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
    /// ln x.
    fn ln(self) -> Self;
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
            #[inline(always)] fn ln(self) -> Self { <$t>::ln(self) }
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
