//! New outputs (memory-order propagation) and checks of given outputs.

use super::types::can_cast;
use crate::registry::OpSpec;
use crate::shape::{Dims, INLINE_DIMS};
use crate::{DType, Device, Error, Result, Tensor};
use smallvec::SmallVec;

/// A new output of `shape`: when every input that has the full shape has the same strides
/// and those strides are a dense permutation (no gaps, no overlap), it gets the same memory
/// order (so `a.t() + b.t()` stays a transposed, dense, copy-free result); otherwise it is
/// row-major contiguous. Its bytes are unspecified until the kernel writes them.
pub(crate) fn new_output(shape: &[usize], dtype: DType, device: Device, inputs: &[&Tensor]) -> Result<Tensor> {
    let views: SmallVec<[(&[usize], &[isize]); 4]> = inputs.iter().map(|t| (t.shape(), t.strides())).collect();
    empty_in_order(shape, new_output_order(shape, &views).as_deref(), dtype, device)
}

/// The memory order (dims outermost first) [`new_output`] gives a result of `shape` computed
/// from operands with these (shape, strides); `None` for row-major.
pub(crate) fn new_output_order(shape: &[usize], inputs: &[(&[usize], &[isize])]) -> Option<Dims> {
    let mut full = inputs.iter().filter(|(s, _)| *s == shape);
    let (_, strides) = full.next()?;
    let agree = full.all(|(_, s)| s == strides);
    if agree && !crate::shape::is_contiguous(shape, strides) && is_dense_permutation(shape, strides) {
        let mut order: Dims = (0..shape.len()).collect();
        order.sort_by_key(|&d| std::cmp::Reverse(strides[d].unsigned_abs()));
        return Some(order);
    }
    None
}

/// An uninitialised dense tensor of `shape` laid out in `order` (outermost first), or
/// row-major.
pub(crate) fn empty_in_order(shape: &[usize], order: Option<&[usize]>, dtype: DType, device: Device) -> Result<Tensor> {
    let Some(order) = order else { return Tensor::empty(shape, dtype, device) };
    let permuted: Dims = order.iter().map(|&d| shape[d]).collect();
    let dense = Tensor::empty(&permuted, dtype, device)?;
    let mut inverse = Dims::from_elem(0, order.len());
    for (i, &d) in order.iter().enumerate() {
        inverse[d] = i;
    }
    dense.permute(&inverse)
}

fn is_dense_permutation(shape: &[usize], strides: &[isize]) -> bool {
    if strides.iter().any(|&s| s <= 0) || shape.contains(&0) {
        return false;
    }
    let mut dims: SmallVec<[(usize, isize); INLINE_DIMS]> =
        shape.iter().copied().zip(strides.iter().copied()).filter(|&(d, _)| d > 1).collect();
    dims.sort_by_key(|&(_, s)| s);
    let mut expected = 1isize;
    for (d, s) in dims {
        if s != expected {
            return false;
        }
        expected *= d as isize;
    }
    true
}

/// Whether a result of dtype `result` written into an output of dtype `out` must first be
/// rounded to `result`: a kernel of a narrow float (f16, bf16, the 8-bit floats) computes in
/// f32 and converts its f32 value straight to the output's dtype, which for another dtype
/// would skip the result's own rounding. Such a call goes through a temporary of the
/// result's dtype, then a copy: `exp_out(&f16, &f32_out)` holds the f16 result widened, as
/// in PyTorch and NumPy.
pub(crate) fn rounds_before_out(result: DType, out: DType) -> bool {
    result.is_narrow_float() && out != result
}

/// Checks a given output (`what`: "out" or "in-place") of `spec` against the result's
/// shape and dtype: exactly the shape (no implicit resize), a dtype the result can be cast to.
pub(crate) fn check_output(spec: &OpSpec, out: &Tensor, shape: &[usize], result: DType, what: &str) -> Result<()> {
    if out.shape() != shape {
        return Err(Error::invalid_output(
            spec.name,
            format!(
                "the {what} tensor has shape {:?} but the result has shape {shape:?} (no implicit resize)",
                out.shape()
            ),
        ));
    }
    if !can_cast(result, out.dtype()) {
        return Err(Error::invalid_output(
            spec.name,
            format!(
                "the result dtype {result} cannot be written into the {what} tensor of dtype {} (float → integer/bool and non-bool → bool are not allowed)",
                out.dtype()
            ),
        ));
    }
    Ok(())
}
