//! The bench cases through tensor-ops: each is prepared once (inputs allocated and filled)
//! and returns a closure that performs one call.

use crate::cases::{Case, Op};
use crate::data::host_data;
use crate::error::BenchResult;
use std::hint::black_box;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// One prepared call.
pub type Call = Box<dyn FnMut() -> BenchResult<()>>;

/// A CPU tensor of `shape` holding the deterministic bench data of `dtype`.
pub fn input(dtype: DType, shape: &[usize]) -> BenchResult<Tensor> {
    host_data(dtype, shape.iter().product())?.into_tensor(shape)
}

/// Prepares `case` on `device` (inputs are made on the CPU and moved there).
pub fn prepare_on(case: &Case, device: Device) -> BenchResult<Call> {
    if case.dtype.is_quantized() {
        return prepare_quantized(case, device);
    }
    let dt = case.dtype;
    let shape = case.input_shape();
    let mk = |s: &[usize]| -> BenchResult<Tensor> { Ok(input(dt, s)?.to_device(device)?) };
    let out = || -> BenchResult<Tensor> { Ok(Tensor::empty(&case.output_shape(), dt, device)?) };
    Ok(match case.op {
        Op::Copy => {
            let (a, o) = (mk(&shape)?, out()?);
            Box::new(move || Ok(o.copy_(&a)?))
        }
        Op::Transpose => {
            let v = mk(&shape)?.t()?;
            Box::new(move || keep(v.contiguous()?))
        }
        Op::Permute => {
            let v = mk(&shape)?.permute(&[2, 0, 1])?;
            Box::new(move || keep(v.contiguous()?))
        }
        Op::SliceCols => {
            let v = mk(&shape)?.slice(1, 0, shape[1], 2)?;
            Box::new(move || keep(v.contiguous()?))
        }
        Op::Fill => {
            let o = out()?;
            Box::new(move || Ok(o.fill_(1.5f64)?))
        }
        Op::AddNew => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            Box::new(move || keep(a.add(&b)?))
        }
        Op::AddOut => {
            let (a, b, o) = (mk(&shape)?, mk(&shape)?, out()?);
            Box::new(move || Ok(tensor_ops::add_out(&a, &b, &o)?))
        }
        Op::AddTransposed => {
            let a = mk(&shape)?;
            let b = mk(&[shape[1], shape[0]])?.t()?;
            Box::new(move || keep(a.add(&b)?))
        }
        Op::ExpNew => {
            let a = mk(&shape)?;
            Box::new(move || keep(a.exp()?))
        }
        Op::ExpOut => {
            let (a, o) = (mk(&shape)?, out()?);
            Box::new(move || Ok(tensor_ops::exp_out(&a, &o)?))
        }
        Op::ReluNew => {
            let a = mk(&shape)?;
            Box::new(move || keep(a.relu()?))
        }
        Op::ReluOut => {
            let (a, o) = (mk(&shape)?, out()?);
            Box::new(move || Ok(tensor_ops::relu_out(&a, &o)?))
        }
        Op::SumLast => reduction(mk(&shape)?, |a| a.sum(&[1], false)),
        Op::SumFirst => reduction(mk(&shape)?, |a| a.sum(&[0], false)),
        Op::AmaxLast => reduction(mk(&shape)?, |a| a.amax(&[1], false)),
        Op::AmaxFirst => reduction(mk(&shape)?, |a| a.amax(&[0], false)),
        Op::ArgmaxLast => reduction(mk(&shape)?, |a| a.argmax(1, false)),
        Op::ArgmaxFirst => reduction(mk(&shape)?, |a| a.argmax(0, false)),
        Op::VarLast => reduction(mk(&shape)?, |a| a.var(&[1], 1, false)),
        Op::VarFirst => reduction(mk(&shape)?, |a| a.var(&[0], 1, false)),
        Op::LogsumexpLast => reduction(mk(&shape)?, |a| a.logsumexp(&[1], false)),
        Op::SoftmaxLast => reduction(mk(&shape)?, |a| a.softmax(1)),
        Op::FusedTriad => {
            let (a, b, c) = (mk(&shape)?, mk(&shape)?, mk(&shape)?);
            let (x, y, z) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
            let chain = (&x * &y + &z).relu();
            Box::new(move || keep(chain.eval()?))
        }
        Op::EagerTriad => {
            let (a, b, c) = (mk(&shape)?, mk(&shape)?, mk(&shape)?);
            Box::new(move || keep(a.mul(&b)?.add(&c)?.relu()?))
        }
        Op::FusedSqDiffSum => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            let d = Expr::input(&a) - Expr::input(&b);
            let chain = (&d * &d).sum_all();
            Box::new(move || keep(chain.eval()?))
        }
        Op::EagerSqDiffSum => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            Box::new(move || {
                let d = a.sub(&b)?;
                keep(d.mul(&d)?.sum_all()?)
            })
        }
        Op::SiluNew => {
            let a = mk(&shape)?;
            Box::new(move || keep(tensor_ops::silu(&a)?))
        }
        Op::CastFromF32 => {
            let a = input(DType::F32, &shape)?.to_device(device)?;
            let o = out()?;
            Box::new(move || Ok(o.copy_(&a)?))
        }
        Op::CastToF32 => {
            let a = mk(&shape)?;
            let o = Tensor::empty(&shape, DType::F32, device)?;
            Box::new(move || Ok(o.copy_(&a)?))
        }
        Op::QuantizePerChannel => {
            return Err(crate::error::BenchError::Other(format!("{} runs on quantized dtypes only", case.key())))
        }
    })
}

/// The quantized cases: inputs are the f32 bench data quantized with scale 0.05, zero point
/// 0 (qint8/qint32) or 128 (quint8); a cast from f32 is quantizing into a preallocated
/// quantized output, a cast to f32 dequantizing; `add_out` writes an output of scale 0.1.
fn prepare_quantized(case: &Case, device: Device) -> BenchResult<Call> {
    let (dt, shape) = (case.dtype, case.input_shape());
    let zp = if dt == DType::QUInt8 { 128 } else { 0 };
    let q = tensor_ops::Quantizer::per_tensor(dt, 0.05, zp)?;
    let floats = |s: &[usize]| -> BenchResult<Tensor> { Ok(input(DType::F32, s)?.to_device(device)?) };
    let mk = |s: &[usize]| -> BenchResult<Tensor> { Ok(tensor_ops::quantize_per_tensor(&floats(s)?, 0.05, zp, dt)?) };
    Ok(match case.op {
        Op::CastFromF32 => {
            let (a, o) = (floats(&shape)?, Tensor::empty_quantized(&shape, &q, device)?);
            Box::new(move || Ok(o.copy_(&a)?))
        }
        Op::QuantizePerChannel => {
            let a = floats(&shape)?;
            let s = Tensor::full(&[shape[0]], 0.05, DType::F64, Device::Cpu)?;
            let z = Tensor::full(&[shape[0]], zp, DType::I64, Device::Cpu)?;
            Box::new(move || keep(tensor_ops::quantize_per_channel(&a, &s, &z, 0, dt)?))
        }
        Op::CastToF32 => {
            let (a, o) = (mk(&shape)?, Tensor::empty(&shape, DType::F32, device)?);
            Box::new(move || Ok(o.copy_(&a)?))
        }
        Op::AddNew => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            Box::new(move || keep(a.add(&b)?))
        }
        Op::AddOut => {
            let (a, b) = (mk(&shape)?, mk(&shape)?);
            let o = Tensor::empty_quantized(&shape, &tensor_ops::Quantizer::per_tensor(dt, 0.1, zp)?, device)?;
            Box::new(move || Ok(tensor_ops::add_out(&a, &b, &o)?))
        }
        Op::ReluNew => {
            let a = mk(&shape)?;
            Box::new(move || keep(a.relu()?))
        }
        _ => return Err(crate::error::BenchError::Other(format!("no quantized form of {}", case.key()))),
    })
}

/// A call of `f` on `a` whose result is kept observable and dropped.
fn reduction(a: Tensor, f: impl Fn(&Tensor) -> tensor_ops::Result<Tensor> + 'static) -> Call {
    Box::new(move || keep(f(&a)?))
}

/// Keeps a result observable (then drops it: freeing a new output is part of the call).
fn keep(t: Tensor) -> BenchResult<()> {
    black_box(&t);
    Ok(())
}

/// Prepares `case` on the CPU.
pub fn prepare(case: &Case) -> BenchResult<Call> {
    prepare_on(case, Device::Cpu)
}

/// A new-output `add` of two `[elems]` f32 tensors: the per-call latency case.
pub fn prepare_latency(elems: usize) -> BenchResult<Call> {
    let a = input(DType::F32, &[elems])?;
    let b = input(DType::F32, &[elems])?;
    Ok(Box::new(move || {
        black_box(a.add(&b)?);
        Ok(())
    }))
}

/// `add_out` of two f32 vectors of `elems` elements into a preallocated output: the
/// per-call overhead without allocation.
pub fn prepare_latency_out(elems: usize) -> BenchResult<Call> {
    let a = input(DType::F32, &[elems])?;
    let b = input(DType::F32, &[elems])?;
    let out = input(DType::F32, &[elems])?;
    Ok(Box::new(move || {
        tensor_ops::add_out(&a, &b, &out)?;
        black_box(&out);
        Ok(())
    }))
}
