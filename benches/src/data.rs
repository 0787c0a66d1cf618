//! Deterministic input data for the benches, as host vectors every library can adopt.

use crate::error::{BenchError, BenchResult};
use half::f16;
use rayon::prelude::*;
use tensor_ops::DType;

/// The `i`-th input value: a saw-tooth in `[-4, 4)` with step 1/256 (exp stays finite,
/// relu sees both signs).
pub fn value(i: usize) -> f32 {
    ((i % 2048) as f32 - 1024.0) / 256.0
}

/// An element type the benches generate data for.
pub trait BenchElem: Copy + Send + Sync + 'static {
    /// Its tensor-ops dtype.
    const DTYPE: DType;
    /// The `i`-th input value ([`value`] converted; integers get `value * 256`).
    fn nth(i: usize) -> Self;
    /// The value `fill` cases write.
    fn fill_value() -> Self;
}

impl BenchElem for f32 {
    const DTYPE: DType = DType::F32;
    fn nth(i: usize) -> f32 {
        value(i)
    }
    fn fill_value() -> f32 {
        1.5
    }
}

impl BenchElem for f16 {
    const DTYPE: DType = DType::F16;
    fn nth(i: usize) -> f16 {
        f16::from_f32(value(i))
    }
    fn fill_value() -> f16 {
        f16::from_f32(1.5)
    }
}

impl BenchElem for i64 {
    const DTYPE: DType = DType::I64;
    fn nth(i: usize) -> i64 {
        (i % 2048) as i64 - 1024
    }
    fn fill_value() -> i64 {
        3
    }
}

/// `n` deterministic values of `T`, generated in parallel.
pub fn host_vec<T: BenchElem>(n: usize) -> Vec<T> {
    (0..n).into_par_iter().map(T::nth).collect()
}

/// Host data of one of the benched dtypes.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// `f32`.
    F32(Vec<f32>),
    /// `f16`.
    F16(Vec<f16>),
    /// `i64`.
    I64(Vec<i64>),
    /// The f32 values, converted to another dtype (the 8-bit floats) when made a tensor.
    Converted(Vec<f32>, DType),
}

/// `n` deterministic values of `dtype` (f32, f16 or i64; the other floats converted from f32).
pub fn host_data(dtype: DType, n: usize) -> BenchResult<HostData> {
    Ok(match dtype {
        DType::F32 => HostData::F32(host_vec(n)),
        DType::F16 => HostData::F16(host_vec(n)),
        DType::I64 => HostData::I64(host_vec(n)),
        other if other.is_float() => HostData::Converted(host_vec(n), other),
        other => return Err(BenchError::Other(format!("no bench data for dtype {other}"))),
    })
}

impl HostData {
    /// Moves the data into a CPU tensor of `shape`.
    pub fn into_tensor(self, shape: &[usize]) -> BenchResult<tensor_ops::Tensor> {
        use tensor_ops::Tensor;
        Ok(match self {
            HostData::F32(v) => Tensor::from_vec(v, shape)?,
            HostData::F16(v) => Tensor::from_vec(v, shape)?,
            HostData::I64(v) => Tensor::from_vec(v, shape)?,
            HostData::Converted(v, d) => Tensor::from_vec(v, shape)?.to_dtype(d)?,
        })
    }
}
