//! The dtype tag ([`DType`]): its list, sizes, names, kinds and compute rule, and
//! [`with_dtype!`] from a tag to its Rust type. The Rust side (the [`Element`] trait and its
//! casts) is `element.rs`.

#[cfg(doc)]
use crate::f8::{F8E4M3, F8E5M2};
#[cfg(doc)]
use crate::Element;
use std::fmt;

/// The element type of a tensor.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::DType;
/// assert_eq!(DType::BF16.size(), 2);
/// assert_eq!(DType::I64.to_string(), "i64");
/// assert!(DType::F16.is_float() && !DType::U8.is_float());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `bool`, one byte holding 0 or 1.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// 8-bit float E4M3 ("fn": finite only, max 448; [`F8E4M3`]), PyTorch's `float8_e4m3fn`.
    F8E4M3,
    /// 8-bit float E5M2 (IEEE-like, max 57344; [`F8E5M2`]), PyTorch's `float8_e5m2`.
    F8E5M2,
    /// IEEE half (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`).
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// Affine-quantized signed 8-bit integer (PyTorch's `qint8`): stored as `i8`, a value
    /// is `(q - zero_point) * scale` with the tensor's [`crate::Quantizer`]. Not in
    /// [`DType::ALL`] (the plain dtypes, one Rust type each); listed in [`DType::QUANTIZED`].
    QInt8,
    /// Affine-quantized unsigned 8-bit integer (`quint8`): stored as `u8`.
    QUInt8,
    /// Affine-quantized signed 32-bit integer (`qint32`): stored as `i32`.
    QInt32,
}

/// Calls `$m! { $($args)* Bool, U8, ..., F64 }`: the variants of [`DType::ALL`] as idents, for
/// macros that register one item per dtype (`register_copy_fill!`). A compile-time check
/// below keeps this list equal to `DType::ALL`, so there is one list.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// macro_rules! count { ($($d:ident),*) => { [$(tensor_ops::DType::$d),*].len() } }
/// assert_eq!(tensor_ops::tensor_core::for_each_dtype!(count;), tensor_ops::DType::ALL.len());
/// ```
#[macro_export]
macro_rules! for_each_dtype {
    ($($m:tt)::+; $($args:tt)*) => {
        $($m)::+! { $($args)* Bool, U8, I8, I16, I32, I64, F8E4M3, F8E5M2, F16, BF16, F32, F64 }
    };
}

// The ident list of `for_each_dtype!` is `DType::ALL`, in order.
const _: () = {
    macro_rules! listed { ($($d:ident),*) => { [$(DType::$d),*] } }
    let listed = for_each_dtype!(listed;);
    assert!(listed.len() == DType::ALL.len(), "for_each_dtype! and DType::ALL differ");
    let mut i = 0;
    while i < listed.len() {
        assert!(listed[i] as u8 == DType::ALL[i] as u8, "for_each_dtype! and DType::ALL differ");
        i += 1;
    }
};

impl DType {
    /// How many dtypes there are (plain and quantized): `dtype as usize` is below it.
    pub const COUNT: usize = DType::ALL.len() + DType::QUANTIZED.len();

    /// The affine-quantized dtypes (see [`crate::Quantizer`]): each is stored as its
    /// [`DType::repr`] integer and computed in f32 (dequantized on load, quantized once on
    /// store). A tensor of one of them always carries its quantizer.
    pub const QUANTIZED: [DType; 3] = [DType::QInt8, DType::QUInt8, DType::QInt32];

    /// Every plain dtype (one Rust [`Element`] type each), in promotion order. The
    /// quantized dtypes are in [`DType::QUANTIZED`].
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
            DType::QInt8 | DType::QUInt8 => 1,
            DType::QInt32 => 4,
        }
    }

    /// Short lowercase name (`"f32"`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::QInt8 => "qint8",
            DType::QUInt8 => "quint8",
            DType::QInt32 => "qint32",
        }
    }

    /// Parses a [`DType::name`].
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().chain(DType::QUANTIZED).find(|d| d.name() == name)
    }

    /// True for the 8-bit floats, f16, bf16, f32, f64.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2 | DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the floats narrower than f32 (8- and 16-bit), which are computed in f32.
    pub const fn is_narrow_float(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2 | DType::F16 | DType::BF16)
    }

    /// True for u8, i8, i16, i32, i64.
    pub const fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// True for signed integers, floats and the signed quantized dtypes.
    pub const fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8 | DType::QUInt8)
    }

    /// True for the affine-quantized dtypes ([`DType::QUANTIZED`]).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::DType;
    /// assert!(DType::QUInt8.is_quantized() && !DType::U8.is_quantized());
    /// assert_eq!(DType::QUInt8.repr(), DType::U8);
    /// ```
    pub const fn is_quantized(self) -> bool {
        matches!(self, DType::QInt8 | DType::QUInt8 | DType::QInt32)
    }

    /// The plain dtype a value is stored as: the integer of a quantized dtype, else the
    /// dtype itself.
    pub const fn repr(self) -> DType {
        match self {
            DType::QInt8 => DType::I8,
            DType::QUInt8 => DType::U8,
            DType::QInt32 => DType::I32,
            d => d,
        }
    }

    /// The smallest and largest stored integer of a quantized dtype (`None` for the others).
    pub const fn quant_range(self) -> Option<(i64, i64)> {
        match self {
            DType::QInt8 => Some((i8::MIN as i64, i8::MAX as i64)),
            DType::QUInt8 => Some((0, u8::MAX as i64)),
            DType::QInt32 => Some((i32::MIN as i64, i32::MAX as i64)),
            _ => None,
        }
    }

    /// The dtype arithmetic is done in: f32 for the 8- and 16-bit floats and the quantized
    /// dtypes, else the dtype itself.
    pub const fn compute(self) -> DType {
        if self.is_narrow_float() || self.is_quantized() {
            DType::F32
        } else {
            self
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Calls `$body` with the type alias `$T` bound to the Rust type of `$dtype`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{with_dtype, DType, Element};
/// let size = with_dtype!(DType::I16, T => std::mem::size_of::<T>());
/// assert_eq!(size, 2);
/// ```
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F8E4M3 => {
                type $T = $crate::F8E4M3;
                $body
            }
            $crate::DType::F8E5M2 => {
                type $T = $crate::F8E5M2;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            // A quantized dtype is handled as its stored integer (its `repr`): byte-level
            // code (copies between equal quantizers, fills of a quantized value) is right
            // on it; value-level code dequantizes first (the call path does).
            $crate::DType::QInt8 => {
                type $T = i8;
                $body
            }
            $crate::DType::QUInt8 => {
                type $T = u8;
                $body
            }
            $crate::DType::QInt32 => {
                type $T = i32;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(with_dtype!(d, T => <T as Element>::DTYPE), d);
            assert_eq!(with_dtype!(d, T => std::mem::size_of::<T>()), d.size());
        }
    }
}
