//! The GPU-only cases of `cuda-perf` beside the shared bench set: 1- and 2-byte maps and
//! casts (which need 16-byte packed accesses to reach bandwidth), the 8-bit floats' maps and
//! casts (issue 35 asks them at 0.9 of a memcpy), the one-byte transpose
//! (words along both dims), softmax over row lengths
//! from 32 to 64 Ki columns and the attention shapes, maps with a broadcast row or column (a
//! bias, a per-row scale: the strided kernel), reductions over 2–8 element extents,
//! and argmax of one long row. `benches/gpu/torch_peers.py` times the same keys on PyTorch.

use crate::error::BenchResult;
use crate::ours::{input, Call};
use crate::stream::Pattern;
use std::hint::black_box;
use tensor_ops::prelude::*;

/// One GPU-only case: its key, the bytes a call moves (each element read or written once)
/// and how to prepare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraCase {
    /// Stable key: `op/dtype/shape` (the input's dtype and shape).
    pub key: String,
    /// Bytes read + written per call.
    pub bytes: u64,
    kind: Kind,
    dtype: DType,
    shape: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `add_out(a, b, out)`.
    AddOut,
    /// `relu_out(a, out)`.
    ReluOut,
    /// `a.to_dtype(to)`.
    Cast(DType),
    /// `a.softmax(1)` (`log`: `log_softmax`).
    Softmax { log: bool },
    /// `a.sum(&[1], false)`.
    SumLast,
    /// `a.argmax(1, false)`.
    ArgmaxLast,
    /// `a.t().contiguous()`.
    Transpose,
    /// `a + b` with `b` a row `[cols]` (a bias: the strided kernel, `b` broadcast down).
    AddRow,
    /// `a * b` with `b` a column `[rows, 1]` (a per-channel scale, broadcast along rows).
    MulColumn,
}

/// Row lengths of the softmax cases at every size.
pub const SOFTMAX_COLS: [usize; 6] = [32, 128, 1024, 4096, 16384, 65536];
/// Extents of the small-extent sums.
pub const SMALL_EXTENTS: [usize; 3] = [2, 4, 8];

impl ExtraCase {
    fn new(kind: Kind, dtype: DType, shape: Vec<usize>, name: &str, bytes: u64) -> ExtraCase {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        ExtraCase { key: format!("{name}/{}/{}", dtype.name(), dims.join("x")), bytes, kind, dtype, shape }
    }

    /// Prepares the case on `device`: inputs made on the CPU (f32 bench data cast to the
    /// case's dtype) and moved there.
    pub fn prepare_on(&self, device: Device) -> BenchResult<Call> {
        let mk = |shape: &[usize]| -> BenchResult<Tensor> {
            let t = input(DType::F32, shape)?;
            let t = if self.dtype == DType::F32 { t } else { t.to_dtype(self.dtype)? };
            Ok(t.to_device(device)?)
        };
        let shape = self.shape.clone();
        Ok(match self.kind {
            Kind::AddOut => {
                let (a, b) = (mk(&shape)?, mk(&shape)?);
                let o = Tensor::empty(&shape, self.dtype, device)?;
                Box::new(move || Ok(tensor_ops::add_out(&a, &b, &o)?))
            }
            Kind::ReluOut => {
                let a = mk(&shape)?;
                let o = Tensor::empty(&shape, self.dtype, device)?;
                Box::new(move || Ok(tensor_ops::relu_out(&a, &o)?))
            }
            Kind::Cast(to) => {
                let a = mk(&shape)?;
                Box::new(move || keep(a.to_dtype(to)?))
            }
            Kind::Softmax { log } => {
                let a = mk(&shape)?;
                Box::new(move || keep(if log { a.log_softmax(1)? } else { a.softmax(1)? }))
            }
            Kind::SumLast => {
                let a = mk(&shape)?;
                Box::new(move || keep(a.sum(&[1], false)?))
            }
            Kind::ArgmaxLast => {
                let a = mk(&shape)?;
                Box::new(move || keep(a.argmax(1, false)?))
            }
            Kind::Transpose => {
                let a = mk(&shape)?;
                Box::new(move || keep(a.t()?.contiguous()?))
            }
            Kind::AddRow => {
                let (a, b) = (mk(&shape)?, mk(&shape[1..])?);
                Box::new(move || keep(a.add(&b)?))
            }
            Kind::MulColumn => {
                let (a, b) = (mk(&shape)?, mk(&[shape[0], 1])?);
                Box::new(move || keep(a.mul(&b)?))
            }
        })
    }
}

fn keep(t: Tensor) -> BenchResult<()> {
    black_box(&t);
    Ok(())
}

/// The GPU-only cases whose largest array holds `bytes` bytes.
///
/// ```
/// let keys: Vec<String> = tensor_benches::cuda::extra::extra_set(1 << 20).into_iter().map(|c| c.key).collect();
/// assert!(keys.contains(&"add_out/u8/1048576".to_string()));
/// assert!(keys.contains(&"cast_f16/f32/262144".to_string()));
/// assert!(keys.contains(&"softmax_last/f32/8192x32".to_string()));
/// assert!(keys.contains(&"sum_last/f32/65536x4".to_string()));
/// assert!(keys.contains(&"argmax_last/f32/1x262144".to_string()));
/// assert!(keys.contains(&"transpose/u8/1024x1024".to_string()));
/// assert!(keys.contains(&"add_out/f8e4m3/1048576".to_string()));
/// assert!(keys.contains(&"add_row/f32/512x512".to_string()));
/// assert!(keys.contains(&"cast_f8e5m2/f32/262144".to_string()));
/// ```
pub fn extra_set(bytes: u64) -> Vec<ExtraCase> {
    let mut v = Vec::new();
    let n = |dt: DType| (bytes as usize / dt.size()).max(1);
    for dt in [DType::U8, DType::I8, DType::F16, DType::F8E4M3, DType::F8E5M2] {
        let b = n(dt) as u64 * dt.size() as u64;
        v.push(ExtraCase::new(Kind::AddOut, dt, vec![n(dt)], "add_out", Pattern::Add.bytes_moved(b)));
        v.push(ExtraCase::new(Kind::ReluOut, dt, vec![n(dt)], "relu_out", Pattern::Scale.bytes_moved(b)));
    }
    // casts: the larger of the two arrays holds `bytes`
    for (from, to) in [
        (DType::F32, DType::F16),
        (DType::F16, DType::F32),
        (DType::F32, DType::U8),
        (DType::U8, DType::F32),
        (DType::F32, DType::F8E4M3),
        (DType::F8E4M3, DType::F32),
        (DType::F32, DType::F8E5M2),
        (DType::F8E5M2, DType::F32),
    ] {
        let elems = (bytes as usize / from.size().max(to.size())).max(1);
        let moved = (elems * (from.size() + to.size())) as u64;
        v.push(ExtraCase::new(Kind::Cast(to), from, vec![elems], &format!("cast_{}", to.name()), moved));
    }
    let f = n(DType::F32);
    // (the shared set's softmax_last already runs the square shape)
    let square = crate::shapes::dims2(f)[1];
    for cols in SOFTMAX_COLS.into_iter().filter(|&c| c <= f && c != square) {
        let b = (f / cols * cols * 4) as u64;
        v.push(ExtraCase::new(Kind::Softmax { log: false }, DType::F32, vec![f / cols, cols], "softmax_last", 2 * b));
    }
    if f >= 1024 {
        let b = (f / 1024 * 1024 * 4) as u64;
        let shape = vec![f / 1024, 1024];
        v.push(ExtraCase::new(Kind::Softmax { log: true }, DType::F32, shape, "log_softmax_last", 2 * b));
    }
    if f >= 4096 {
        let h = n(DType::F16);
        let shape = vec![h / 4096, 4096];
        let b = (h / 4096 * 4096 * 2) as u64;
        v.push(ExtraCase::new(Kind::Softmax { log: false }, DType::F16, shape, "softmax_last", 2 * b));
    }
    for e in SMALL_EXTENTS {
        v.push(ExtraCase::new(Kind::SumLast, DType::F32, vec![f / e, e], "sum_last", (f / e * e * 4) as u64));
    }
    v.push(ExtraCase::new(Kind::ArgmaxLast, DType::F32, vec![1, f], "argmax_last", (f * 4) as u64));
    // maps with a broadcast operand (the strided kernel): a bias row, a per-row scale
    let [rows, cols] = crate::shapes::dims2(f);
    let moved = (2 * rows * cols * 4) as u64;
    v.push(ExtraCase::new(Kind::AddRow, DType::F32, vec![rows, cols], "add_row", moved + (cols * 4) as u64));
    v.push(ExtraCase::new(Kind::MulColumn, DType::F32, vec![rows, cols], "mul_column", moved + (rows * 4) as u64));
    let u = n(DType::U8);
    let shape = crate::shapes::dims2(u).to_vec();
    v.push(ExtraCase::new(Kind::Transpose, DType::U8, shape, "transpose", 2 * u as u64));
    v
}
