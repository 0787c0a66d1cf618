//! The fused softmax / log_softmax of dense float rows along the last dim, as CPU row
//! kernels ([`crate::rows::RowKernel`]): f32 and f64 rows in `rows.rs`, f16 and bf16 rows
//! (computed in f32 scratch rows) in `half.rs`, the steps both share in `step.rs`; this file
//! registers them against the core's `SOFTMAX_ROWS` / `LOG_SOFTMAX_ROWS` specs. `softmax`
//! (tensor-ops) picks these rows for dense rows along the last dim.

mod half;
mod rows;
mod step;

use crate::rows::RowKernel;
use tensor_core::registry::{KernelRow, LOG_SOFTMAX_ROWS, SOFTMAX_ROWS};
use tensor_core::{DType, DeviceKind, Layout};

/// One CPU row per (op, dtype, scratch dtype, row function).
macro_rules! rows {
    ($($spec:ident, $dt:ident, $scratch:ident, $f:path;)*) => { $(
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec,
                device: DeviceKind::Cpu,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &RowKernel { dtype: DType::$dt, scratch: DType::$scratch, func: $f },
            }
        }
    )* };
}

rows! {
    SOFTMAX_ROWS, F32, F32, rows::softmax_f32;
    SOFTMAX_ROWS, F64, F64, rows::softmax_f64;
    LOG_SOFTMAX_ROWS, F32, F32, rows::log_softmax_f32;
    LOG_SOFTMAX_ROWS, F64, F64, rows::log_softmax_f64;
    // f16/bf16 rows are computed in f32 scratch rows.
    SOFTMAX_ROWS, F16, F32, half::softmax_f16;
    SOFTMAX_ROWS, BF16, F32, half::softmax_bf16;
    LOG_SOFTMAX_ROWS, F16, F32, half::log_softmax_f16;
    LOG_SOFTMAX_ROWS, BF16, F32, half::log_softmax_bf16;
}

/// Keeps this module's rows in the link (see [`crate::register::ensure_linked`]).
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(rows::softmax_f32 as crate::rows::RowFn);
}
