//! Type promotion, PyTorch rules.
//!
//! Categories order `bool < integer < float`. Between two dimensioned tensors (or two
//! 0-dim tensors) the result is the wider dtype of the higher category, with these
//! mixed cases: `u8` with a signed int gives the next signed int that holds both (`u8+i8 →
//! i16`), `f16` with `bf16` gives `f32`. 0-dim tensors only take part when their category
//! is higher than every dimensioned operand's, and then, as PyTorch documents, the result
//! is a dtype of that category wide enough for them: `i32[3] + f64[] → f64`,
//! `f16[3] + f64[] → f16` (same category: the dimensioned operand wins), `u8[3] + i64[] →
//! u8`, `bool[3] + i32[] → i32`. (PyTorch's default dtype applies only to Python-number
//! operands, which this library does not have: its scalars are `#[param]`s.)
//!
//! | with → | bool | u8 | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! |---|---|---|---|---|---|---|---|---|---|---|
//! | u8  | u8 | u8 | i16 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | i8  | i8 | i16 | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 |
//! | f16 | f16 | f16 | f16 | f16 | f16 | f16 | f16 | f32 | f32 | f64 |

use crate::DType;

fn category(d: DType) -> u8 {
    if d == DType::Bool {
        0
    } else if d.is_int() {
        1
    } else {
        2
    }
}

/// The promoted dtype of two operands of equal standing.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{promote_types, DType};
/// assert_eq!(promote_types(DType::U8, DType::I8), DType::I16);
/// assert_eq!(promote_types(DType::F16, DType::BF16), DType::F32);
/// assert_eq!(promote_types(DType::I64, DType::F16), DType::F16);
/// assert_eq!(promote_types(DType::Bool, DType::Bool), DType::Bool);
/// ```
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    let (ca, cb) = (category(a), category(b));
    if ca != cb {
        return if ca > cb { a } else { b };
    }
    match (a, b) {
        (F16, BF16) | (BF16, F16) => F32,
        // No 8-bit float holds the other's values; f16 holds both exactly.
        (F8E4M3, F8E5M2) | (F8E5M2, F8E4M3) => F16,
        (U8, I8) | (I8, U8) => I16,
        _ => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
    }
}

/// The result dtype of several operands; `is_dimensioned[i]` is false for 0-dim tensors.
///
/// PyTorch's rule: promote the dimensioned operands among themselves and the 0-dim ones
/// among themselves; the 0-dim result counts only when its category (bool < integer <
/// float) is higher than the dimensioned one's, and then the two are promoted together
/// (so the 0-dim dtype decides within its category).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{result_type, DType};
/// assert_eq!(result_type(&[(DType::I32, true), (DType::F64, false)]), DType::F64);
/// assert_eq!(result_type(&[(DType::F16, true), (DType::F64, false)]), DType::F16);
/// assert_eq!(result_type(&[(DType::U8, true), (DType::I64, false)]), DType::U8);
/// assert_eq!(result_type(&[(DType::Bool, true), (DType::I32, false)]), DType::I32);
/// assert_eq!(result_type(&[(DType::I64, true), (DType::F16, false)]), DType::F16);
/// assert_eq!(result_type(&[(DType::I8, false), (DType::F64, false)]), DType::F64);
/// ```
pub fn result_type(operands: &[(DType, bool)]) -> DType {
    let dimmed = operands.iter().filter(|o| o.1).map(|o| o.0).reduce(promote_types);
    let zero_dim = operands.iter().filter(|o| !o.1).map(|o| o.0).reduce(promote_types);
    match (dimmed, zero_dim) {
        (Some(d), Some(z)) if category(z) > category(d) => promote_types(d, z),
        (Some(d), _) => d,
        (None, Some(z)) => z,
        (None, None) => DType::F32,
    }
}
