//! The bench cases through candle-core 0.11 (CPU, default features off), the way its users
//! would write them. Candle has no in-place fill and no `out=` variants: those cases are `None`.

use candle_core::{Device, Tensor, WithDType};
use half::f16;
use std::hint::black_box;
use tensor_benches::cases::{Case, Op};
use tensor_benches::data::{host_vec, BenchElem};
use tensor_ops::DType;

/// One prepared call.
pub type PeerCall = Box<dyn FnMut()>;

fn mk<T: BenchElem + WithDType>(shape: &[usize]) -> Option<Tensor> {
    Tensor::from_vec(host_vec::<T>(shape.iter().product()), shape.to_vec(), &Device::Cpu).ok()
}

/// Runs `f` and keeps its result alive until after timing (errors are impossible once the
/// shapes were checked at preparation, so they are ignored).
fn call(f: impl Fn() -> candle_core::Result<Tensor> + 'static) -> Option<PeerCall> {
    f().ok()?;
    Some(Box::new(move || {
        black_box(f().ok());
    }))
}

fn prepare_t<T: BenchElem + WithDType>(case: &Case) -> Option<PeerCall> {
    let shape = case.input_shape();
    match case.op {
        Op::Copy => {
            let a = mk::<T>(&shape)?;
            let o = a.zeros_like().ok()?;
            o.slice_set(&a, 0, 0).ok()?;
            Some(Box::new(move || {
                black_box(o.slice_set(&a, 0, 0).ok());
            }))
        }
        Op::Transpose => {
            let a = mk::<T>(&shape)?;
            call(move || a.t()?.contiguous())
        }
        Op::Permute => {
            let a = mk::<T>(&shape)?;
            call(move || a.permute((2, 0, 1))?.contiguous())
        }
        Op::SliceCols => {
            // Candle has no stepped slice: view [r, 2c] as [r, c, 2] and take index 0 of the last dim.
            let a = mk::<T>(&shape)?;
            let (r, c) = (shape[0], shape[1] / 2);
            call(move || a.reshape((r, c, 2))?.narrow(2, 0, 1)?.squeeze(2)?.contiguous())
        }
        Op::AddNew => {
            let (a, b) = (mk::<T>(&shape)?, mk::<T>(&shape)?);
            call(move || a.add(&b))
        }
        Op::AddTransposed => {
            let a = mk::<T>(&shape)?;
            let bs = mk::<T>(&[shape[1], shape[0]])?;
            call(move || a.add(&bs.t()?))
        }
        Op::ExpNew if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.exp())
        }
        Op::ReluNew if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.relu())
        }
        Op::SiluNew if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.silu())
        }
        // Candle has no fusion: its best is the eager chain, for both rows.
        Op::FusedTriad | Op::EagerTriad if <T as BenchElem>::DTYPE == DType::F32 => {
            let (a, b, c) = (mk::<T>(&shape)?, mk::<T>(&shape)?, mk::<T>(&shape)?);
            call(move || a.mul(&b)?.add(&c)?.relu())
        }
        Op::FusedSqDiffSum | Op::EagerSqDiffSum if <T as BenchElem>::DTYPE == DType::F32 => {
            let (a, b) = (mk::<T>(&shape)?, mk::<T>(&shape)?);
            call(move || a.sub(&b)?.sqr()?.sum_all())
        }
        // Reductions as candle's users write them.
        Op::SumLast if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.sum_keepdim(1))
        }
        Op::SumFirst if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.sum_keepdim(0))
        }
        Op::AmaxLast if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.max_keepdim(1))
        }
        Op::AmaxFirst if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.max_keepdim(0))
        }
        Op::ArgmaxLast if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.argmax_keepdim(1))
        }
        Op::ArgmaxFirst if <T as BenchElem>::DTYPE == DType::F32 => {
            let a = mk::<T>(&shape)?;
            call(move || a.argmax_keepdim(0))
        }
        _ => None,
    }
}

/// Prepares `case` through candle; `None` when candle has no such operation or dtype.
pub fn prepare(case: &Case) -> Option<PeerCall> {
    match case.dtype {
        DType::F32 => prepare_t::<f32>(case),
        DType::F16 => prepare_t::<f16>(case),
        DType::I64 => prepare_t::<i64>(case),
        _ => None,
    }
}

/// A new-output add of two `[n]` f32 tensors.
pub fn latency(n: usize) -> Option<PeerCall> {
    let a = mk::<f32>(&[n])?;
    let b = a.clone();
    call(move || a.add(&b))
}
