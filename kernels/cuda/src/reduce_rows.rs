//! The CUDA rows of the built-in reductions and of the fused softmax rows. Per dtype of the
//! one dtype list, a reducer of `kernels/cuda/include/reduce.cuh` instantiated for the
//! accumulate dtype the spec's rule gives (the core's
//! `tensor_core::registry::reductions::rule`: the same rule as the CPU rows), and a
//! [`CudaSoftmaxRows`] per float dtype for the core's `SOFTMAX_ROWS` / `LOG_SOFTMAX_ROWS`.

use crate::kernel::CudaReduceKernel;
use crate::softmax_rows::CudaSoftmaxRows;
use tensor_core::registry::reductions::{rule, *};
use tensor_core::registry::{KernelRow, LOG_SOFTMAX_ROWS, SOFTMAX_ROWS};
use tensor_core::{DType, DeviceKind, Layout};

/// The row of `$spec` for dtype `$dt`: `$reducer` accumulating and storing as the rule says
/// (the Rust types the rule maps to are not needed here).
macro_rules! cuda_row {
    ($layout:ident, $spec:ident, $reducer:literal, $dt:ident, $i:ty, $c:ty, $o:ty) => {
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec.op,
                device: DeviceKind::Cuda,
                layout: Layout::$layout,
                dtype: DType::$dt,
                kernel: &CudaReduceKernel {
                    reducer: $reducer,
                    source: "",
                    compute: rule::$spec.accumulate(DType::$dt),
                    output: rule::$spec.result(DType::$dt),
                },
            }
        }
    };
}

/// Every dtype's row of each spec under each of its layouts, from the spec's rule.
macro_rules! cuda_rows {
    ($($spec:ident: $reducer:literal [$($layout:ident),*];)*) => { $( $(
        tensor_core::for_each_reduce_row!(rule::$spec, cuda_row; $layout, $spec, $reducer,);
    )* )* };
}

cuda_rows! {
    // amax/amin have a sparse form (implicit zeros counted): rows under the sparse layouts.
    AMAX: "tops_red_amax" [Strided, SparseCoo, SparseCsr];
    AMIN: "tops_red_amin" [Strided, SparseCoo, SparseCsr];
    LOGSUMEXP: "tops_red_logsumexp" [Strided];
    VAR: "tops_red_var" [Strided];
    STD: "tops_red_std" [Strided];
    ARGMAX: "tops_red_argmax" [Strided];
    ARGMIN: "tops_red_argmin" [Strided];
    // softmax's log-sum-exp pass: folded as logsumexp, stored in f64.
    SOFTMAX_LSE: "tops_red_logsumexp" [Strided];
}

/// The fused softmax / log_softmax rows on CUDA: a block per row.
macro_rules! softmax_rows {
    ($($spec:ident, $dt:ident, $log:literal;)*) => { $(
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec,
                device: DeviceKind::Cuda,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &CudaSoftmaxRows { dtype: DType::$dt, log: $log },
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

/// Keeps this module's rows in the link (see [`crate::register::ensure_linked`]).
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(&AMAX);
}
