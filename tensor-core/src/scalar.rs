//! Runtime scalar values (fill values, op parameters, 0-dim results).

use crate::{DType, Element};
use std::fmt;

/// A dynamically typed scalar: the widest value of each kind.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Scalar;
/// assert_eq!(Scalar::from(2u8), Scalar::Int(2));
/// assert_eq!(Scalar::from(0.5f32).to_f64(), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// Any integer.
    Int(i64),
    /// Any float.
    Float(f64),
}

impl Scalar {
    /// The value as `T` with `as` semantics.
    pub fn to<T: Element>(self) -> T {
        T::from_scalar(self)
    }
    /// As f64 (`as` semantics).
    pub fn to_f64(self) -> f64 {
        self.to::<f64>()
    }
    /// As f32 (`as` semantics).
    pub fn to_f32(self) -> f32 {
        self.to::<f32>()
    }
    /// The smallest dtype kind this scalar needs: Bool, I64 or F64.
    pub fn natural_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty),*) => { $( impl From<$t> for Scalar { fn from(v: $t) -> Scalar { v.to_scalar() } } )* };
}
scalar_from!(bool, u8, i8, i16, i32, i64, crate::F8E4M3, crate::F8E5M2, half::f16, half::bf16, f32, f64);

impl From<u16> for Scalar {
    fn from(v: u16) -> Scalar {
        Scalar::Int(v as i64)
    }
}
impl From<u32> for Scalar {
    fn from(v: u32) -> Scalar {
        Scalar::Int(v as i64)
    }
}
/// Unsigned values above `i64::MAX` do not fit [`Scalar::Int`]; rather than wrap to a
/// negative number they become the nearest [`Scalar::Float`] (`usize::MAX` →
/// `1.8446744073709552e19`), which casts into integer dtypes saturating, like `as`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Scalar;
/// assert_eq!(Scalar::from(7usize), Scalar::Int(7));
/// assert_eq!(Scalar::from(usize::MAX), Scalar::Float(usize::MAX as f64));
/// assert_eq!(Scalar::from(u64::MAX).to::<i64>(), i64::MAX);
/// ```
impl From<u64> for Scalar {
    fn from(v: u64) -> Scalar {
        i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int)
    }
}
/// As `From<u64>`: values above `i64::MAX` become the nearest float, never a wrapped int.
impl From<usize> for Scalar {
    fn from(v: usize) -> Scalar {
        Scalar::from(v as u64)
    }
}
impl From<isize> for Scalar {
    fn from(v: isize) -> Scalar {
        Scalar::Int(v as i64)
    }
}
