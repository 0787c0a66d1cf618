//! `Value` for SIMD vectors: `wide` vectors for `f32`/`f64`, fixed arrays with per-lane
//! loops (which LLVM vectorizes) for the integers and `bool`.

use super::math;
use super::scalar::Lane;
use super::{Mask, Value};
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use tensor_core::Element;
use wide::{f32x8, f64x4};

/// An element type the block kernels can run on: its one-lane and its vector `Value`.
pub trait SimdElement: Element {
    /// One lane (tails): [`Lane<Self>`](Lane).
    type One: Value<Elem = Self, Mask = bool>;
    /// The SIMD vector of this element.
    type Lanes: Value<Elem = Self>;
}

/// The SIMD vector `Value` of element `E` (`Lanes<f32>` is [`F32x8`]).
pub type Lanes<E> = <E as SimdElement>::Lanes;

impl SimdElement for f32 {
    type One = Lane<f32>;
    type Lanes = F32x8;
}
impl SimdElement for f64 {
    type One = Lane<f64>;
    type Lanes = F64x4;
}
macro_rules! array_element {
    ($($t:ty => $n:literal),*) => { $(
        impl SimdElement for $t {
            type One = Lane<$t>;
            type Lanes = ArrayLanes<$t, $n>;
        }
    )* };
}
array_element!(bool => 32, u8 => 32, i8 => 32, i16 => 16, i32 => 8, i64 => 4);

// ---------------------------------------------------------------------------------------
// Arrays (integers, bool): every method is the `Lane` method per lane, so vector and
// scalar results are identical by construction.

/// `N` lanes of an integer or `bool` element; each operation is [`Lane`]'s, per lane.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct ArrayLanes<E, const N: usize>(pub [E; N]);

/// Comparison result of [`ArrayLanes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct ArrayMask<const N: usize>(pub [bool; N]);

impl<const N: usize> BitAnd for ArrayMask<N> {
    type Output = Self;
    #[inline(always)]
    fn bitand(self, o: Self) -> Self {
        ArrayMask(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
}
impl<const N: usize> BitOr for ArrayMask<N> {
    type Output = Self;
    #[inline(always)]
    fn bitor(self, o: Self) -> Self {
        ArrayMask(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
}
impl<const N: usize> Not for ArrayMask<N> {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        ArrayMask(self.0.map(|b| !b))
    }
}
impl<const N: usize> Mask for ArrayMask<N> {
    const LANES: usize = N;
    #[inline(always)]
    fn write_bools(self, dst: &mut [bool]) {
        dst[..N].copy_from_slice(&self.0);
    }
}

macro_rules! array_binop {
    ($tr:ident, $f:ident) => {
        impl<E: Copy, const N: usize> $tr for ArrayLanes<E, N>
        where
            Lane<E>: $tr<Output = Lane<E>>,
        {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                ArrayLanes(std::array::from_fn(|i| Lane(self.0[i]).$f(Lane(o.0[i])).0))
            }
        }
    };
}
array_binop!(Add, add);
array_binop!(Sub, sub);
array_binop!(Mul, mul);
array_binop!(Div, div);

impl<E: Copy, const N: usize> Neg for ArrayLanes<E, N>
where
    Lane<E>: Neg<Output = Lane<E>>,
{
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        ArrayLanes(self.0.map(|x| (-Lane(x)).0))
    }
}

macro_rules! per_lane {
    (un $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self) -> Self {
            ArrayLanes(self.0.map(|x| Lane(x).$f().0))
        }
    )* };
    (bin $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self, o: Self) -> Self {
            ArrayLanes(std::array::from_fn(|i| Lane(self.0[i]).$f(Lane(o.0[i])).0))
        }
    )* };
    (cmp $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self, o: Self) -> ArrayMask<N> {
            ArrayMask(std::array::from_fn(|i| Lane(self.0[i]).$f(Lane(o.0[i]))))
        }
    )* };
}

impl<E: Element, const N: usize> Value for ArrayLanes<E, N>
where
    Lane<E>: Value<Elem = E, Mask = bool>,
{
    type Elem = E;
    type Mask = ArrayMask<N>;
    const LANES: usize = N;

    #[inline(always)]
    fn splat(e: E) -> Self {
        ArrayLanes([e; N])
    }
    #[inline(always)]
    fn load(src: &[E]) -> Self {
        let mut a = [E::ZERO; N];
        a.copy_from_slice(&src[..N]);
        ArrayLanes(a)
    }
    #[inline(always)]
    fn store(self, dst: &mut [E]) {
        dst[..N].copy_from_slice(&self.0);
    }
    per_lane!(cmp eq, ne, lt, le, gt, ge);
    #[inline(always)]
    fn select(m: ArrayMask<N>, t: Self, f: Self) -> Self {
        ArrayLanes(std::array::from_fn(|i| if m.0[i] { t.0[i] } else { f.0[i] }))
    }
    per_lane!(bin max, min, pow);
    per_lane!(un abs, exp, exp2, ln, log2, sqrt, tanh, sin, cos, recip, floor, ceil, round);
}

// ---------------------------------------------------------------------------------------
// Floats: `wide` vectors; transcendentals in `math` (f32 computes them in f64).

/// Eight `f32` lanes (`wide::f32x8`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct F32x8(pub f32x8);

/// Four `f64` lanes (`wide::f64x4`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct F64x4(pub f64x4);

/// Comparison result of [`F32x8`]: all-ones / all-zeros bits per lane.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub struct F32x8Mask(pub f32x8);

/// Comparison result of [`F64x4`]: all-ones / all-zeros bits per lane.
#[derive(Debug, Clone, Copy)]
#[repr(transparent)]
pub struct F64x4Mask(pub f64x4);

macro_rules! float_vec {
    ($V:ident, $M:ident, $w:ident, $t:ident, $n:literal, $m:ident) => {
        impl BitAnd for $M {
            type Output = Self;
            #[inline(always)]
            fn bitand(self, o: Self) -> Self {
                $M(self.0 & o.0)
            }
        }
        impl BitOr for $M {
            type Output = Self;
            #[inline(always)]
            fn bitor(self, o: Self) -> Self {
                $M(self.0 | o.0)
            }
        }
        impl Not for $M {
            type Output = Self;
            #[inline(always)]
            fn not(self) -> Self {
                $M(!self.0)
            }
        }
        impl Mask for $M {
            const LANES: usize = $n;
            #[inline(always)]
            fn write_bools(self, dst: &mut [bool]) {
                let bits = self.0.to_bitmask();
                for (i, d) in dst[..$n].iter_mut().enumerate() {
                    *d = (bits >> i) & 1 != 0;
                }
            }
        }
        impl Add for $V {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                $V(self.0 + o.0)
            }
        }
        impl Sub for $V {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                $V(self.0 - o.0)
            }
        }
        impl Mul for $V {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                $V(self.0 * o.0)
            }
        }
        impl Div for $V {
            type Output = Self;
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                $V(self.0 / o.0)
            }
        }
        impl Neg for $V {
            type Output = Self;
            #[inline(always)]
            fn neg(self) -> Self {
                $V(-self.0)
            }
        }
        impl Value for $V {
            type Elem = $t;
            type Mask = $M;
            const LANES: usize = $n;
            #[inline(always)]
            fn splat(e: $t) -> Self {
                $V($w::splat(e))
            }
            #[inline(always)]
            fn load(src: &[$t]) -> Self {
                let mut a = [0.0; $n];
                a.copy_from_slice(&src[..$n]);
                $V($w::new(a))
            }
            #[inline(always)]
            fn store(self, dst: &mut [$t]) {
                dst[..$n].copy_from_slice(&self.0.to_array());
            }
            #[inline(always)]
            fn eq(self, o: Self) -> $M {
                $M(self.0.simd_eq(o.0))
            }
            #[inline(always)]
            fn ne(self, o: Self) -> $M {
                $M(self.0.simd_ne(o.0))
            }
            #[inline(always)]
            fn lt(self, o: Self) -> $M {
                $M(self.0.simd_lt(o.0))
            }
            #[inline(always)]
            fn le(self, o: Self) -> $M {
                $M(self.0.simd_le(o.0))
            }
            #[inline(always)]
            fn gt(self, o: Self) -> $M {
                $M(self.0.simd_gt(o.0))
            }
            #[inline(always)]
            fn ge(self, o: Self) -> $M {
                $M(self.0.simd_ge(o.0))
            }
            #[inline(always)]
            fn select(m: $M, t: Self, f: Self) -> Self {
                $V(m.0.select(t.0, f.0))
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $V(self.0.abs())
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                let (a, b) = (self.0, o.0);
                let nan = a.is_nan() | b.is_nan();
                // Equal (or ±0): the AND of the bits, so +0 wins.
                let r = a.simd_gt(b).select(a, b.simd_gt(a).select(b, a & b));
                $V(nan.select(a + b, r))
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                let (a, b) = (self.0, o.0);
                let nan = a.is_nan() | b.is_nan();
                // Equal (or ±0): the OR of the bits, so -0 wins.
                let r = a.simd_lt(b).select(a, b.simd_lt(a).select(b, a | b));
                $V(nan.select(a + b, r))
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $V(self.0.sqrt())
            }
            #[inline(always)]
            fn recip(self) -> Self {
                $V($w::splat(1.0) / self.0)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $V(math::$m::floor(self.0))
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $V(math::$m::ceil(self.0))
            }
            #[inline(always)]
            fn round(self) -> Self {
                $V(math::$m::round(self.0))
            }
            #[inline]
            fn pow(self, e: Self) -> Self {
                $V(math::$m::pow(self.0, e.0))
            }
            #[inline]
            fn exp(self) -> Self {
                $V(math::$m::exp(self.0))
            }
            #[inline]
            fn exp2(self) -> Self {
                $V(math::$m::exp2(self.0))
            }
            #[inline]
            fn ln(self) -> Self {
                $V(math::$m::ln(self.0))
            }
            #[inline]
            fn log2(self) -> Self {
                $V(math::$m::log2(self.0))
            }
            #[inline]
            fn tanh(self) -> Self {
                $V(math::$m::tanh(self.0))
            }
            #[inline]
            fn sin(self) -> Self {
                $V(math::$m::sin(self.0))
            }
            #[inline]
            fn cos(self) -> Self {
                $V(math::$m::cos(self.0))
            }
        }
    };
}

float_vec!(F32x8, F32x8Mask, f32x8, f32, 8, m32);
float_vec!(F64x4, F64x4Mask, f64x4, f64, 4, m64);
