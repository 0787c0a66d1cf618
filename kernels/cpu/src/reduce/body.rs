//! The arithmetic of `#[tensor_op(reduce)]` bodies. The macro writes each `a + b`, `a - b`,
//! `a * b`, `a / b`, `a % b` (and `+=`... , and `-x` of a non-literal) of a reduction's
//! functions as a call of [`add`], [`sub`], [`mul`], [`div`], [`rem`] or [`neg`], so that
//! reduction bodies follow the rule map bodies follow, on every build and every type a
//! body names:
//!
//! - integers wrap on overflow (never a debug-build panic);
//! - an integer divided by zero (or `%` zero) is 0, as `i64::MIN / -1` is `i64::MIN`
//!   (never a panic, also in release);
//! - floats are IEEE (a float divided by zero is ±∞ or NaN).
//!
//! The values of a body's type parameter (`T: ReduceValue`, the row's lane type) already
//! follow it; these traits give the same to the plain integers a body declares (`i64`
//! counts and indices, `n`).
//!
//! ```
//! use tensor_kernels_cpu::reduce::body;
//! assert_eq!(body::div(7i64, 0), 0);
//! assert_eq!(body::add(i64::MAX, 1), i64::MIN);
//! assert_eq!(body::rem(7u8, 0), 0);
//! assert_eq!(body::neg(i64::MIN), i64::MIN);
//! assert!(body::div(1.0f64, 0.0).is_infinite());
//! ```

use super::ReduceValue;
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

macro_rules! body_traits {
    ($($(#[$m:meta])* $tr:ident, $f:ident, $std:ident, $sf:ident, $int:expr);*) => { $(
        $(#[$m])*
        pub trait $tr<Rhs = Self> {
            /// The result type.
            type Output;
            /// The operation.
            fn $f(self, rhs: Rhs) -> Self::Output;
        }

        /// The operation of a body on `a` and `b` (see the module docs).
        #[inline(always)]
        pub fn $sf<A: $tr<B>, B>(a: A, b: B) -> A::Output {
            a.$f(b)
        }

        impl<T: ReduceValue + $std> $tr for T {
            type Output = <T as $std>::Output;
            #[inline(always)]
            fn $f(self, rhs: T) -> Self::Output {
                $std::$sf(self, rhs)
            }
        }

        body_traits!(@float $tr, $f, $std, $sf; f32, f64);
        body_traits!(@int $tr, $f, $int; u8, i8, i16, i32, i64, u16, u32, u64, usize, isize, i128, u128);
    )* };
    (@float $tr:ident, $f:ident, $std:ident, $sf:ident; $($t:ty),*) => { $(
        impl $tr for $t {
            type Output = $t;
            #[inline(always)]
            fn $f(self, rhs: $t) -> $t {
                $std::$sf(self, rhs)
            }
        }
    )* };
    (@int $tr:ident, $f:ident, $int:expr; $($t:ty),*) => { $(
        impl $tr for $t {
            type Output = $t;
            #[inline(always)]
            fn $f(self, rhs: $t) -> $t {
                let op: fn($t, $t) -> $t = $int;
                op(self, rhs)
            }
        }
    )* };
}

body_traits!(
    /// `+` in a reduction body.
    BodyAdd, body_add, Add, add, |a, b| a.wrapping_add(b);
    /// `-` in a reduction body.
    BodySub, body_sub, Sub, sub, |a, b| a.wrapping_sub(b);
    /// `*` in a reduction body.
    BodyMul, body_mul, Mul, mul, |a, b| a.wrapping_mul(b);
    /// `/` in a reduction body: an integer divided by zero is 0.
    BodyDiv, body_div, Div, div, |a, b| if b == 0 { 0 } else { a.wrapping_div(b) };
    /// `%` in a reduction body: an integer remainder by zero is 0.
    BodyRem, body_rem, Rem, rem, |a, b| if b == 0 { 0 } else { a.wrapping_rem(b) }
);

/// Unary `-` in a reduction body: integers wrap (`-i64::MIN` is `i64::MIN`).
pub trait BodyNeg {
    /// The result type.
    type Output;
    /// The negation.
    fn body_neg(self) -> Self::Output;
}

/// `-a` in a body (see the module docs).
#[inline(always)]
pub fn neg<A: BodyNeg>(a: A) -> A::Output {
    a.body_neg()
}

impl<T: ReduceValue + Neg> BodyNeg for T {
    type Output = <T as Neg>::Output;
    #[inline(always)]
    fn body_neg(self) -> Self::Output {
        -self
    }
}

macro_rules! neg_impls {
    (float $($t:ty),*) => { $(
        impl BodyNeg for $t {
            type Output = $t;
            #[inline(always)]
            fn body_neg(self) -> $t {
                -self
            }
        }
    )* };
    (int $($t:ty),*) => { $(
        impl BodyNeg for $t {
            type Output = $t;
            #[inline(always)]
            fn body_neg(self) -> $t {
                self.wrapping_neg()
            }
        }
    )* };
}
neg_impls!(float f32, f64);
neg_impls!(int u8, i8, i16, i32, i64, u16, u32, u64, usize, isize, i128, u128);
