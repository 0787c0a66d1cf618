//! `Value` for one lane: the [`Lane`] newtype over a plain scalar.
//!
//! Rust's operators on primitive integers panic on overflow (debug builds) and on division
//! by zero, which the lane contract forbids, so bodies never see raw primitives: the
//! one-lane value is `Lane<E>`, whose operators wrap and whose integer division by zero
//! gives 0. Float transcendentals run the same vector code as [`super::Lanes`] on a splat
//! and take lane 0, so a tail element gets bit-for-bit the result it would get in a
//! vector.

use super::floats::{F32x16, F64x4};
use super::{Mask, Value};
use std::ops::{Add, Div, Mul, Neg, Sub};
use tensor_core::Element;

/// One value of element `E`: the `V` of a body on tails (`LANES == 1`, mask = `bool`).
///
/// ```
/// use tensor_kernels_cpu::value::{Lane, Value};
/// assert_eq!((Lane(i32::MAX) + Lane(1)).0, i32::MIN);
/// assert_eq!((Lane(7i32) / Lane(0)).0, 0);
/// assert!(Lane(2.0f32).lt(Lane(3.0)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
#[repr(transparent)]
pub struct Lane<E>(pub E);

impl Mask for bool {
    const LANES: usize = 1;
    #[inline(always)]
    fn write_bools(self, dst: &mut [bool]) {
        dst[0] = self;
    }
}

/// Integer power with wrapping; a negative exponent gives `1 / x^|n|` truncated.
macro_rules! int_pow {
    (signed $t:ty) => {
        #[inline]
        fn ipow(x: $t, e: $t) -> $t {
            if e < 0 {
                return match x {
                    1 => 1,
                    -1 => {
                        if e & 1 == 0 {
                            1
                        } else {
                            -1
                        }
                    }
                    _ => 0,
                };
            }
            upow(x, e as u64)
        }
        int_pow!(@u $t);
    };
    (unsigned $t:ty) => {
        #[inline]
        fn ipow(x: $t, e: $t) -> $t {
            upow(x, e as u64)
        }
        int_pow!(@u $t);
    };
    (@u $t:ty) => {
        #[inline]
        fn upow(mut b: $t, mut e: u64) -> $t {
            let mut r: $t = 1;
            while e != 0 {
                if e & 1 != 0 {
                    r = r.wrapping_mul(b);
                }
                b = b.wrapping_mul(b);
                e >>= 1;
            }
            r
        }
    };
}

/// Float-only methods on integers: compute through f64, cast back with `as` rules.
#[inline(always)]
fn via_f64<E: Element>(x: E, f: fn(f64) -> f64) -> E {
    f(x.cast::<f64>()).cast::<E>()
}

/// The one-lane items every element shares: tags, load/store, comparisons, select.
macro_rules! lane_basics {
    ($t:ty) => {
        type Elem = $t;
        type Mask = bool;
        const LANES: usize = 1;
        #[inline(always)]
        fn splat(e: $t) -> Self {
            Lane(e)
        }
        #[inline(always)]
        fn load(src: &[$t]) -> Self {
            Lane(src[0])
        }
        #[inline(always)]
        fn store(self, dst: &mut [$t]) {
            dst[0] = self.0;
        }
        #[inline(always)]
        fn eq(self, o: Self) -> bool {
            self.0 == o.0
        }
        #[inline(always)]
        fn ne(self, o: Self) -> bool {
            self.0 != o.0
        }
        #[inline(always)]
        fn lt(self, o: Self) -> bool {
            self.0 < o.0
        }
        #[inline(always)]
        fn le(self, o: Self) -> bool {
            self.0 <= o.0
        }
        #[inline(always)]
        fn gt(self, o: Self) -> bool {
            self.0 > o.0
        }
        #[inline(always)]
        fn ge(self, o: Self) -> bool {
            self.0 >= o.0
        }
        #[inline(always)]
        fn select(m: bool, t: Self, f: Self) -> Self {
            if m {
                t
            } else {
                f
            }
        }
    };
}

macro_rules! int_common {
    ($t:ty) => {
        lane_basics!($t);
        #[inline(always)]
        fn max(self, o: Self) -> Self {
            if self.0 >= o.0 {
                self
            } else {
                o
            }
        }
        #[inline(always)]
        fn min(self, o: Self) -> Self {
            if self.0 <= o.0 {
                self
            } else {
                o
            }
        }
        #[inline]
        fn exp(self) -> Self {
            Lane(via_f64(self.0, f64::exp))
        }
        #[inline]
        fn exp2(self) -> Self {
            Lane(via_f64(self.0, f64::exp2))
        }
        #[inline]
        fn ln(self) -> Self {
            Lane(via_f64(self.0, f64::ln))
        }
        #[inline]
        fn log2(self) -> Self {
            Lane(via_f64(self.0, f64::log2))
        }
        #[inline]
        fn sqrt(self) -> Self {
            Lane(via_f64(self.0, f64::sqrt))
        }
        #[inline]
        fn tanh(self) -> Self {
            Lane(via_f64(self.0, f64::tanh))
        }
        #[inline]
        fn sin(self) -> Self {
            Lane(via_f64(self.0, f64::sin))
        }
        #[inline]
        fn cos(self) -> Self {
            Lane(via_f64(self.0, f64::cos))
        }
        #[inline]
        fn recip(self) -> Self {
            Lane(via_f64(self.0, f64::recip))
        }
        #[inline(always)]
        fn floor(self) -> Self {
            self
        }
        #[inline(always)]
        fn ceil(self) -> Self {
            self
        }
        #[inline(always)]
        fn round(self) -> Self {
            self
        }
    };
}

macro_rules! int_lane {
    ($kind:ident $t:ident) => {
        mod $t {
            use super::*;
            int_pow!($kind $t);

            impl Add for Lane<$t> {
                type Output = Self;
                #[inline(always)]
                fn add(self, o: Self) -> Self {
                    Lane(self.0.wrapping_add(o.0))
                }
            }
            impl Sub for Lane<$t> {
                type Output = Self;
                #[inline(always)]
                fn sub(self, o: Self) -> Self {
                    Lane(self.0.wrapping_sub(o.0))
                }
            }
            impl Mul for Lane<$t> {
                type Output = Self;
                #[inline(always)]
                fn mul(self, o: Self) -> Self {
                    Lane(self.0.wrapping_mul(o.0))
                }
            }
            impl Div for Lane<$t> {
                type Output = Self;
                #[inline(always)]
                fn div(self, o: Self) -> Self {
                    Lane(if o.0 == 0 { 0 } else { self.0.wrapping_div(o.0) })
                }
            }
            impl Neg for Lane<$t> {
                type Output = Self;
                #[inline(always)]
                fn neg(self) -> Self {
                    Lane(self.0.wrapping_neg())
                }
            }
            impl Value for Lane<$t> {
                int_common!($t);
                #[inline(always)]
                fn abs(self) -> Self {
                    int_lane!(@abs $kind self)
                }
                #[inline]
                fn pow(self, e: Self) -> Self {
                    Lane(ipow(self.0, e.0))
                }
            }
        }
    };
    (@abs signed $s:ident) => {
        Lane($s.0.wrapping_abs())
    };
    (@abs unsigned $s:ident) => {
        $s
    };
}

int_lane!(unsigned u8);
int_lane!(signed i8);
int_lane!(signed i16);
int_lane!(signed i32);
int_lane!(signed i64);

// `bool` arithmetic is logic by contract (see the module doc of `value`).
#[allow(clippy::suspicious_arithmetic_impl)]
impl Add for Lane<bool> {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Lane(self.0 | o.0)
    }
}
// `bool` arithmetic is logic by contract (see the module doc of `value`).
#[allow(clippy::suspicious_arithmetic_impl)]
impl Sub for Lane<bool> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Lane(self.0 ^ o.0)
    }
}
// `bool` arithmetic is logic by contract (see the module doc of `value`).
#[allow(clippy::suspicious_arithmetic_impl)]
impl Mul for Lane<bool> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Lane(self.0 & o.0)
    }
}
// `bool` arithmetic is logic by contract (see the module doc of `value`).
#[allow(clippy::suspicious_arithmetic_impl)]
impl Div for Lane<bool> {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        Lane(self.0 & o.0)
    }
}
impl Neg for Lane<bool> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self
    }
}
impl Value for Lane<bool> {
    int_common!(bool);
    #[inline(always)]
    fn abs(self) -> Self {
        self
    }
    /// `x^e` on {0, 1}: `x | !e`.
    #[inline(always)]
    fn pow(self, e: Self) -> Self {
        Lane(self.0 | !e.0)
    }
}

macro_rules! float_lane {
    ($t:ident, $vec:ident) => {
        impl Add for Lane<$t> {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Lane(self.0 + o.0)
            }
        }
        impl Sub for Lane<$t> {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                Lane(self.0 - o.0)
            }
        }
        impl Mul for Lane<$t> {
            type Output = Self;
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                Lane(self.0 * o.0)
            }
        }
        impl Div for Lane<$t> {
            type Output = Self;
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                Lane(self.0 / o.0)
            }
        }
        impl Neg for Lane<$t> {
            type Output = Self;
            #[inline(always)]
            fn neg(self) -> Self {
                Lane(-self.0)
            }
        }
        impl Lane<$t> {
            /// Runs a vector function on a splat and takes lane 0 (bit-identical results).
            #[inline(always)]
            fn via_vec(self, f: fn($vec) -> $vec) -> Self {
                let mut o = [0.0; <$vec as Value>::LANES];
                f(<$vec as Value>::splat(self.0)).store(&mut o);
                Lane(o[0])
            }
        }
        #[allow(clippy::float_cmp)]
        impl Value for Lane<$t> {
            lane_basics!($t);
            #[inline(always)]
            fn abs(self) -> Self {
                Lane(self.0.abs())
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                let (a, b) = (self.0, o.0);
                Lane(if a.is_nan() || b.is_nan() {
                    a + b
                } else if a > b {
                    a
                } else if b > a {
                    b
                } else {
                    // Equal (or ±0): +0 wins.
                    $t::from_bits(a.to_bits() & b.to_bits())
                })
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                let (a, b) = (self.0, o.0);
                Lane(if a.is_nan() || b.is_nan() {
                    a + b
                } else if a < b {
                    a
                } else if b < a {
                    b
                } else {
                    // Equal (or ±0): -0 wins.
                    $t::from_bits(a.to_bits() | b.to_bits())
                })
            }
            #[inline]
            fn pow(self, e: Self) -> Self {
                let mut o = [0.0; <$vec as Value>::LANES];
                <$vec as Value>::splat(self.0).pow(<$vec as Value>::splat(e.0)).store(&mut o);
                Lane(o[0])
            }
            #[inline]
            fn exp(self) -> Self {
                self.via_vec(<$vec as Value>::exp)
            }
            #[inline]
            fn exp2(self) -> Self {
                self.via_vec(<$vec as Value>::exp2)
            }
            #[inline]
            fn ln(self) -> Self {
                self.via_vec(<$vec as Value>::ln)
            }
            #[inline]
            fn log2(self) -> Self {
                self.via_vec(<$vec as Value>::log2)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                Lane(self.0.sqrt())
            }
            #[inline]
            fn tanh(self) -> Self {
                self.via_vec(<$vec as Value>::tanh)
            }
            #[inline]
            fn sin(self) -> Self {
                self.via_vec(<$vec as Value>::sin)
            }
            #[inline]
            fn cos(self) -> Self {
                self.via_vec(<$vec as Value>::cos)
            }
            #[inline(always)]
            fn recip(self) -> Self {
                Lane(1.0 / self.0)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                Lane(self.0.floor())
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                Lane(self.0.ceil())
            }
            #[inline(always)]
            fn round(self) -> Self {
                Lane(self.0.round())
            }
        }
    };
}

float_lane!(f32, F32x16);
float_lane!(f64, F64x4);
