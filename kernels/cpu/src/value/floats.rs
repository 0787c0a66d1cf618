//! The float vectors: [`F32x16`], sixteen `f32` lanes in a plain array (transcendentals in
//! [`super::math32`], in f32 lanes), and [`F64x4`], a `wide` vector (transcendentals in
//! `math::m64`). The scalar [`super::Lane`] of a float runs the same code on a splat.

use super::array::lanes_from_fn;
use super::math;
use super::math32 as m32;
use super::{Mask, Value};
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use wide::f64x4;

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
