//! The launchers: run the plans of [`super::plan`] on a device's stream. `launch_map` is
//! what the elementwise call path of `tensor-ops` calls for `Kernel::CudaMap` rows; `copy`
//! and `fill` are the [`CopyFn`](tensor_core::registry::CopyFn) and
//! [`FillFn`](tensor_core::registry::FillFn) of the `"copy"`/`"fill"` CUDA rows.
//!
//! Everything is queued on the device's stream and returns without waiting; host reads
//! (`to_vec`) wait for the stream.

use crate::kernel::{CudaMapKernel, CudaReduceKernel};
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{Error, Result, Scalar};

use super::alloc::CudaAllocator;
use super::plan::{self, Step};
use super::reduce_plan;
use super::runtime::{self, CudaDevice};

/// An error naming `what` unless every operand of `others` is on `out`'s device.
pub(crate) fn same_device(what: &str, out: &RawTensor<'_>, others: &[RawTensor<'_>]) -> Result<()> {
    match others.iter().find(|t| t.device != out.device) {
        Some(t) => Err(Error::Cuda(format!("{what}: operands on {} and {}", out.device, t.device))),
        None => Ok(()),
    }
}

/// Queues `steps` on `dev`'s stream.
///
/// # Safety
/// Every pointer in the steps addresses memory of `dev` valid for each access the step
/// makes, and stays valid until the stream reaches it (the caching allocator guarantees
/// the latter for storage freed afterwards).
pub unsafe fn run(dev: &CudaDevice, steps: &[Step]) -> Result<()> {
    for step in steps {
        match step {
            // SAFETY: forwarded from the caller; the args block matches the kernel (the
            // planner pairs every spec with its argument struct).
            Step::Kernel(l) => unsafe { dev.launch(&l.spec, l.grid, l.block, l.args.as_ptr(), l.args.size())? },
            // SAFETY: forwarded from the caller.
            Step::Memcpy { dst, src, bytes } => unsafe { dev.memcpy_dtod(*dst, *src, *bytes)? },
        }
    }
    Ok(())
}

/// Runs `out = kernel(inputs..., params...)` on the output's CUDA device: canonicalises,
/// picks contiguous / strided-32 / strided-64 kernels, splits deep plans, compiles at first
/// use (cubin for the device's `sm_XX`, PTX as fallback) and launches on the device's stream.
///
/// # Safety
/// `out` and every input are in-bounds views of locked storages on one CUDA device (out
/// exclusively); inputs have `out.shape` (broadcast dims with stride 0); `out` has no
/// internal overlap and does not partially overlap any input (exact aliasing is fine).
pub unsafe fn launch_map(
    kernel: &CudaMapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { launch_map_quantized(kernel, out, inputs, params, None) }
}

/// [`launch_map`] with quantized operands: `quant[k]` (output first) dequantizes input
/// `k - 1` on load or quantizes the output before its store.
///
/// # Safety
/// As [`launch_map`].
pub unsafe fn launch_map_quantized(
    kernel: &CudaMapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
    quant: Option<&tensor_core::quant::OperandAffines>,
) -> Result<()> {
    same_device(kernel.function, out, inputs)?;
    let dev = runtime::device_of(out.device)?;
    let steps = plan::plan_map(kernel, out, inputs, params, quant, dev.max_blocks())?;
    // SAFETY: the caller's contract covers every address the plan touches.
    unsafe { run(&dev, &steps) }
}

/// The CUDA `"copy"` kernel: `dst = src as dst.dtype` on one device.
///
/// # Safety
/// As [`tensor_core::registry::CopyFn`].
pub unsafe fn copy(dst: &RawTensor<'_>, src: &RawTensor<'_>) -> Result<()> {
    same_device("copy", dst, std::slice::from_ref(src))?;
    let dev = runtime::device_of(dst.device)?;
    let steps = plan::plan_copy(dst, src, dev.max_blocks())?;
    // SAFETY: the caller's contract covers every address the plan touches.
    unsafe { run(&dev, &steps) }
}

/// The CUDA `"fill"` kernel.
///
/// # Safety
/// As [`tensor_core::registry::FillFn`].
pub unsafe fn fill(dst: &RawTensor<'_>, value: Scalar) -> Result<()> {
    let dev = runtime::device_of(dst.device)?;
    let steps = plan::plan_fill(dst, value, dev.max_blocks())?;
    // SAFETY: the caller's contract covers every address the plan touches.
    unsafe { run(&dev, &steps) }
}

impl KernelImpl for CudaMapKernel {
    fn kind(&self) -> &'static str {
        "cuda-map"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let [out] = call.outputs else {
            return Err(Error::invalid(call.op.name, "a CUDA map kernel writes exactly one output"));
        };
        // SAFETY: the PreparedCall contract is launch_map's (one CUDA device, checked there).
        unsafe { launch_map_quantized(self, out, call.inputs, call.params, call.quantized()) }
    }
    fn takes_quantized(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Runs the reduction of `input` into `out` on their CUDA device: plans row / column
/// kernels (and a second pass with a stream-ordered workspace for split extents) and queues
/// them on the device's stream.
///
/// # Safety
/// `out` and `input` are views of locked storages on one CUDA device laid out on the core's
/// canonical reduction plan (shared shape, `out` stride 0 along reduced dims and without
/// overlap along kept dims, not overlapping `input`); `index_strides` pairs with the plan.
pub unsafe fn launch_reduce(
    kernel: &CudaReduceKernel,
    out: &RawTensor<'_>,
    input: &RawTensor<'_>,
    index_strides: &[isize],
    params: &[Scalar],
) -> Result<()> {
    same_device(kernel.reducer, out, std::slice::from_ref(input))?;
    let dev = runtime::device_of(out.device)?;
    let plan = reduce_plan::plan_reduce(kernel, out, input, index_strides, params, dev.max_blocks())?;
    // SAFETY: the caller's contract covers the operands the plan reads and writes.
    unsafe { run_reduce_plan(&dev, plan) }
}

/// Queues a reduction plan on `dev`'s stream, with a stream-ordered workspace of the size it
/// asks for (none when the extent is not split).
///
/// # Safety
/// Every operand address of the plan's launches (all but the workspace) is live device
/// memory laid out as the plan says.
pub unsafe fn run_reduce_plan(dev: &CudaDevice, mut plan: reduce_plan::ReducePlan) -> Result<()> {
    // Freed back to the stream-ordered cache when this returns: only later work on the
    // same stream reuses it, after these launches.
    let workspace = (plan.workspace_bytes > 0)
        .then(|| CudaAllocator::allocate_on(dev.ordinal, plan.workspace_bytes))
        .transpose()?;
    // No workspace: a null pointer.
    plan.bind_workspace(workspace.as_ref().map_or(0, |w| w.as_ptr() as usize as u64));
    // SAFETY: the caller's contract covers the operands; the workspace is a live device
    // block of the size the plan asked for.
    unsafe { run(dev, &plan.steps) }
}

impl KernelImpl for CudaReduceKernel {
    fn kind(&self) -> &'static str {
        "cuda-reduce"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let ([out], [input]) = (call.outputs, call.inputs) else {
            return Err(Error::invalid(call.op.name, "a CUDA reduction kernel takes one output and one input"));
        };
        // SAFETY: the PreparedCall contract of a reduction is launch_reduce's.
        unsafe { launch_reduce(self, out, input, call.index_strides(), call.params) }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
