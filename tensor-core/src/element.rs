//! The Rust side of the dtypes: the [`Element`] trait (one Rust type per plain [`DType`],
//! sealed), its conversions with Rust `as` semantics ([`CastFrom`]), and the const table from
//! a dtype's code to its Rust type ([`Stored`], [`ElemOf`]).

use crate::f8::{F8E4M3, F8E5M2};
use crate::DType;
use half::{bf16, f16};
use std::fmt;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be a tensor element. Implemented for exactly one Rust type per
/// [`DType`].
///
/// Every bit pattern of size `DType::size()` is a valid value, except for `bool`, whose
/// storage only ever holds 0 or 1 (the library never writes anything else).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{DType, Element};
/// assert_eq!(<half::bf16 as Element>::DTYPE, DType::BF16);
/// assert_eq!(300i32.cast::<u8>(), 44); // Rust `as` semantics
/// assert_eq!(f32::NAN.cast::<i32>(), 0);
/// ```
pub trait Element:
    Copy + Send + Sync + PartialEq + PartialOrd + fmt::Debug + Default + 'static + sealed::Sealed
{
    /// The tag of this type.
    const DTYPE: DType;
    /// Zero (false).
    const ZERO: Self;
    /// One (true).
    const ONE: Self;
    /// Converts to `T` with Rust `as` semantics (float→int truncates and saturates, NaN→0;
    /// narrowing floats round to nearest even; x→bool is `x != 0`; bool→x is 0 or 1).
    fn cast<T: Element>(self) -> T;
    /// Converts to the widest value of its kind, for display and scalars.
    fn to_scalar(self) -> crate::Scalar;
    /// Converts a scalar with `as` semantics.
    fn from_scalar(s: crate::Scalar) -> Self;
}

/// Per-pair conversion with `as` semantics; `Element::cast` routes through it.
#[doc(hidden)]
pub trait CastFrom<S> {
    fn cast_from(s: S) -> Self;
}

macro_rules! cast_prim {
    ($($src:ty),*) => { $( cast_prim!(@one $src; u8 i8 i16 i32 i64 f32 f64); )* };
    (@one $src:ty; $($dst:ty)*) => { $(
        impl CastFrom<$src> for $dst { #[inline(always)] fn cast_from(s: $src) -> $dst { s as $dst } }
    )* };
}
cast_prim!(u8, i8, i16, i32, i64, f32, f64);

macro_rules! cast_bool_and_half {
    // `ident`, not `ty`: `half_from!` must see `f32`/`f64` as tokens to pick their arms (a
    // `ty` fragment matched none, so f32 went through `from_f64`).
    ($($p:ident),*) => { $(
        impl CastFrom<bool> for $p { #[inline(always)] fn cast_from(s: bool) -> $p { s as u8 as $p } }
        impl CastFrom<$p> for bool {
            #[inline(always)]
            #[allow(clippy::float_cmp)]
            fn cast_from(s: $p) -> bool { s != (0 as $p) }
        }
        impl CastFrom<f16> for $p { #[inline(always)] fn cast_from(s: f16) -> $p { s.to_f32() as $p } }
        impl CastFrom<bf16> for $p { #[inline(always)] fn cast_from(s: bf16) -> $p { s.to_f32() as $p } }
        impl CastFrom<$p> for f16 { #[inline(always)] fn cast_from(s: $p) -> f16 { half_from!(f16, s, $p) } }
        impl CastFrom<$p> for bf16 { #[inline(always)] fn cast_from(s: $p) -> bf16 { half_from!(bf16, s, $p) } }
    )* };
}
// Integers go to the 16-bit floats through f64 (exact for every i32, and i64 values whose
// magnitude exceeds f64's 53 bits are far beyond the half range anyway, so the single final
// rounding is what decides), floats convert with one rounding.
macro_rules! half_from {
    ($h:ty, $s:expr, f32) => {
        <$h>::from_f32($s)
    };
    ($h:ty, $s:expr, f64) => {
        <$h>::from_f64($s)
    };
    ($h:ty, $s:expr, $p:ty) => {
        <$h>::from_f64($s as f64)
    };
}
cast_bool_and_half!(u8, i8, i16, i32, i64, f32, f64);

impl CastFrom<bool> for bool {
    #[inline(always)]
    fn cast_from(s: bool) -> bool {
        s
    }
}
impl CastFrom<bool> for f16 {
    #[inline(always)]
    fn cast_from(s: bool) -> f16 {
        if s {
            f16::ONE
        } else {
            f16::ZERO
        }
    }
}
impl CastFrom<bool> for bf16 {
    #[inline(always)]
    fn cast_from(s: bool) -> bf16 {
        if s {
            bf16::ONE
        } else {
            bf16::ZERO
        }
    }
}
impl CastFrom<f16> for bool {
    #[inline(always)]
    fn cast_from(s: f16) -> bool {
        s.to_f32() != 0.0
    }
}
impl CastFrom<bf16> for bool {
    #[inline(always)]
    fn cast_from(s: bf16) -> bool {
        s.to_f32() != 0.0
    }
}
impl CastFrom<f16> for f16 {
    #[inline(always)]
    fn cast_from(s: f16) -> f16 {
        s
    }
}
impl CastFrom<bf16> for bf16 {
    #[inline(always)]
    fn cast_from(s: bf16) -> bf16 {
        s
    }
}
impl CastFrom<f16> for bf16 {
    #[inline(always)]
    fn cast_from(s: f16) -> bf16 {
        bf16::from_f32(s.to_f32())
    }
}
impl CastFrom<bf16> for f16 {
    #[inline(always)]
    fn cast_from(s: bf16) -> f16 {
        f16::from_f32(s.to_f32())
    }
}

// The 8-bit floats: every source reaches them with one rounding (integers through f64, as
// the 16-bit floats), and they leave through their exact f32 value.
macro_rules! cast_f8 {
    ($($f8:ty),*) => { $(
        cast_f8!(@prim $f8; u8 i8 i16 i32 i64);
        impl CastFrom<f32> for $f8 { #[inline(always)] fn cast_from(s: f32) -> $f8 { <$f8>::from_f32(s) } }
        impl CastFrom<f64> for $f8 { #[inline(always)] fn cast_from(s: f64) -> $f8 { <$f8>::from_f64(s) } }
        impl CastFrom<$f8> for f32 { #[inline(always)] fn cast_from(s: $f8) -> f32 { s.to_f32() } }
        impl CastFrom<$f8> for f64 { #[inline(always)] fn cast_from(s: $f8) -> f64 { s.to_f64() } }
        impl CastFrom<f16> for $f8 { #[inline(always)] fn cast_from(s: f16) -> $f8 { <$f8>::from_f32(s.to_f32()) } }
        impl CastFrom<bf16> for $f8 { #[inline(always)] fn cast_from(s: bf16) -> $f8 { <$f8>::from_f32(s.to_f32()) } }
        impl CastFrom<$f8> for f16 { #[inline(always)] fn cast_from(s: $f8) -> f16 { f16::from_f32(s.to_f32()) } }
        impl CastFrom<$f8> for bf16 { #[inline(always)] fn cast_from(s: $f8) -> bf16 { bf16::from_f32(s.to_f32()) } }
        impl CastFrom<bool> for $f8 { #[inline(always)] fn cast_from(s: bool) -> $f8 { if s { <$f8>::ONE } else { <$f8>::ZERO } } }
        impl CastFrom<$f8> for bool { #[inline(always)] fn cast_from(s: $f8) -> bool { s.to_f32() != 0.0 } }
        impl CastFrom<$f8> for $f8 { #[inline(always)] fn cast_from(s: $f8) -> $f8 { s } }
    )* };
    (@prim $f8:ty; $($p:ty)*) => { $(
        impl CastFrom<$p> for $f8 { #[inline(always)] fn cast_from(s: $p) -> $f8 { <$f8>::from_f64(s as f64) } }
        impl CastFrom<$f8> for $p { #[inline(always)] fn cast_from(s: $f8) -> $p { s.to_f32() as $p } }
    )* };
}
cast_f8!(F8E4M3, F8E5M2);
impl CastFrom<F8E4M3> for F8E5M2 {
    #[inline(always)]
    fn cast_from(s: F8E4M3) -> F8E5M2 {
        F8E5M2::from_f32(s.to_f32())
    }
}
impl CastFrom<F8E5M2> for F8E4M3 {
    #[inline(always)]
    fn cast_from(s: F8E5M2) -> F8E4M3 {
        F8E4M3::from_f32(s.to_f32())
    }
}

/// Dispatches a generic `cast::<T>` to the concrete `CastFrom` impl.
macro_rules! cast_to_dyn {
    ($self:expr, $t:ty) => {{
        // The compiler folds this match: T::DTYPE is a constant per instantiation.
        let v = $self;
        macro_rules! go {
            ($d:ty) => {{
                let r: $d = <$d as CastFrom<$t>>::cast_from(v);
                // SAFETY: T::DTYPE == the dtype of $d and Element is sealed to one Rust type
                // per dtype, so T and $d are the same type; transmute_copy of equal types.
                unsafe { std::mem::transmute_copy::<$d, T>(&r) }
            }};
        }
        match T::DTYPE {
            DType::Bool => go!(bool),
            DType::U8 => go!(u8),
            DType::I8 => go!(i8),
            DType::I16 => go!(i16),
            DType::I32 => go!(i32),
            DType::I64 => go!(i64),
            DType::F8E4M3 => go!(F8E4M3),
            DType::F8E5M2 => go!(F8E5M2),
            DType::F16 => go!(f16),
            DType::BF16 => go!(bf16),
            DType::F32 => go!(f32),
            DType::F64 => go!(f64),
            // Element is sealed to the plain dtypes (`element!` below): no T has these.
            DType::QInt8 | DType::QUInt8 | DType::QInt32 => unreachable!("no Element type is quantized"),
        }
    }};
}

macro_rules! element {
    ($t:ty, $d:ident, $zero:expr, $one:expr, |$s:ident| $to:expr, |$v:ident| $from:expr) => {
        impl sealed::Sealed for $t {}
        impl StoredType for Stored<{ DType::$d as u8 }> {
            type Elem = $t;
        }
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            #[inline(always)]
            fn cast<T: Element>(self) -> T {
                cast_to_dyn!(self, $t)
            }
            #[inline]
            fn to_scalar(self) -> crate::Scalar {
                let $s = self;
                $to
            }
            #[inline]
            fn from_scalar(s: crate::Scalar) -> Self {
                match s {
                    crate::Scalar::Bool(b) => <Self as CastFrom<bool>>::cast_from(b),
                    crate::Scalar::Int(i) => <Self as CastFrom<i64>>::cast_from(i),
                    crate::Scalar::Float($v) => $from,
                }
            }
        }
    };
}

/// A dtype as a type: `Stored<{ DType::F16 as u8 }>`, whose [`StoredType::Elem`] is the
/// Rust type the dtype is stored as. Lets a compile-time table go from a `const` dtype
/// (computed by a `const fn` rule, such as a reduction's) to its Rust type.
#[derive(Debug, Clone, Copy)]
pub struct Stored<const D: u8>;

/// The Rust type a dtype is stored as (implemented for `Stored<{ d as u8 }>` of every
/// [`DType`]).
pub trait StoredType {
    /// The element type.
    type Elem: Element;
}

/// The Rust type of the dtype whose code (`dtype as u8`) is `D`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{DType, ElemOf};
/// let x: ElemOf<{ DType::F16.compute() as u8 }> = 1.5f32;
/// assert_eq!(x, 1.5);
/// ```
pub type ElemOf<const D: u8> = <Stored<D> as StoredType>::Elem;

use crate::Scalar;
element!(bool, Bool, false, true, |s| Scalar::Bool(s), |f| f != 0.0);
element!(u8, U8, 0, 1, |s| Scalar::Int(s as i64), |f| f as u8);
element!(i8, I8, 0, 1, |s| Scalar::Int(s as i64), |f| f as i8);
element!(i16, I16, 0, 1, |s| Scalar::Int(s as i64), |f| f as i16);
element!(i32, I32, 0, 1, |s| Scalar::Int(s as i64), |f| f as i32);
element!(i64, I64, 0, 1, |s| Scalar::Int(s), |f| f as i64);
element!(F8E4M3, F8E4M3, F8E4M3::ZERO, F8E4M3::ONE, |s| Scalar::Float(s.to_f64()), |f| F8E4M3::from_f64(f));
element!(F8E5M2, F8E5M2, F8E5M2::ZERO, F8E5M2::ONE, |s| Scalar::Float(s.to_f64()), |f| F8E5M2::from_f64(f));
element!(f16, F16, f16::ZERO, f16::ONE, |s| Scalar::Float(s.to_f64()), |f| f16::from_f64(f));
element!(bf16, BF16, bf16::ZERO, bf16::ONE, |s| Scalar::Float(s.to_f64()), |f| bf16::from_f64(f));
element!(f32, F32, 0.0, 1.0, |s| Scalar::Float(s as f64), |f| f as f32);
element!(f64, F64, 0.0, 1.0, |s| Scalar::Float(s), |f| f);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_rust_as() {
        assert_eq!(3.9f32.cast::<i32>(), 3);
        assert_eq!((-3.9f64).cast::<i8>(), -3);
        assert_eq!(1e10f32.cast::<i32>(), i32::MAX);
        assert_eq!(f64::NAN.cast::<i64>(), 0);
        assert_eq!((-1i32).cast::<u8>(), 255);
        assert!(2u8.cast::<bool>());
        assert_eq!(true.cast::<f32>(), 1.0);
        assert_eq!(65520.0f32.cast::<f16>(), f16::INFINITY);
        assert_eq!(f16::from_f32(1.5).cast::<i32>(), 1);
        assert_eq!(f16::from_f32(2.0).cast::<bf16>(), bf16::from_f32(2.0));
        assert_eq!(1.0000001f64.cast::<f32>(), 1.0000001f64 as f32);
    }

    /// Casts from f32 into f16/bf16 round once, to nearest even, seeing every bit of the
    /// source, as the vector paths do (found by `copy_strided`'s proptest: f32 went through
    /// `half`'s `from_f64`, which drops the f64's low 32 bits, so a sticky bit there was lost
    /// and a near-tie rounded down). f64 sources still go through `from_f64`.
    #[test]
    fn casts_to_the_16_bit_floats_see_every_source_bit() {
        assert_eq!(f32::from_bits(0x7992_8001).cast::<bf16>().to_bits(), 0x7993);
        assert_eq!(f32::from_bits(0x7992_8000).cast::<bf16>().to_bits(), 0x7992);
        assert_eq!(f32::from_bits(0xa930_8001).cast::<bf16>().to_bits(), 0xa931);
        let x = 1.0f32 + f32::EPSILON * 4097.0; // 1 + 2^-11 (an f16 tie) + 2^-23
        assert_eq!(x.cast::<f16>(), f16::from_f32(x));
        assert_eq!(x.cast::<f16>().to_bits(), 0x3c01);
        // Overflow and NaN.
        assert_eq!(1e30f32.cast::<f16>(), f16::INFINITY);
        assert!(f32::NAN.cast::<bf16>().is_nan() && f32::NAN.cast::<f16>().is_nan());
        // Every f32 in a sweep agrees with `half`'s own from_f32 (a sparser one under Miri).
        let step = if cfg!(miri) { 9_973_003 } else { 9973 };
        for b in (0..u32::MAX).step_by(step) {
            let x = f32::from_bits(b);
            let (h, w) = (x.cast::<bf16>(), bf16::from_f32(x));
            assert!(h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()), "{b:#010x}");
            let (h, w) = (x.cast::<f16>(), f16::from_f32(x));
            assert!(h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()), "{b:#010x}");
        }
    }
}
