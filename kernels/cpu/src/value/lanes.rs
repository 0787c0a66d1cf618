//! `Value` for SIMD vectors, sized for 512-bit registers: fixed arrays with per-lane loops
//! (which LLVM vectorizes) for the integers and `bool` (here), for `f32` ([`F32x16`]) and a
//! `wide` vector for `f64` ([`F64x4`]) (both in [`super::floats`]); [`SimdElement`] pairs
//! each element with its vector.

use super::array::{lanes_from_fn, overwrite};
use super::floats::{F32x16, F64x4};
use super::scalar::Lane;
use super::{Mask, Value};
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use tensor_core::Element;

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
