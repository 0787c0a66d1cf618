//! The CPU rows of the built-in reductions: one per input dtype, with the accumulator and
//! output types of the op's dtype rule.

use super::reducers::*;
use super::specs::*;
use half::{bf16, f16};
use tensor_core::registry::KernelRow;
use tensor_core::{DType, DeviceKind, Layout};
use tensor_kernels_cpu::reduce::{drive, drive_fused, ReduceKernel};

macro_rules! row {
    ($spec:ident, $dt:ident, $r:ty) => {
        inventory::submit! {
            KernelRow {
                op: &$spec.op,
                device: DeviceKind::Cpu,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &ReduceKernel { func: drive::<$r>, fused: drive_fused::<$r> },
            }
        }
    };
}

/// Bool and integers accumulate in i64 (→ I64), floats keep their dtype (f16/bf16 in f32).
macro_rules! widen_rows {
    ($spec:ident, $r:ident) => {
        row!($spec, Bool, $r<bool, i64, i64>);
        row!($spec, U8, $r<u8, i64, i64>);
        row!($spec, I8, $r<i8, i64, i64>);
        row!($spec, I16, $r<i16, i64, i64>);
        row!($spec, I32, $r<i32, i64, i64>);
        row!($spec, I64, $r<i64, i64, i64>);
        row!($spec, F16, $r<f16, f32, f16>);
        row!($spec, BF16, $r<bf16, f32, bf16>);
        row!($spec, F32, $r<f32, f32, f32>);
        row!($spec, F64, $r<f64, f64, f64>);
    };
}

/// Bool and integers compute in f32 (→ F32), floats keep their dtype (f16/bf16 in f32).
macro_rules! float_rows {
    ($spec:ident, $r:ident $(, $extra:tt)?) => {
        row!($spec, Bool, $r<bool, f32, f32 $(, $extra)?>);
        row!($spec, U8, $r<u8, f32, f32 $(, $extra)?>);
        row!($spec, I8, $r<i8, f32, f32 $(, $extra)?>);
        row!($spec, I16, $r<i16, f32, f32 $(, $extra)?>);
        row!($spec, I32, $r<i32, f32, f32 $(, $extra)?>);
        row!($spec, I64, $r<i64, f32, f32 $(, $extra)?>);
        row!($spec, F16, $r<f16, f32, f16 $(, $extra)?>);
        row!($spec, BF16, $r<bf16, f32, bf16 $(, $extra)?>);
        row!($spec, F32, $r<f32, f32, f32 $(, $extra)?>);
        row!($spec, F64, $r<f64, f64, f64 $(, $extra)?>);
    };
}

/// Every dtype compares as itself (f16/bf16 through f32, exactly) and keeps its dtype.
macro_rules! same_rows {
    ($spec:ident, $r:ident) => {
        row!($spec, Bool, $r<bool, bool, bool>);
        row!($spec, U8, $r<u8, u8, u8>);
        row!($spec, I8, $r<i8, i8, i8>);
        row!($spec, I16, $r<i16, i16, i16>);
        row!($spec, I32, $r<i32, i32, i32>);
        row!($spec, I64, $r<i64, i64, i64>);
        row!($spec, F16, $r<f16, f32, f16>);
        row!($spec, BF16, $r<bf16, f32, bf16>);
        row!($spec, F32, $r<f32, f32, f32>);
        row!($spec, F64, $r<f64, f64, f64>);
    };
}

/// Every dtype compares as itself; the output is an I64 index.
macro_rules! arg_rows {
    ($spec:ident, $r:ident) => {
        row!($spec, Bool, $r<bool, bool>);
        row!($spec, U8, $r<u8, u8>);
        row!($spec, I8, $r<i8, i8>);
        row!($spec, I16, $r<i16, i16>);
        row!($spec, I32, $r<i32, i32>);
        row!($spec, I64, $r<i64, i64>);
        row!($spec, F16, $r<f16, f32>);
        row!($spec, BF16, $r<bf16, f32>);
        row!($spec, F32, $r<f32, f32>);
        row!($spec, F64, $r<f64, f64>);
    };
}

/// Every dtype tested against zero; the output is Bool.
macro_rules! pred_rows {
    ($spec:ident, $r:ident) => {
        row!($spec, Bool, $r<bool>);
        row!($spec, U8, $r<u8>);
        row!($spec, I8, $r<i8>);
        row!($spec, I16, $r<i16>);
        row!($spec, I32, $r<i32>);
        row!($spec, I64, $r<i64>);
        row!($spec, F16, $r<f16>);
        row!($spec, BF16, $r<bf16>);
        row!($spec, F32, $r<f32>);
        row!($spec, F64, $r<f64>);
    };
}

widen_rows!(SUM, Sum);
widen_rows!(PROD, Prod);
float_rows!(MEAN, Mean);
same_rows!(AMAX, AMax);
same_rows!(AMIN, AMin);
pred_rows!(ALL, All);
pred_rows!(ANY, Any);
float_rows!(LOGSUMEXP, LogSumExp);
float_rows!(VAR, Var, false);
float_rows!(STD, Var, true);
arg_rows!(ARGMAX, ArgMax);
arg_rows!(ARGMIN, ArgMin);

// The log-sum-exp pass of softmax/log_softmax: folded in f32 (f64 for f64), finished and
// stored in f64 (see SOFTMAX_LSE).
row!(SOFTMAX_LSE, Bool, LogSumExp<bool, f32, f64>);
row!(SOFTMAX_LSE, U8, LogSumExp<u8, f32, f64>);
row!(SOFTMAX_LSE, I8, LogSumExp<i8, f32, f64>);
row!(SOFTMAX_LSE, I16, LogSumExp<i16, f32, f64>);
row!(SOFTMAX_LSE, I32, LogSumExp<i32, f32, f64>);
row!(SOFTMAX_LSE, I64, LogSumExp<i64, f32, f64>);
row!(SOFTMAX_LSE, F16, LogSumExp<f16, f32, f64>);
row!(SOFTMAX_LSE, BF16, LogSumExp<bf16, f32, f64>);
row!(SOFTMAX_LSE, F32, LogSumExp<f32, f32, f64>);
row!(SOFTMAX_LSE, F64, LogSumExp<f64, f64, f64>);
