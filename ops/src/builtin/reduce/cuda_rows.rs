//! The CUDA rows of the built-in reductions: per input dtype, a reducer of
//! `kernels/cuda/include/reduce.cuh` instantiated for the accumulate dtype of the op's dtype
//! rule (the same accumulate and output dtypes as the CPU rows in `rows.rs`).

use super::specs::*;
use tensor_core::registry::KernelRow;
use tensor_core::{DType, DeviceKind, Layout};
use tensor_kernels_cuda::kernel::CudaReduceKernel;

macro_rules! cuda_row {
    ($spec:ident, $reducer:literal, $dt:ident, $c:ident, $o:ident) => {
        inventory::submit! {
            KernelRow {
                op: &$spec.op,
                device: DeviceKind::Cuda,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &CudaReduceKernel { reducer: $reducer, source: "", compute: DType::$c, output: DType::$o },
            }
        }
    };
}

/// One row per dtype: `(dtype, accumulate, output)` triples of a dtype rule.
macro_rules! cuda_rows {
    ($spec:ident, $reducer:literal, $rule:ident) => {
        cuda_rows!(@rule $rule, $spec, $reducer);
    };
    (@each $spec:ident, $reducer:literal; $(($dt:ident, $c:ident, $o:ident)),*) => {
        $( cuda_row!($spec, $reducer, $dt, $c, $o); )*
    };
    // Bool and integers accumulate in i64 (→ I64); floats keep their dtype (f16/bf16 in f32).
    (@rule widen, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, I64, I64), (U8, I64, I64), (I8, I64, I64), (I16, I64, I64),
            (I32, I64, I64), (I64, I64, I64), (F16, F32, F16), (BF16, F32, BF16), (F32, F32, F32), (F64, F64, F64));
    };
    // Bool and integers compute in f32 (→ F32); floats keep their dtype.
    (@rule float, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, F32, F32), (U8, F32, F32), (I8, F32, F32), (I16, F32, F32),
            (I32, F32, F32), (I64, F32, F32), (F16, F32, F16), (BF16, F32, BF16), (F32, F32, F32), (F64, F64, F64));
    };
    // Every dtype compares as itself (f16/bf16 through f32, exactly) and keeps its dtype.
    (@rule same, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, Bool, Bool), (U8, U8, U8), (I8, I8, I8), (I16, I16, I16),
            (I32, I32, I32), (I64, I64, I64), (F16, F32, F16), (BF16, F32, BF16), (F32, F32, F32), (F64, F64, F64));
    };
    // Every dtype compares as itself; the output is an I64 index.
    (@rule arg, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, Bool, I64), (U8, U8, I64), (I8, I8, I64), (I16, I16, I64),
            (I32, I32, I64), (I64, I64, I64), (F16, F32, I64), (BF16, F32, I64), (F32, F32, I64), (F64, F64, I64));
    };
    // Every dtype tested against zero; the output is Bool.
    (@rule pred, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, Bool, Bool), (U8, Bool, Bool), (I8, Bool, Bool), (I16, Bool, Bool),
            (I32, Bool, Bool), (I64, Bool, Bool), (F16, Bool, Bool), (BF16, Bool, Bool), (F32, Bool, Bool), (F64, Bool, Bool));
    };
    // softmax's log-sum-exp pass: folded in f32 (f64 for f64), stored in f64.
    (@rule lse64, $spec:ident, $r:literal) => {
        cuda_rows!(@each $spec, $r; (Bool, F32, F64), (U8, F32, F64), (I8, F32, F64), (I16, F32, F64),
            (I32, F32, F64), (I64, F32, F64), (F16, F32, F64), (BF16, F32, F64), (F32, F32, F64), (F64, F64, F64));
    };
}

cuda_rows!(SUM, "tops_red_sum", widen);
cuda_rows!(PROD, "tops_red_prod", widen);
cuda_rows!(MEAN, "tops_red_mean", float);
cuda_rows!(AMAX, "tops_red_amax", same);
cuda_rows!(AMIN, "tops_red_amin", same);
cuda_rows!(ALL, "tops_red_all", pred);
cuda_rows!(ANY, "tops_red_any", pred);
cuda_rows!(LOGSUMEXP, "tops_red_logsumexp", float);
cuda_rows!(VAR, "tops_red_var", float);
cuda_rows!(STD, "tops_red_std", float);
cuda_rows!(ARGMAX, "tops_red_argmax", arg);
cuda_rows!(ARGMIN, "tops_red_argmin", arg);
cuda_rows!(SOFTMAX_LSE, "tops_red_logsumexp", lse64);

/// The fused softmax / log_softmax rows (`softmax_rows.rs`'s ops) on CUDA: a block per row.
macro_rules! softmax_rows {
    ($($spec:ident, $dt:ident, $log:literal;)*) => { $(
        inventory::submit! {
            KernelRow {
                op: &super::softmax_rows::$spec,
                device: DeviceKind::Cuda,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &tensor_kernels_cuda::softmax_rows::CudaSoftmaxRows { dtype: DType::$dt, log: $log },
            }
        }
    )* };
}

softmax_rows! {
    SOFTMAX_ROWS, F16, false;
    SOFTMAX_ROWS, BF16, false;
    SOFTMAX_ROWS, F32, false;
    SOFTMAX_ROWS, F64, false;
    LOG_SOFTMAX_ROWS, F16, true;
    LOG_SOFTMAX_ROWS, BF16, true;
    LOG_SOFTMAX_ROWS, F32, true;
    LOG_SOFTMAX_ROWS, F64, true;
}
