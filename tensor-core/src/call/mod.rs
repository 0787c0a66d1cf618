//! The one call path. Every op — elementwise map, copy/cast, fill (and, next, reductions
//! and fused chains) — reaches its kernel through here:
//!
//! 1. devices: every operand on one device, else [`crate::Error::DeviceMismatch`];
//! 2. dtypes: the op's rule ([`call_types`]: PyTorch promotion, float-only ops computing
//!    integers in f32, predicates producing `Bool`; a copy/fill runs the destination's row);
//! 3. the kernel row, looked up by the op's `&'static` spec (no name hashing), device,
//!    layout and dtype — a missing row is [`crate::Error::NoKernel`], never a fallback;
//! 4. shapes: NumPy broadcast; a new output follows its inputs' memory order, a given one
//!    must have the result's shape and a dtype the result can be cast to;
//! 5. the one tail (`launch`, private), shared by every kind of call: output overlap,
//!    partial input/output overlap, the plan's geometry, locks, and the backend's kernel
//!    through [`crate::registry::KernelImpl::run`].
//!
//! Dense elementwise calls (every operand row-major contiguous, one shape, the inputs of one
//! dtype) take a shorter way through the same checks (`dense`, private), without the
//! broadcast, promotion, plan and overlap machinery they do not need, to the same tail.

mod dense;
pub mod fused;
mod launch;
mod output;
pub(crate) mod quantized;
mod reduce;
mod reduce_geometry;
mod reduce_strided;
pub(crate) mod sparse;
mod types;

pub use reduce::reduce;
pub use reduce_geometry::{reduction_plan, ReduceDims, ReductionPlan};
pub use types::{call_types, can_cast, CallTypes};

use crate::registry::{CallExtra, KernelRow, OpSpec, COPY_SPEC, FILL_SPEC};
use crate::shape::{self, Dims};
use crate::{Device, Error, Layout, Result, Scalar, Tensor};
use launch::{layout_of, lookup, Dest, Launch, MapLayout};

/// Where the result of an elementwise op goes.
#[derive(Clone, Copy, Debug)]
pub enum Output<'a> {
    /// A new tensor.
    New,
    /// Into the first input.
    InPlace,
    /// Into this tensor.
    Out(&'a Tensor),
}

fn check_arity(spec: &OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    if inputs.len() != spec.arity || params.len() != spec.params.len() || inputs.is_empty() {
        return Err(Error::invalid(
            spec.name,
            format!(
                "{} takes {} tensor(s) and {} param(s) ({:?}), got {} and {}",
                spec.name,
                spec.arity,
                spec.params.len(),
                spec.params,
                inputs.len(),
                params.len()
            ),
        ));
    }
    Ok(())
}

fn check_devices(spec: &OpSpec, inputs: &[&Tensor], out: Option<&Tensor>) -> Result<Device> {
    let first = inputs[0];
    for t in inputs.iter().skip(1).copied().chain(out) {
        first.check_same_device(spec.name, t)?;
    }
    Ok(first.device())
}

fn broadcast_all(spec: &OpSpec, inputs: &[&Tensor]) -> Result<Dims> {
    let mut shape = Dims::from_slice(inputs[0].shape());
    for t in &inputs[1..] {
        if t.shape() != shape.as_slice() {
            shape = shape::broadcast_shapes(spec.name, &shape, t.shape())?;
        }
    }
    Ok(shape)
}

/// Runs `row` writing `out` from `inputs` (each broadcastable to `out`'s shape) and
/// `params` through the one tail, on the canonical plan of `out`'s shape ([`MapLayout`]),
/// inputs partially overlapping `out` read from private copies.
fn execute(
    spec: &'static OpSpec,
    row: &'static KernelRow,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    let launch = Launch { name: spec.name, op: spec, row, params, extra: CallExtra::None };
    launch.run(Dest::Shared(out), inputs, MapLayout::of)
}

/// Runs the elementwise op `spec` on `inputs` and `params`, writing where `output` says.
/// Returns the new tensor for [`Output::New`], else `None`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::call::{map, Output};
/// use tensor_ops::tensor_core::registry::COPY_SPEC;
/// use tensor_ops::{DType, Tensor};
/// let a = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
/// // COPY_SPEC as a one-input map: the identity, with promotion
/// let b = map(&COPY_SPEC, &[&a], &[], Output::New).unwrap().unwrap();
/// assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, 2]);
/// ```
pub fn map(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], output: Output<'_>) -> Result<Option<Tensor>> {
    match output {
        Output::New => map_new(spec, inputs, params).map(Some),
        Output::InPlace => map_into(spec, inputs, params, None).map(|_| None),
        Output::Out(out) => map_into(spec, inputs, params, Some(out)).map(|_| None),
    }
}

/// [`map`] into a new tensor (memory order of the inputs where they agree).
pub fn map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
    check_arity(spec, inputs, params)?;
    if inputs.iter().any(|t| t.quant.is_some()) {
        return quantized::map_new(spec, inputs, params);
    }
    if let Some(done) = dense::map_new_dense(spec, inputs, params) {
        return done;
    }
    let device = check_devices(spec, inputs, None)?;
    let layout = layout_of(inputs.iter().copied());
    if layout != Layout::Strided {
        return sparse::map_new(spec, inputs, params, layout);
    }
    let types = call_types(spec, inputs);
    let row = lookup(spec, layout, device, types.kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    shape::checked_numel(spec.name, &shape, types.result)?;
    let out = output::new_output(&shape, types.result, device, inputs)?;
    execute(spec, row, &out, inputs, params)?;
    Ok(out)
}

/// [`map`] into `out`, or in place into `inputs[0]` when `out` is `None`.
pub fn map_into(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], out: Option<&Tensor>) -> Result<()> {
    check_arity(spec, inputs, params)?;
    if inputs.iter().copied().chain(out).any(|t| t.quant.is_some()) {
        return quantized::map_into(spec, inputs, params, out);
    }
    let layout = layout_of(inputs.iter().copied().chain(out));
    if layout != Layout::Strided {
        check_devices(spec, inputs, out)?;
        return sparse::map_into(spec, inputs, params, out, layout);
    }
    let (out, what) = match out {
        Some(t) => (t, "out"),
        None => (inputs[0], "in-place"),
    };
    if let Some(done) = dense::map_into_dense(spec, inputs, params, out) {
        return done;
    }
    let device = check_devices(spec, inputs, Some(out))?;
    let types = call_types(spec, inputs);
    let row = lookup(spec, layout, device, types.kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    output::check_output(spec, out, &shape, types.result, what)?;
    out.check_writable(spec.name)?;
    if output::rounds_before_out(types.result, out.dtype()) {
        let result = map_new(spec, inputs, params)?;
        return copy(out, &result).map_err(|e| e.renamed(spec.name));
    }
    execute(spec, row, out, inputs, params)
}

/// Copies `src` (broadcast to `dst`'s shape, any dtype: Rust `as` casts) into `dst` on the
/// same device. The path behind [`Tensor::copy_`], which also handles copies across
/// devices.
pub(crate) fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    let src = src.broadcast_to(dst.shape()).map_err(|_| {
        Error::shape(
            "copy_",
            format!("source shape {:?} cannot be broadcast to destination shape {:?}", src.shape(), dst.shape()),
        )
    })?;
    dst.check_writable("copy_")?;
    dst.check_same_device("copy_", &src)?;
    if dst.numel() == 0 || dst.is_same_view(&src) && !dst.has_internal_overlap() {
        return Ok(());
    }
    let row = lookup(&COPY_SPEC, layout_of([dst, &src]), dst.device(), dst.dtype())?;
    // Errors of the internal "copy"/"fill" ops name the public method instead.
    execute(&COPY_SPEC, row, dst, &[&src], &[]).map_err(|e| e.renamed("copy_"))
}

/// Writes `value` into every element of `dst`. The path behind [`Tensor::fill_`].
pub(crate) fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    if dst.quant.is_some() {
        return quantized::fill(dst, value);
    }
    dst.check_writable("fill_")?;
    if dst.numel() == 0 {
        return Ok(());
    }
    let row = lookup(&FILL_SPEC, layout_of([dst]), dst.device(), dst.dtype())?;
    execute(&FILL_SPEC, row, dst, &[], &[value]).map_err(|e| e.renamed("fill_"))
}
