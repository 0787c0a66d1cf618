//! The dtype rule of a call: which kernel row runs and what dtype its result has.

use crate::iter::PerOperand;
use crate::registry::OpSpec;
use crate::{result_type, DType, Tensor};

/// The dtypes of one call: kernel row dtype (inputs are converted to it) and result dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTypes {
    /// The dtype whose kernel runs (the promoted input dtype, or f32 for integer inputs
    /// of float-only ops).
    pub kernel: DType,
    /// The dtype of the result tensor the op would allocate.
    pub result: DType,
}

/// Computes the dtypes of an elementwise call by PyTorch's rules (see
/// [`crate::result_type`]): promotion, float-only ops computing integers in f32, predicates
/// producing `Bool`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{call::call_types, registry::COPY_SPEC, DType, Tensor};
/// let a = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
/// let b = Tensor::scalar(0.5, DType::F64).unwrap();
/// assert_eq!(call_types(&COPY_SPEC, &[&a, &b]).result, DType::F64);
/// ```
pub fn call_types(spec: &OpSpec, inputs: &[&Tensor]) -> CallTypes {
    let operands: PerOperand<(DType, bool)> = inputs.iter().map(|t| (t.dtype(), t.ndim() > 0)).collect();
    call_types_of(spec, &operands)
}

/// [`call_types`] of operands given as (dtype, has dims) — a fused chain's intermediates.
pub(crate) fn call_types_of(spec: &OpSpec, operands: &[(DType, bool)]) -> CallTypes {
    let mut kernel = result_type(operands);
    if spec.float_only && !kernel.is_float() {
        kernel = DType::F32;
    }
    let result = if spec.bool_output { DType::Bool } else { kernel };
    CallTypes { kernel, result }
}

/// True when a value of `from` may be written into a tensor of `to` (PyTorch's `can_cast`:
/// no float into an integer or bool, no non-bool into bool).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{call::can_cast, DType};
/// assert!(can_cast(DType::I32, DType::F16));
/// assert!(!can_cast(DType::F32, DType::I64));
/// assert!(!can_cast(DType::I8, DType::Bool));
/// ```
pub fn can_cast(from: DType, to: DType) -> bool {
    if from.is_float() && !to.is_float() {
        return false;
    }
    !(from != DType::Bool && to == DType::Bool)
}
