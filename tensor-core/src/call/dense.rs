//! The short way through the call path for dense elementwise calls: every input and the
//! output row-major contiguous and of one shape, the inputs of one dtype on one device.
//!
//! Such a call needs no broadcast, no promotion between dtypes, no memory-order choice, no
//! iteration plan and no overlap analysis beyond "another storage, or the very same view",
//! so it skips that machinery and its small-vector bookkeeping (the per-call overhead of
//! small ops). It makes every check the general path makes for such operands — arity (by
//! the caller), devices, the dtype rule, the kernel row, the output's shape and dtype,
//! aliasing, locks — and anything it does not recognise, errors included, goes the general
//! way, which reports them.

use super::launch::{Dest, Launch, Run};
use super::types::{can_cast, CallTypes};
use crate::registry::{CallExtra, KernelRow, OpSpec};
use crate::shape::same_dims;
use crate::{DType, Layout, Result, Scalar, Tensor, MAX_INPUTS};

/// The dtypes of a call whose inputs are all dense, of one shape, dtype and device; `None`
/// when they are not (or there are more inputs than any op takes).
///
/// With every input of one dtype `D`, PyTorch's promotion gives `D` (0-dim inputs
/// included); a float-only op computes integers and bool in f32; a predicate yields `Bool`.
fn dense_types(spec: &OpSpec, inputs: &[&Tensor]) -> Option<CallTypes> {
    let (first, rest) = inputs.split_first()?;
    if inputs.len() > MAX_INPUTS || !first.is_contiguous() {
        return None;
    }
    let (shape, dtype, device) = (first.shape(), first.dtype(), first.device());
    let alike =
        |t: &&Tensor| t.dtype() == dtype && t.device() == device && same_dims(t.shape(), shape) && t.is_contiguous();
    if !rest.iter().all(alike) {
        return None;
    }
    let kernel = if spec.float_only && !dtype.is_float() { DType::F32 } else { dtype };
    Some(CallTypes { kernel, result: if spec.bool_output { DType::Bool } else { kernel } })
}

/// [`super::map_new`] for dense inputs; `None` sends the call the general way.
pub(super) fn map_new_dense(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Option<Result<Tensor>> {
    let types = dense_types(spec, inputs)?;
    let first = inputs[0];
    let run = || {
        let row = super::lookup(spec, Layout::Strided, first.device(), types.kernel)?;
        // Dense inputs of one shape: the eager rule gives a row-major result. It is fresh:
        // no other handle, so no lock, until it is returned.
        let (out, base) = Tensor::empty_now_for(spec.name, first.shape(), types.result, first.device())?;
        run_dense(spec, row, &out, Some(base), inputs, params)?;
        Ok(out)
    };
    Some(run())
}

/// [`super::map_into`] for dense inputs and a dense `out` of their shape on their device,
/// which is either another storage or exactly the same view as each input it shares a
/// storage with (in place); `None` sends the call the general way.
pub(super) fn map_into_dense(
    spec: &'static OpSpec,
    inputs: &[&Tensor],
    params: &[Scalar],
    out: &Tensor,
) -> Option<Result<()>> {
    let types = dense_types(spec, inputs)?;
    let first = inputs[0];
    let fits = out.device() == first.device()
        && same_dims(out.shape(), first.shape())
        && out.is_contiguous()
        && can_cast(types.result, out.dtype())
        && !super::output::rounds_before_out(types.result, out.dtype());
    // Dense views of one shape on one storage are the same view exactly when they start at
    // the same element; any other sharing is a partial overlap (the general path copies).
    let aliasing_ok = inputs.iter().all(|t| !t.shares_storage(out) || t.storage_offset() == out.storage_offset());
    if !fits || !aliasing_ok {
        return None;
    }
    let run = || {
        let row = super::lookup(spec, Layout::Strided, first.device(), types.kernel)?;
        run_dense(spec, row, out, None, inputs, params)
    };
    Some(run())
}

/// Runs `row` on the operands as one contiguous run through the one tail. `fresh_out`:
/// the base address of an output the caller has just made and holds the only handle of
/// (left unlocked); `None`: `out` is checked writable and locked like any given output.
fn run_dense(
    spec: &'static OpSpec,
    row: &'static KernelRow,
    out: &Tensor,
    fresh_out: Option<*mut u8>,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    let dest = match fresh_out {
        Some(base) => Dest::Fresh(out, base),
        None => {
            out.check_writable(spec.name)?;
            // The callers checked every input is another storage or this very view.
            Dest::Apart(out)
        }
    };
    let launch = Launch { name: spec.name, op: spec, row, params, extra: CallExtra::None };
    launch.run(dest, inputs, |out, _| Ok(Run([out.numel()])))
}
