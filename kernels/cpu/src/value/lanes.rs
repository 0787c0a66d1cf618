//! `Value` for SIMD vectors, sized for 512-bit registers: fixed arrays with per-lane loops
//! (which LLVM vectorizes) for `f32` ([`F32x16`]), the integers and `bool`; a `wide`
//! vector for `f64` ([`F64x4`]).

use super::math;
use super::math32 as m32;
use super::scalar::Lane;
use super::{Mask, Value};
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use tensor_core::Element;
use wide::f64x4;

/// An element type the block kernels can run on: its one-lane and its vector `Value`.
pub trait SimdElement: Element {
    /// One lane (tails): [`Lane<Self>`](Lane).
    type One: Value<Elem = Self, Mask = bool>;
    /// The SIMD vector of this element.
    type Lanes: Value<Elem = Self>;
}

/// The SIMD vector `Value` of element `E` (`Lanes<f32>` is [`F32x16`]).
pub type Lanes<E> = <E as SimdElement>::Lanes;

impl SimdElement for f32 {
    type One = Lane<f32>;
    type Lanes = F32x16;
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
array_element!(bool => 64, u8 => 64, i8 => 64, i16 => 32, i32 => 16, i64 => 8);

/// `[f(0), f(1), ..., f(N - 1)]` by a plain loop. Unlike `std::array::from_fn` and
/// `<[T; N]>::map`, which LLVM may leave out of line for long arrays (then compiled for the
/// baseline target only), this always inlines into the block kernels' instruction-set
/// copies, where the loop is vectorized with their registers.
#[inline(always)]
pub(super) fn lanes_from_fn<T: Copy + Default, const N: usize>(f: impl FnMut(usize) -> T) -> [T; N] {
    overwrite([T::default(); N], f)
}

/// [`lanes_from_fn`] writing into a given array (for elements without `Default`).
#[inline(always)]
fn overwrite<T: Copy, const N: usize>(mut r: [T; N], mut f: impl FnMut(usize) -> T) -> [T; N] {
    for (i, x) in r.iter_mut().enumerate() {
        *x = f(i);
    }
    r
}

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
        ArrayMask(lanes_from_fn(|i| self.0[i] & o.0[i]))
    }
}
impl<const N: usize> BitOr for ArrayMask<N> {
    type Output = Self;
    #[inline(always)]
    fn bitor(self, o: Self) -> Self {
        ArrayMask(lanes_from_fn(|i| self.0[i] | o.0[i]))
    }
}
impl<const N: usize> Not for ArrayMask<N> {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        ArrayMask(lanes_from_fn(|i| !self.0[i]))
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
                ArrayLanes(overwrite(self.0, |i| Lane(self.0[i]).$f(Lane(o.0[i])).0))
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
        ArrayLanes(overwrite(self.0, |i| (-Lane(self.0[i])).0))
    }
}

macro_rules! per_lane {
    (un $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self) -> Self {
            ArrayLanes(overwrite(self.0, |i| Lane(self.0[i]).$f().0))
        }
    )* };
    (bin $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self, o: Self) -> Self {
            ArrayLanes(overwrite(self.0, |i| Lane(self.0[i]).$f(Lane(o.0[i])).0))
        }
    )* };
    (cmp $($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self, o: Self) -> ArrayMask<N> {
            ArrayMask(lanes_from_fn(|i| Lane(self.0[i]).$f(Lane(o.0[i]))))
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
        ArrayLanes(overwrite(t.0, |i| if m.0[i] { t.0[i] } else { f.0[i] }))
    }
    per_lane!(bin max, min, pow);
    per_lane!(un abs, exp, exp2, ln, log2, sqrt, tanh, sin, cos, recip, floor, ceil, round);
}

// ---------------------------------------------------------------------------------------
// Floats: `F32x16` is an array (transcendentals in `math32`, in f32 lanes); `F64x4` is a
// `wide` vector (transcendentals in `math::m64`).

/// Sixteen `f32` lanes: a plain array whose operations are per-lane loops that LLVM
/// vectorizes for the enclosing function's target features (four SSE registers by
/// default, two AVX registers or one AVX-512 register in the block kernels'
/// runtime-dispatched copies, see `cpu::map`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C, align(64))]
pub struct F32x16(pub [f32; 16]);

/// Four `f64` lanes (`wide::f64x4`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct F64x4(pub f64x4);

/// Comparison result of [`F32x16`]: all-ones / all-zeros bits per lane.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct F32x16Mask(pub [u32; 16]);

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

float_vec!(F64x4, F64x4Mask, f64x4, f64, 4, m64);

/// `r[i] = f(a[i], b[i])`.
#[inline(always)]
fn zip16<T: Copy, U: Copy + Default>(a: [T; 16], b: [T; 16], f: impl Fn(T, T) -> U) -> [U; 16] {
    lanes_from_fn(|i| f(a[i], b[i]))
}

/// All-ones if `c`.
#[inline(always)]
fn bits(c: bool) -> u32 {
    (c as u32).wrapping_neg()
}

impl BitAnd for F32x16Mask {
    type Output = Self;
    #[inline(always)]
    fn bitand(self, o: Self) -> Self {
        F32x16Mask(zip16(self.0, o.0, |a, b| a & b))
    }
}
impl BitOr for F32x16Mask {
    type Output = Self;
    #[inline(always)]
    fn bitor(self, o: Self) -> Self {
        F32x16Mask(zip16(self.0, o.0, |a, b| a | b))
    }
}
impl Not for F32x16Mask {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        F32x16Mask(lanes_from_fn(|i| !self.0[i]))
    }
}
impl Mask for F32x16Mask {
    const LANES: usize = 16;
    #[inline(always)]
    fn write_bools(self, dst: &mut [bool]) {
        for (d, m) in dst[..16].iter_mut().zip(self.0) {
            *d = m != 0;
        }
    }
}

macro_rules! f32x16_binop {
    ($($tr:ident $f:ident $op:tt),*) => { $(
        impl $tr for F32x16 {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                F32x16(zip16(self.0, o.0, |a, b| a $op b))
            }
        }
    )* };
}
f32x16_binop!(Add add +, Sub sub -, Mul mul *, Div div /);

impl Neg for F32x16 {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        F32x16(lanes_from_fn(|i| -self.0[i]))
    }
}

macro_rules! f32x16_cmp {
    ($($f:ident $op:tt),*) => { $(
        #[inline(always)]
        fn $f(self, o: Self) -> F32x16Mask {
            F32x16Mask(zip16(self.0, o.0, |a, b| bits(a $op b)))
        }
    )* };
}

macro_rules! f32x16_math {
    ($($f:ident),*) => { $(
        #[inline(always)]
        fn $f(self) -> Self {
            F32x16(m32::$f(self.0))
        }
    )* };
}

#[allow(clippy::float_cmp)]
impl Value for F32x16 {
    type Elem = f32;
    type Mask = F32x16Mask;
    const LANES: usize = 16;
    #[inline(always)]
    fn splat(e: f32) -> Self {
        F32x16([e; 16])
    }
    #[inline(always)]
    fn load(src: &[f32]) -> Self {
        let mut a = [0.0; 16];
        a.copy_from_slice(&src[..16]);
        F32x16(a)
    }
    #[inline(always)]
    fn store(self, dst: &mut [f32]) {
        dst[..16].copy_from_slice(&self.0);
    }
    f32x16_cmp!(eq ==, ne !=, lt <, le <=, gt >, ge >=);
    #[inline(always)]
    fn select(m: F32x16Mask, t: Self, f: Self) -> Self {
        F32x16(lanes_from_fn(|i| f32::from_bits((m.0[i] & t.0[i].to_bits()) | (!m.0[i] & f.0[i].to_bits()))))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        F32x16(lanes_from_fn(|i| f32::from_bits(self.0[i].to_bits() & 0x7fff_ffff)))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        F32x16(zip16(self.0, o.0, m32::max_lane))
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        F32x16(zip16(self.0, o.0, m32::min_lane))
    }
    #[inline(always)]
    fn pow(self, e: Self) -> Self {
        F32x16(m32::pow(self.0, e.0))
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        F32x16(lanes_from_fn(|i| self.0[i].sqrt()))
    }
    #[inline(always)]
    fn recip(self) -> Self {
        F32x16(lanes_from_fn(|i| 1.0 / self.0[i]))
    }
    f32x16_math!(exp, exp_nonpositive, sigmoid, exp2, ln, log2, tanh, sin, cos, floor, ceil, round);
}
