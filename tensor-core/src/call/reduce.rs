//! The one entry of every reduction: a quantized input reduces its values (f32), a sparse
//! layout goes to the sparse reductions (`call::sparse`), a strided tensor to
//! `reduce_strided` — the only place a reduction's layout is looked at.

use super::launch::layout_of;
use super::reduce_geometry::ReduceDims;
use super::reduce_strided::reduce_strided;
use crate::registry::ReduceSpec;
use crate::{Error, Layout, Result, Scalar, Tensor};

/// Runs the reduction `spec` of `input` over `dims`, into a new tensor (`out: None`, the
/// result is returned) or into `out` (exactly the result's shape; a dtype the result can be
/// cast to).
///
/// The result's shape is the input's without the reduced dims, or with them as size 1 when
/// `keepdim`. Reducing an empty extent into a non-empty result is an error for reductions
/// without an identity (`amax`, `argmax`, ...).
///
/// ```no_run
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// # fn demo(sum: &'static tensor_ops::tensor_core::registry::ReduceSpec) -> tensor_ops::Result<()> {
/// use tensor_ops::tensor_core::call::{reduce, ReduceDims};
/// use tensor_ops::Tensor;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let rows = reduce(sum, &a, ReduceDims::Dims(&[1]), false, &[], None)?.unwrap();
/// assert_eq!(rows.to_vec::<f32>()?, vec![3.0, 7.0]);
/// # Ok(()) }
/// ```
pub fn reduce(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let name = spec.op.name;
    if out.is_some_and(|o| o.dtype().is_quantized()) {
        return Err(Error::DType {
            op: name,
            msg: "a reduction writes a plain dtype, not a quantized output (quantize its result afterwards)".into(),
        });
    }
    if input.dtype().is_quantized() {
        // The values (f32): sum/mean/amax/... of a quantized tensor are of what it stands for.
        return reduce(spec, &input.dequantize()?, dims, keepdim, params, out);
    }
    if layout_of([input]) != Layout::Strided {
        return super::sparse::reduce(spec, input, dims, keepdim, params, out);
    }
    reduce_strided(spec, input, dims, keepdim, params, out)
}
