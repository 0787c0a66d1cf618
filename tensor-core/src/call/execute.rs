//! The shared tail of every call: output overlap check, staging of partially overlapping
//! inputs, broadcast strides, locks, the canonical plan, and the kernel run.

use crate::iter::{IterPlan, PerOperand};
use crate::registry::{KernelRow, OpSpec, PreparedCall, RawTensor};
use crate::shape::Strides;
use crate::{lock_many_for, Access, Result, Scalar, Storage, Tensor};

/// Runs `row` writing `out` from `inputs` (each broadcastable to `out`'s shape) and
/// `params`. Checks that `out` has no internal overlap, reads inputs that partially overlap
/// `out` from private copies (exact aliasing, as in place, is fine), locks every storage
/// (read for inputs, write for `out`, in address order), canonicalises the iteration
/// ([`IterPlan`]: size-1 dims dropped, dims in `out`'s memory order, coalesced) and hands
/// the kernel operands laid out on that plan.
pub(crate) fn execute(
    spec: &'static OpSpec,
    row: &'static KernelRow,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    out.check_writable(spec.name)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let out_contiguous = out.is_contiguous();
    // A contiguous view never overlaps itself; anything else gets the exact check.
    if !out_contiguous {
        let overlap = out.internal_overlap();
        if overlap.is_overlapping() {
            return Err(crate::Error::invalid_output(
                spec.name,
                overlap.describe("the output", out.shape(), out.strides()),
            ));
        }
    }
    // Partial overlap: read from a private copy so no element is overwritten before it is
    // read. (No copies, clones or heap allocations otherwise.)
    let partial: PerOperand<bool> = inputs.iter().map(|t| out.may_overlap(t) && !out.is_same_view(t)).collect();
    let mut copies: PerOperand<Tensor> = PerOperand::new();
    for (t, _) in inputs.iter().zip(&partial).filter(|&(_, &p)| p) {
        let copy = Tensor::empty(t.shape(), t.dtype(), t.device())?;
        copy.copy_(t)?;
        copies.push(copy);
    }
    let mut staged = copies.iter();
    let sources: PerOperand<&Tensor> =
        inputs.iter().zip(&partial).map(|(&t, &p)| if p { staged.next().unwrap_or(t) } else { t }).collect();
    // All operands row-major contiguous in one shape (the common case): the canonical plan
    // is one run of unit stride (no dim for a single element), built without sorting.
    let numel = [out.numel()];
    let dense_dims: usize = if numel[0] == 1 { 0 } else { 1 };
    let dense = |t: &Tensor| t.shape() == out.shape() && t.is_contiguous();
    let all_dense = out_contiguous && sources.iter().all(|t| dense(t));
    let plan = if all_dense { None } else { Some(plan_of(out, &sources)?) };
    let mut wants: PerOperand<(&Storage, Access)> = sources.iter().map(|t| (t.storage(), Access::Read)).collect();
    wants.push((out.storage(), Access::Write));
    let locks = lock_many_for(spec.name, &wants)?;
    let raw = |t: &Tensor, i: usize| RawTensor {
        ptr: locks.base(t.storage()).wrapping_add(t.storage_offset() * t.elem_size()),
        dtype: t.dtype(),
        shape: plan.as_ref().map_or(&numel[..dense_dims], |p| &p.shape),
        strides: plan.as_ref().map_or(&UNIT[..dense_dims], |p| &p.strides[i]),
        device: t.device(),
    };
    let outputs = [raw(out, 0)];
    let in_raw: PerOperand<RawTensor<'_>> = sources.iter().enumerate().map(|(i, t)| raw(t, i + 1)).collect();
    let call = PreparedCall { op: spec, outputs: &outputs, inputs: &in_raw, params, index_strides: &[], fused: None };
    // SAFETY: every operand is a view of a storage locked above (out exclusively), so in
    // bounds by the view invariant, laid out on one canonical plan of out's shape (broadcast
    // inputs with stride 0); out has no internal overlap (checked) and partially
    // overlapping inputs were replaced by private copies, leaving only exact aliasing:
    // the PreparedCall contract.
    unsafe { row.kernel.run(&call) }
}

/// The unit stride of a dense one-run plan.
pub(super) const UNIT: [isize; 1] = [1];

/// The canonical plan of `out` and `sources` (broadcast to `out`'s shape).
fn plan_of(out: &Tensor, sources: &[&Tensor]) -> Result<IterPlan> {
    let mut strides: PerOperand<Strides> = PerOperand::new();
    strides.push(Strides::from_slice(out.strides()));
    for t in sources {
        strides.push(t.broadcast_strides(out.shape())?);
    }
    let plan_strides: PerOperand<&[isize]> = strides.iter().map(|s| s.as_slice()).collect();
    Ok(IterPlan::new(out.shape(), &plan_strides))
}
