//! Calls with quantized operands: maps, copies and fills whose inputs are dequantized as
//! they are loaded and whose output is quantized as it is stored, in one pass (no f32
//! tensor in memory); reductions of a quantized tensor reduce its values.
//!
//! The rows are a map op's rows of the quantized dtype (`#[tensor_op(dtypes = [quantized])]`
//! gives them: the op's f32 kernel) and the [`QUANTIZED_COPY_SPEC`] rows; each gets the
//! operands' quantizers through [`CallExtra::Quantized`]. A per-channel operand is run
//! channel by channel (each channel's slice is per-tensor).
//!
//! Plain inputs may sit beside quantized ones (`add(q, x)`, a fused chain's constants):
//! they are read as their values, in f32.
//!
//! **Output quantizer.** A new result takes the first quantized input's quantizer (broadcast to the
//! result's shape), as PyTorch's `relu` does; to choose the output's scale and zero point
//! (PyTorch's `quantized::add(qa, qb, scale, zero_point)`), pass an output made with
//! [`Tensor::empty_quantized`] to the op's `_out` form. A predicate (`gt`, ...) gives a plain
//! bool tensor.

use super::launch::{layout_of, lookup, partially_overlaps, private_copy, Dest, Launch, MapLayout};
use super::{broadcast_all, check_arity, check_devices};
use crate::quant::OperandAffines;
use crate::registry::{
    CallExtra, KernelRow, OpSpec, DEQUANTIZE_CHANNELS_SPEC, QUANTIZED_COPY_SPEC, QUANTIZE_CHANNELS_SPEC,
};
use crate::{DType, Error, Layout, Result, Scalar, Tensor, MAX_INPUTS};

/// `copy_` where `dst` or `src` is quantized (strided; `src` broadcast to `dst`).
pub(crate) fn copy(dst: &Tensor, src: &Tensor) -> Result<()> {
    let op = "copy_";
    let src = src.broadcast_to(dst.shape()).map_err(|_| {
        Error::shape(
            op,
            format!("source shape {:?} cannot be broadcast to destination shape {:?}", src.shape(), dst.shape()),
        )
    })?;
    if dst.quant.is_some() && dst.quantizer() == src.quantizer() {
        // The same integers mean the same values: a byte copy (any devices).
        return dst.repr_view().copy_(&src.repr_view());
    }
    if dst.device() != src.device() {
        return copy(dst, &src.to_device(dst.device())?);
    }
    dst.check_writable(op)?;
    if dst.numel() == 0 {
        return Ok(());
    }
    if src.dtype() == DType::Bool {
        return Err(Error::DType {
            op,
            msg: format!("cannot copy bool into {} (quantize a real tensor)", dst.dtype()),
        });
    }
    if !dst.dtype().is_quantized() && !dst.dtype().is_float() {
        return Err(Error::DType {
            op,
            msg: format!(
                "a quantized tensor's values go into a float or quantized destination, not {} (int_repr() gives the stored integers)",
                dst.dtype()
            ),
        });
    }
    let (dst_axis, src_axis) = (dst.quantizer().and_then(|q| q.axis()), src.quantizer().and_then(|q| q.axis()));
    let done = match (dst_axis, src_axis) {
        // Per-channel quantizing / dequantizing: one pass, the scales as broadcast inputs.
        (Some(axis), None) if src.quant.is_none() && src.dtype() == DType::F32 => quantize_channels(dst, &src, axis),
        (None, Some(axis)) => dequantize_channels(dst, &src, axis),
        _ => {
            let row = lookup(&QUANTIZED_COPY_SPEC, Layout::Strided, dst.device(), DType::F32)?;
            run(&QUANTIZED_COPY_SPEC, row, dst, &[&src], &[])
        }
    };
    done.map_err(|e| e.renamed(op))
}

/// `values[c]` (one per channel of dim `axis`) as an f32 tensor broadcast to `shape`.
fn per_channel(values: Vec<f32>, shape: &[usize], axis: usize, device: crate::Device) -> Result<Tensor> {
    let mut dims: Vec<isize> = vec![1; shape.len()];
    dims[axis] = values.len() as isize;
    Tensor::from_vec(values, &[shape[axis]])?.to_device(device)?.view(&dims)?.broadcast_to(shape)
}

/// `dst` (per-channel quantized along `axis`) = `src` (f32) quantized, in one pass.
fn quantize_channels(dst: &Tensor, src: &Tensor, axis: usize) -> Result<()> {
    let q = dst.quantizer().ok_or_else(|| Error::invalid("copy_", "no quantizer"))?;
    let a = q.affine(0);
    let inv = (0..q.channels()).map(|c| q.affine(c).inv_scale).collect();
    let zp = (0..q.channels()).map(|c| q.affine(c).zero_point).collect();
    let (inv, zp) =
        (per_channel(inv, dst.shape(), axis, dst.device())?, per_channel(zp, dst.shape(), axis, dst.device())?);
    let spec = &QUANTIZE_CHANNELS_SPEC;
    let row = lookup(spec, Layout::Strided, dst.device(), DType::F32)?;
    let params = [Scalar::Float(a.qmin as f64), Scalar::Float(a.qmax as f64), Scalar::Float(a.nan as f64)];
    let launch = Launch { name: spec.name, op: spec, row, params: &params, extra: CallExtra::None };
    // The integers, as an exact cast of the integral f32 results.
    launch.run(Dest::Shared(&dst.repr_view()), &[src, &inv, &zp], MapLayout::of)
}

/// `dst` (a float tensor, or quantized per tensor) = the values of `src` (per-channel
/// quantized along `axis`), in one pass.
fn dequantize_channels(dst: &Tensor, src: &Tensor, axis: usize) -> Result<()> {
    let q = src.quantizer().ok_or_else(|| Error::invalid("copy_", "no quantizer"))?;
    let scale = (0..q.channels()).map(|c| q.affine(c).scale).collect();
    let zp = (0..q.channels()).map(|c| q.affine(c).zero_point).collect();
    let (scale, zp) =
        (per_channel(scale, dst.shape(), axis, dst.device())?, per_channel(zp, dst.shape(), axis, dst.device())?);
    let spec = &DEQUANTIZE_CHANNELS_SPEC;
    let row = lookup(spec, Layout::Strided, dst.device(), DType::F32)?;
    let mut affines: OperandAffines = [None; MAX_INPUTS + 1];
    affines[0] = dst.quantizer().map(|q| q.affine(0));
    let extra = if affines[0].is_some() {
        if !row.kernel.takes_quantized() {
            return Err(Error::invalid(
                spec.name,
                format!("the {} kernel does not take quantized operands", row.kernel.kind()),
            ));
        }
        CallExtra::Quantized(&affines)
    } else {
        CallExtra::None
    };
    let launch = Launch { name: spec.name, op: spec, row, params: &[], extra };
    launch.run(Dest::Shared(dst), &[&src.repr_view(), &scale, &zp], MapLayout::of)
}

/// `fill_` of a quantized tensor: `value` quantized with each channel's quantizer, then
/// stored as integers.
pub(crate) fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    let Some(q) = dst.quantizer() else { return super::fill(dst, value) };
    let v = value.to::<f64>() as f32;
    // The stored integer, as the kernels store it (`as` saturates): qint32's largest value
    // is 2^31 as an f32, which as an i64 would wrap to i32::MIN in the i32 fill.
    let (lo, hi) = q.dtype().quant_range().unwrap_or((i64::MIN, i64::MAX));
    let stored = |c: usize| Scalar::Int((q.affine(c).quantize(v) as i64).clamp(lo, hi));
    match q.axis() {
        None => dst.repr_view().fill_(stored(0)),
        Some(axis) => (0..q.channels()).try_for_each(|c| dst.select(axis, c)?.repr_view().fill_(stored(c))),
    }
}

/// A new result of map `spec` over `inputs`, one of them quantized.
pub(crate) fn map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
    check_arity(spec, inputs, params)?;
    let device = check_devices(spec, inputs, None)?;
    let kernel = kernel_dtype(spec, inputs)?;
    let row = lookup(spec, Layout::Strided, device, kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    let out = if spec.bool_output {
        Tensor::empty_for(spec.name, &shape, DType::Bool, device)?
    } else {
        let first = inputs.iter().find(|t| t.quant.is_some()).unwrap_or(&inputs[0]).broadcast_to(&shape)?;
        let q = first.quantizer().cloned().ok_or_else(|| Error::invalid(spec.name, "no quantized input"))?;
        Tensor::empty_quantized_for(spec.name, &shape, q, device)?
    };
    run(spec, row, &out, inputs, params)?;
    Ok(out)
}

/// Map `spec` into `out` (in place into `inputs[0]` when `None`), an input or the output
/// quantized.
pub(crate) fn map_into(
    spec: &'static OpSpec,
    inputs: &[&Tensor],
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<()> {
    let (out, what) = match out {
        Some(t) => (t, "out"),
        None => (inputs[0], "in-place"),
    };
    let device = check_devices(spec, inputs, Some(out))?;
    if layout_of(inputs.iter().copied().chain([out])) != Layout::Strided {
        return Err(Error::invalid(spec.name, "quantized tensors take part in strided calls only"));
    }
    let kernel = kernel_dtype(spec, inputs)?;
    let row = lookup(spec, Layout::Strided, device, kernel)?;
    let shape = broadcast_all(spec, inputs)?;
    if out.shape() != shape.as_slice() {
        return Err(Error::shape(
            spec.name,
            format!("the {what} output has shape {:?}, the inputs broadcast to {shape:?}", out.shape()),
        ));
    }
    let fits = if spec.bool_output {
        out.dtype() == DType::Bool
    } else {
        out.dtype().is_quantized() || out.dtype().is_float()
    };
    if !fits {
        let want = if spec.bool_output { "bool" } else { "a quantized or float dtype" };
        return Err(Error::DType {
            op: spec.name,
            msg: format!(
                "the {what} output is {}, but {} with quantized operands writes {want}",
                out.dtype(),
                spec.name
            ),
        });
    }
    out.check_writable(spec.name)?;
    run(spec, row, out, inputs, params)
}

/// The row's dtype: the first quantized input's (plain inputs beside it are read as their
/// values, in f32), else the plain rule.
fn kernel_dtype(spec: &OpSpec, inputs: &[&Tensor]) -> Result<DType> {
    match inputs.iter().find(|t| t.quant.is_some()) {
        Some(q) => Ok(q.dtype()),
        None => Ok(super::call_types(spec, inputs).kernel),
    }
}

/// Runs `row` with every operand's quantizer; a per-channel operand is split channel by
/// channel (recursively, one axis at a time).
fn run(
    spec: &'static OpSpec,
    row: &'static KernelRow,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    if inputs.len() > MAX_INPUTS {
        return Err(Error::invalid(spec.name, format!("quantized calls take at most {MAX_INPUTS} inputs")));
    }
    if !row.kernel.takes_quantized() {
        return Err(Error::invalid(
            spec.name,
            format!(
                "the {} kernel ({:?}) does not take quantized operands yet: dequantize() first, or run on the CPU",
                row.kernel.kind(),
                row.device
            ),
        ));
    }
    let inputs: Vec<Tensor> = inputs.iter().map(|t| t.broadcast_to(out.shape())).collect::<Result<_>>()?;
    let per_channel = std::iter::once(out).chain(&inputs).find_map(|t| t.quantizer().and_then(|q| q.axis()));
    if let Some(axis) = per_channel {
        // The channels run one after another, so an input that partially overlaps the
        // output (`add_out(&z, &z.flip(0)?, &z)`) would be read after earlier channels
        // wrote it: such an input is read from a private copy, as one launch does for a
        // whole call. (An input that is the output's own view reads each element before
        // its channel writes it.)
        let inputs: Vec<Tensor> = inputs
            .into_iter()
            .map(|t| if partially_overlaps(out, &t) { private_copy(spec.name, &t) } else { Ok(t) })
            .collect::<Result<_>>()?;
        for c in 0..out.shape()[axis] {
            let o = out.select(axis, c)?;
            let ins: Vec<Tensor> = inputs.iter().map(|t| t.select(axis, c)).collect::<Result<_>>()?;
            let refs: Vec<&Tensor> = ins.iter().collect();
            run(spec, row, &o, &refs, params)?;
        }
        return Ok(());
    }
    let mut affines: OperandAffines = [None; MAX_INPUTS + 1];
    for (slot, t) in affines.iter_mut().zip(std::iter::once(out).chain(&inputs)) {
        *slot = t.quantizer().map(|q| q.affine(0));
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let launch = Launch { name: spec.name, op: spec, row, params, extra: CallExtra::Quantized(&affines) };
    launch.run(Dest::Shared(out), &refs, MapLayout::of)
}
