//! The CPU rows of the built-in reductions: one per dtype of the one dtype list, the
//! reducer's input, accumulate and output types given by the spec's dtype rule in the core
//! (`tensor_core::registry::reductions::rule`, through `tensor_core::for_each_reduce_row!`).

use super::reducers::*;
use crate::reduce::{drive, drive_fused, ReduceKernel};
use tensor_core::registry::reductions::{rule, *};
use tensor_core::registry::KernelRow;
use tensor_core::{DType, DeviceKind, Layout};

/// One row: `$spec` under `$layout` for input dtype `$dt`, run by the driver over reducer
/// `$r`.
macro_rules! row {
    ($layout:ident, $spec:ident, $dt:ident, $r:ty) => {
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec.op,
                device: DeviceKind::Cpu,
                layout: Layout::$layout,
                dtype: DType::$dt,
                kernel: &ReduceKernel { func: drive::<$r>, fused: drive_fused::<$r> },
            }
        }
    };
}

/// The row of one dtype, the reducer given the types it takes: `[io]` (input, accumulate,
/// output, then any extra params), `[ic]` (input, accumulate: argmax) or `[i]` (input: all).
macro_rules! typed_row {
    ($layout:ident, $spec:ident, $r:ident [io $(, $extra:tt)*], $dt:ident, $i:ty, $c:ty, $o:ty) => {
        row!($layout, $spec, $dt, $r<$i, $c, $o $(, $extra)*>);
    };
    ($layout:ident, $spec:ident, $r:ident [ic], $dt:ident, $i:ty, $c:ty, $o:ty) => {
        row!($layout, $spec, $dt, $r<$i, $c>);
    };
    ($layout:ident, $spec:ident, $r:ident [i], $dt:ident, $i:ty, $c:ty, $o:ty) => {
        row!($layout, $spec, $dt, $r<$i>);
    };
}

/// Every dtype's row of each spec under each of its layouts, from the spec's rule.
macro_rules! reduce_rows {
    ($($spec:ident: $r:ident $types:tt [$($layout:ident),*];)*) => { $( $(
        tensor_core::for_each_reduce_row!(rule::$spec, typed_row; $layout, $spec, $r $types,);
    )* )* };
}

reduce_rows! {
    // amax/amin have a sparse form (implicit zeros counted): rows under the sparse layouts.
    AMAX: AMax[io] [Strided, SparseCoo, SparseCsr];
    AMIN: AMin[io] [Strided, SparseCoo, SparseCsr];
    LOGSUMEXP: LogSumExp[io] [Strided];
    VAR: Var[io, false] [Strided];
    STD: Var[io, true] [Strided];
    ARGMAX: ArgMax[ic] [Strided];
    ARGMIN: ArgMin[ic] [Strided];
    // The log-sum-exp pass of softmax/log_softmax: folded as logsumexp, stored in f64.
    SOFTMAX_LSE: LogSumExp[io] [Strided];
}

/// Keeps this module's rows in the link (see [`crate::register::ensure_linked`]).
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(drive::<AMax<f32, f32, f32>> as crate::reduce::ReduceFn);
}
