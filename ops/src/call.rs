//! The elementwise call path every generated op goes through:
//! devices → result dtype (promotion) → kernel lookup (device × layout, then dtype) →
//! broadcast → output (new / in place / given) → overlap handling → locks → engine.

use smallvec::SmallVec;
use tensor_core::iter::PerOperand;
use tensor_core::registry::{registry, Kernel, KernelRow, OpSpec, RawTensor};
use tensor_core::shape::{Dims, Strides, INLINE_DIMS};
use tensor_core::{lock_many_for, result_type, shape, Access, DType, Device, Error, Layout, Result, Scalar, Tensor};

/// Where the result of an op goes.
#[derive(Clone, Copy)]
pub enum Output<'a> {
    /// A new tensor.
    New,
    /// Into the first input.
    InPlace,
    /// Into this tensor.
    Out(&'a Tensor),
}

/// The dtypes of one call: kernel row dtype (inputs are converted to it) and result dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTypes {
    /// The dtype whose kernel runs (the promoted input dtype, or f32 for integer inputs
    /// of float-only ops).
    pub kernel: DType,
    /// The dtype of the result tensor the op would allocate.
    pub result: DType,
}

/// Computes the dtypes of a call by PyTorch's rules (see `tensor_core::result_type`).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
/// let spec = tensor_ops::registry().op("exp").unwrap();
/// let t = tensor_ops::call_types(spec, &[&a]);
/// assert_eq!(t.result, DType::F32);
/// ```
pub fn call_types(spec: &OpSpec, inputs: &[&Tensor]) -> CallTypes {
    let operands: PerOperand<(DType, bool)> = inputs.iter().map(|t| (t.dtype(), t.ndim() > 0)).collect();
    let mut kernel = result_type(&operands);
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
/// use tensor_ops::{can_cast, DType};
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

fn check_devices(spec: &OpSpec, inputs: &[&Tensor], out: Option<&Tensor>) -> Result<Device> {
    let first =
        inputs.first().ok_or_else(|| Error::invalid("call", format!("{} needs at least one input", spec.name)))?;
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

/// The output layout rule: when every input that has the full shape has the same strides
/// and those strides are a dense permutation (no gaps, no overlap), the new output gets
/// the same memory order (so `a.t() + b.t()` stays a transposed, dense, copy-free result);
/// otherwise it is row-major contiguous.
fn new_output(shape: &[usize], dtype: DType, device: Device, inputs: &[&Tensor]) -> Result<Tensor> {
    let mut full = inputs.iter().filter(|t| t.shape() == shape);
    if let Some(first) = full.next() {
        let strides = first.strides();
        let agree = full.all(|t| t.strides() == strides);
        if agree && !first.is_contiguous() && is_dense_permutation(shape, strides) {
            let mut order: Dims = (0..shape.len()).collect();
            order.sort_by_key(|&d| std::cmp::Reverse(strides[d].unsigned_abs()));
            let permuted: Dims = order.iter().map(|&d| shape[d]).collect();
            let dense = Tensor::empty(&permuted, dtype, device)?;
            let mut inverse = Dims::from_elem(0, order.len());
            for (i, &d) in order.iter().enumerate() {
                inverse[d] = i;
            }
            return dense.permute(&inverse);
        }
    }
    Tensor::empty(shape, dtype, device)
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

fn lookup(spec: &OpSpec, device: Device, dtype: DType) -> Result<&'static KernelRow> {
    registry().lookup(spec.name, device, Layout::Strided, dtype)
}

fn check_arity(spec: &OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    if inputs.len() != spec.arity || params.len() != spec.params.len() {
        return Err(Error::invalid(
            "call",
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

/// Runs an elementwise op into a new tensor.
pub fn call_map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
    check_arity(spec, inputs, params)?;
    let device = check_devices(spec, inputs, None)?;
    let types = call_types(spec, inputs);
    let row = lookup(spec, device, types.kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    shape::checked_numel(spec.name, &shape, types.result)?;
    let out = new_output(&shape, types.result, device, inputs)?;
    execute(spec, row, inputs, params, &out)?;
    Ok(out)
}

/// Runs an elementwise op in place into `inputs[0]` (whose shape must be the broadcast
/// shape and whose dtype must be able to hold the result).
pub fn call_map_inplace(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    check_arity(spec, inputs, params)?;
    call_map_into(spec, inputs, params, inputs[0], "in-place")
}

/// Runs an elementwise op into `out` (exactly the broadcast shape; a dtype the result can
/// be cast to).
pub fn call_map_out(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], out: &Tensor) -> Result<()> {
    check_arity(spec, inputs, params)?;
    call_map_into(spec, inputs, params, out, "out")
}

fn call_map_into(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], out: &Tensor, what: &str) -> Result<()> {
    let device = check_devices(spec, inputs, Some(out))?;
    let types = call_types(spec, inputs);
    let row = lookup(spec, device, types.kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    if out.shape() != shape.as_slice() {
        return Err(Error::invalid_output(
            spec.name,
            format!(
                "the {what} tensor has shape {:?} but the result has shape {shape:?} (no implicit resize)",
                out.shape()
            ),
        ));
    }
    if !can_cast(types.result, out.dtype()) {
        return Err(Error::invalid_output(
            spec.name,
            format!(
                "the result dtype {} cannot be written into the {what} tensor of dtype {} (float → integer/bool and non-bool → bool are not allowed)",
                types.result,
                out.dtype()
            ),
        ));
    }
    execute(spec, row, inputs, params, out)
}

/// Checks the output against the inputs, stages partially overlapping inputs, locks and runs.
fn execute(spec: &OpSpec, row: &KernelRow, inputs: &[&Tensor], params: &[Scalar], out: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let overlap = out.internal_overlap();
    if overlap.is_overlapping() {
        return Err(Error::invalid_output(spec.name, overlap.describe("the output", out.shape(), out.strides())));
    }
    // Partial overlap: read from a private copy so no element is overwritten before it is
    // read. (No copies, clones or heap allocations otherwise.)
    let mut copies: PerOperand<Option<Tensor>> = PerOperand::new();
    for t in inputs {
        copies.push(if out.may_overlap(t) && !out.is_same_view(t) {
            let copy = Tensor::empty(t.shape(), t.dtype(), t.device())?;
            copy.copy_(t)?;
            Some(copy)
        } else {
            None
        });
    }
    let sources: PerOperand<&Tensor> = inputs.iter().zip(&copies).map(|(t, c)| c.as_ref().unwrap_or(t)).collect();
    let strides = sources.iter().map(|t| t.broadcast_strides(out.shape())).collect::<Result<PerOperand<Strides>>>()?;
    let mut wants: PerOperand<(&tensor_core::Storage, Access)> =
        sources.iter().map(|t| (t.storage(), Access::Read)).collect();
    wants.push((out.storage(), Access::Write));
    let locks = lock_many_for(spec.name, &wants)?;
    let out_raw = out.raw(locks.base(out.storage()));
    let in_raw: PerOperand<RawTensor<'_>> = sources
        .iter()
        .zip(&strides)
        .map(|(t, st)| RawTensor { shape: out.shape(), strides: st, ..t.raw(locks.base(t.storage())) })
        .collect();
    match &row.kernel {
        // SAFETY: every operand is a view of a storage locked above (out exclusively), so
        // in bounds by the view invariant; inputs are broadcast to out's shape; out has no
        // internal overlap (checked) and partially overlapping inputs were replaced by
        // private copies, leaving only exact aliasing.
        Kernel::Map(k) => unsafe { tensor_kernels::cpu::elementwise::run_map(k, &out_raw, &in_raw, params) },
        // SAFETY: as above, with device pointers of one CUDA device.
        Kernel::CudaMap(k) => cuda_map(k, &out_raw, &in_raw, params),
        _ => {
            Err(Error::invalid(spec.name, format!("the registered row for {} is not an elementwise kernel", spec.name)))
        }
    }
}

fn cuda_map(
    kernel: &tensor_core::registry::CudaMapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
) -> Result<()> {
    // SAFETY: `execute` (the only caller) locked every operand's storage (out exclusively),
    // broadcast the inputs to out's shape, rejected an internally overlapping output and
    // replaced partially overlapping inputs by private copies: launch_map's contract.
    unsafe { tensor_kernels::cuda::launch_map(kernel, out, inputs, params) }
}
