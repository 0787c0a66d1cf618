//! The bench set: which op, dtype and size, the shapes involved, the bytes each call moves
//! and the STREAM pattern it is held to. Shared by `cpu-perf`, the peer comparison and the
//! criterion benches, so every harness measures the same shapes.

use crate::shapes::{dims2, dims3};
use crate::stream::Pattern;
use tensor_ops::DType;

/// What a case does (f32 inputs unless its dtype says otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `out.copy_(&a)`, both contiguous, `out` preallocated.
    Copy,
    /// `a.t().contiguous()` of a 2-D `[r, c]` tensor.
    Transpose,
    /// `a.permute(&[2, 0, 1]).contiguous()` of a 3-D tensor.
    Permute,
    /// `a.slice(1, 0, 2c, 2).contiguous()` of a `[r, 2c]` tensor (every other column).
    SliceCols,
    /// `a.fill_(v)` in place.
    Fill,
    /// `a.add(&b)`, new output.
    AddNew,
    /// `add_out(&a, &b, &out)`, preallocated output.
    AddOut,
    /// `a.add(&bs.t())` with `bs` stored transposed, new output.
    AddTransposed,
    /// `a.exp()`, new output.
    ExpNew,
    /// `exp_out(&a, &out)`.
    ExpOut,
    /// `a.relu()`, new output.
    ReluNew,
    /// `relu_out(&a, &out)`.
    ReluOut,
    /// `a.sum(&[1], false)` of a `[r, c]` tensor (along the contiguous dim).
    SumLast,
    /// `a.sum(&[0], false)` (along the first, strided dim).
    SumFirst,
    /// `a.amax(&[1], false)`.
    AmaxLast,
    /// `a.amax(&[0], false)`.
    AmaxFirst,
    /// `a.argmax(1, false)`.
    ArgmaxLast,
    /// `a.argmax(0, false)` (along the first, strided dim; held to the read loop).
    ArgmaxFirst,
    /// `a.var(&[1], 1, false)`.
    VarLast,
    /// `a.var(&[0], 1, false)` (held to the read loop).
    VarFirst,
    /// `a.logsumexp(&[1], false)`.
    LogsumexpLast,
    /// `a.softmax(1)`, new output (held to the copy pattern: read once, write once).
    SoftmaxLast,
    /// `relu(a*b + c)` as a fused chain (`tensor_ops::fuse::Expr`), new output.
    FusedTriad,
    /// `a.mul(&b)?.add(&c)?.relu()`: the same chain eagerly (three passes).
    EagerTriad,
    /// `((a - b)²).sum()` as a fused chain (a 0-dim result).
    FusedSqDiffSum,
    /// The same eagerly: `d = a - b; (d * d).sum_all()`.
    EagerSqDiffSum,
    /// `a.silu()` (defined by composition: `x * sigmoid(x)`), new output.
    SiluNew,
    /// `out.copy_(&a)` with `a` f32 and `out` of the case's dtype (a cast), preallocated.
    CastFromF32,
    /// `out.copy_(&a)` with `a` of the case's dtype and `out` f32, preallocated.
    CastToF32,
    /// `quantize_per_channel(&a, ..., axis 0, dtype)` of an f32 `[r, c]` tensor (one scale
    /// per row; new output; the bytes of a cast).
    QuantizePerChannel,
}

impl Op {
    /// Key name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Transpose => "transpose",
            Op::Permute => "permute201",
            Op::SliceCols => "slice_cols",
            Op::Fill => "fill",
            Op::AddNew => "add",
            Op::AddOut => "add_out",
            Op::AddTransposed => "add_transposed",
            Op::ExpNew => "exp",
            Op::ExpOut => "exp_out",
            Op::ReluNew => "relu",
            Op::ReluOut => "relu_out",
            Op::SumLast => "sum_last",
            Op::SumFirst => "sum_first",
            Op::AmaxLast => "amax_last",
            Op::AmaxFirst => "amax_first",
            Op::ArgmaxLast => "argmax_last",
            Op::ArgmaxFirst => "argmax_first",
            Op::VarLast => "var_last",
            Op::VarFirst => "var_first",
            Op::LogsumexpLast => "logsumexp_last",
            Op::SoftmaxLast => "softmax_last",
            Op::FusedTriad => "fused_relu_mul_add",
            Op::EagerTriad => "eager_relu_mul_add",
            Op::FusedSqDiffSum => "fused_sq_diff_sum",
            Op::EagerSqDiffSum => "eager_sq_diff_sum",
            Op::SiluNew => "silu",
            Op::CastFromF32 => "cast_from_f32",
            Op::CastToF32 => "cast_to_f32",
            Op::QuantizePerChannel => "quantize_per_channel",
        }
    }

    /// The STREAM pattern with the same reads and writes.
    pub fn pattern(self) -> Pattern {
        match self {
            // The casts are held to the copy loop's rate over the bytes they move.
            Op::Copy | Op::Transpose | Op::Permute | Op::SliceCols | Op::SoftmaxLast => Pattern::Copy,
            Op::CastFromF32 | Op::CastToF32 | Op::QuantizePerChannel => Pattern::Copy,
            Op::SumLast | Op::AmaxLast | Op::ArgmaxLast | Op::VarLast | Op::LogsumexpLast => Pattern::Read,
            // The issue's targets for argmax and var hold them to the read loop on any axis.
            Op::ArgmaxFirst | Op::VarFirst => Pattern::Read,
            Op::SumFirst | Op::AmaxFirst => Pattern::ReadRows,
            Op::Fill => Pattern::Fill,
            Op::AddNew | Op::AddOut | Op::AddTransposed => Pattern::Add,
            Op::ExpNew | Op::ExpOut | Op::ReluNew | Op::ReluOut | Op::SiluNew => Pattern::Scale,
            Op::FusedTriad | Op::EagerTriad => Pattern::Triad,
            Op::FusedSqDiffSum | Op::EagerSqDiffSum => Pattern::Read2,
        }
    }

    /// True for the reductions (their `array_bytes` is the input's size).
    pub fn is_reduction(self) -> bool {
        matches!(self.pattern(), Pattern::Read | Pattern::ReadRows)
    }

    /// True for the whole-array reductions of `[n]` inputs (a 0-dim output).
    pub fn is_full_reduction(self) -> bool {
        self.pattern() == Pattern::Read2
    }

    /// Every op.
    pub const ALL: [Op; 30] = [
        Op::Copy,
        Op::Transpose,
        Op::Permute,
        Op::SliceCols,
        Op::Fill,
        Op::AddNew,
        Op::AddOut,
        Op::AddTransposed,
        Op::ExpNew,
        Op::ExpOut,
        Op::ReluNew,
        Op::ReluOut,
        Op::SumLast,
        Op::SumFirst,
        Op::AmaxLast,
        Op::AmaxFirst,
        Op::ArgmaxLast,
        Op::ArgmaxFirst,
        Op::VarLast,
        Op::VarFirst,
        Op::LogsumexpLast,
        Op::SoftmaxLast,
        Op::FusedTriad,
        Op::EagerTriad,
        Op::FusedSqDiffSum,
        Op::EagerSqDiffSum,
        Op::SiluNew,
        Op::CastFromF32,
        Op::CastToF32,
        Op::QuantizePerChannel,
    ];
}

/// One benched call: an op on `dtype` whose output holds `array_bytes` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// The op.
    pub op: Op,
    /// Element type.
    pub dtype: DType,
    /// Bytes of the output (and of each same-sized input; of the input for reductions), a
    /// power of two.
    pub array_bytes: u64,
}

impl Case {
    /// A case.
    pub fn new(op: Op, dtype: DType, array_bytes: u64) -> Case {
        Case { op, dtype, array_bytes }
    }

    /// Elements in the output (in the input for reductions).
    pub fn elems(&self) -> usize {
        (self.array_bytes as usize / self.dtype.size()).max(1)
    }

    /// The shape of the (stored) input(s): `[r, c]` for transposes and 2-D cases, `[x, y, z]`
    /// for the permute, `[r, 2c]` for the column slice, `[n]` otherwise.
    pub fn input_shape(&self) -> Vec<usize> {
        let n = self.elems();
        match self.op {
            Op::Transpose | Op::AddTransposed | Op::QuantizePerChannel => dims2(n).to_vec(),
            op if op.is_reduction() || op == Op::SoftmaxLast => dims2(n).to_vec(),
            Op::Permute => dims3(n).to_vec(),
            Op::SliceCols => {
                let [r, c] = dims2(n);
                vec![r, 2 * c]
            }
            _ => vec![n],
        }
    }

    /// The output shape.
    pub fn output_shape(&self) -> Vec<usize> {
        let s = self.input_shape();
        match self.op {
            Op::Transpose => vec![s[1], s[0]],
            Op::Permute => vec![s[2], s[0], s[1]],
            Op::SliceCols => vec![s[0], s[1] / 2],
            Op::SumFirst | Op::AmaxFirst | Op::ArgmaxFirst | Op::VarFirst => vec![s[1]],
            op if op.is_reduction() => vec![s[0]],
            op if op.is_full_reduction() => vec![],
            _ => s,
        }
    }

    /// Bytes read + written per call, each element once (a cast: its f32 side and its
    /// dtype side).
    pub fn bytes(&self) -> u64 {
        match self.op {
            Op::CastFromF32 | Op::CastToF32 | Op::QuantizePerChannel => {
                self.elems() as u64 * (4 + self.dtype.size() as u64)
            }
            _ => self.op.pattern().bytes_moved(self.elems() as u64 * self.dtype.size() as u64),
        }
    }

    /// Stable key, e.g. `transpose/f32/8192x8192` (the input shape).
    pub fn key(&self) -> String {
        let shape: Vec<String> = self.input_shape().iter().map(|d| d.to_string()).collect();
        format!("{}/{}/{}", self.op.name(), self.dtype.name(), shape.join("x"))
    }
}

/// The two sizes each case runs at (bytes of the output array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Cache-resident size.
    pub cache: u64,
    /// DRAM size; `None` skips it.
    pub dram: Option<u64>,
}

/// Default cache-resident size: 4 MiB.
pub const CACHE_BYTES: u64 = 4 << 20;
/// Default DRAM size: 256 MiB.
pub const DRAM_BYTES: u64 = 256 << 20;

impl Sizes {
    /// Full sizes (4 MiB, 256 MiB) or quick ones (1 MiB, 16 MiB); the env var
    /// `TENSOR_BENCH_BIG` overrides the DRAM size: `0` skips it, `N` uses N MiB (rounded
    /// down to a power of two).
    pub fn from_env(quick: bool) -> Sizes {
        let (cache, dram) = if quick { (1 << 20, 16 << 20) } else { (CACHE_BYTES, DRAM_BYTES) };
        let dram = match std::env::var("TENSOR_BENCH_BIG").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(0) => None,
            Some(mib) => Some(prev_pow2(mib.saturating_mul(1 << 20))),
            None => Some(dram),
        };
        Sizes { cache, dram }
    }

    /// The sizes in order.
    pub fn all(&self) -> Vec<u64> {
        std::iter::once(self.cache).chain(self.dram).collect()
    }
}

fn prev_pow2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// The CPU bench set at each size: every op in f32 (but the casts); transpose, add and add_out
/// in f16 and i64; the 8-bit floats' casts from and to f32, add, add_out and relu; qint8's
/// quantize (a cast from f32), per-channel quantize, dequantize (a cast to f32), add, add_out
/// and relu.
pub fn cpu_set(sizes: &Sizes) -> Vec<Case> {
    let mut v = Vec::new();
    for bytes in sizes.all() {
        let casts = |op: &&Op| matches!(op, Op::CastFromF32 | Op::CastToF32 | Op::QuantizePerChannel);
        let f32_ops = Op::ALL.iter().filter(|op| !casts(op));
        v.extend(f32_ops.map(|&op| Case::new(op, DType::F32, bytes)));
        for dt in [DType::F8E4M3, DType::F8E5M2] {
            for op in [Op::CastFromF32, Op::CastToF32, Op::AddNew, Op::AddOut, Op::ReluNew] {
                v.push(Case::new(op, dt, bytes));
            }
        }
        for dt in [DType::F16, DType::I64] {
            for op in [Op::Transpose, Op::AddNew, Op::AddOut] {
                v.push(Case::new(op, dt, bytes));
            }
        }
        for op in [Op::CastFromF32, Op::QuantizePerChannel, Op::CastToF32, Op::AddNew, Op::AddOut, Op::ReluNew] {
            v.push(Case::new(op, DType::QInt8, bytes));
        }
    }
    v
}

/// Element counts of the latency cases (`add`, new output).
pub const LATENCY_ELEMS: [usize; 2] = [1, 1024];

/// Key of a latency case.
pub fn latency_key(elems: usize) -> String {
    format!("latency/add/f32/{elems}")
}

/// Key of a latency case into a preallocated output (`add_out`).
pub fn latency_out_key(elems: usize) -> String {
    format!("latency/add_out/f32/{elems}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_issue() {
        assert_eq!(dims2(1 << 20), [1024, 1024]);
        assert_eq!(dims2(1 << 26), [8192, 8192]);
        assert_eq!(dims2(1 << 21), [1024, 2048]);
        assert_eq!(dims3(1 << 26), [512, 512, 256]);
        assert_eq!(dims3(1 << 20), [128, 128, 64]);
        assert_eq!(dims3(1 << 24), [256, 256, 256]);
        let c = Case::new(Op::Permute, DType::F32, DRAM_BYTES);
        assert_eq!(c.output_shape(), vec![256, 512, 512]);
        assert_eq!(c.key(), "permute201/f32/512x512x256");
        let s = Case::new(Op::SliceCols, DType::F32, CACHE_BYTES);
        assert_eq!(s.input_shape(), vec![1024, 2048]);
        assert_eq!(s.output_shape(), vec![1024, 1024]);
        assert_eq!(s.bytes(), 8 << 20);
        assert_eq!(Case::new(Op::AddOut, DType::I64, CACHE_BYTES).bytes(), 12 << 20);
    }

    #[test]
    fn set_covers_dtypes_and_sizes() {
        let set = cpu_set(&Sizes { cache: 1 << 20, dram: Some(16 << 20) });
        // per size: every op but the casts in f32, 3 ops in f16 and i64, 5 in each f8, 6 in qint8
        assert_eq!(set.len(), 2 * (Op::ALL.len() - 3 + 6 + 10 + 6));
        let q = Case::new(Op::CastFromF32, DType::QInt8, 1 << 20);
        assert_eq!((q.key(), q.bytes()), ("cast_from_f32/qint8/1048576".to_string(), 5 << 20));
        let cast = Case::new(Op::CastFromF32, DType::F8E4M3, 1 << 20);
        assert_eq!((cast.key(), cast.bytes()), ("cast_from_f32/f8e4m3/1048576".to_string(), 5 << 20));
        let sum0 = Case::new(Op::SumFirst, DType::F32, 256 << 20);
        assert_eq!((sum0.input_shape(), sum0.output_shape(), sum0.bytes()), (vec![8192, 8192], vec![8192], 256 << 20));
        assert_eq!(Case::new(Op::SoftmaxLast, DType::F32, 4 << 20).bytes(), 8 << 20);
        assert_eq!(prev_pow2(300 << 20), 256 << 20);
    }
}
