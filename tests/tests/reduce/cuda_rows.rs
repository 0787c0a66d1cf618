//! What the CUDA reduction tests share (`cuda_reduce.rs` on the shim, `cuda_device.rs` on
//! a device or the stand-in): the rows, the CPU answers through the public API, the cases'
//! shapes and the comparison that allows another summation order.
#![allow(dead_code)]

use crate::common::{self, values, Lay, V};
use crate::user_reduce;
use tensor_core::registry::OpSpec;
use tensor_kernels_cuda::kernel::CudaReduceKernel;
use tensor_kernels_cuda::plan::Step;
use tensor_ops::prelude::*;

/// Every CUDA reduction row: (op, dtype, kernel).
pub fn reduce_rows() -> Vec<Row> {
    common::cuda_rows_of::<CudaReduceKernel>()
        .into_iter()
        .filter_map(|(op, d, row)| Some((op, d, row.kernel.as_any().downcast_ref::<CudaReduceKernel>()?)))
        .collect()
}

/// The CPU result of op `name` (the public API), for comparison. `softmax` is the row of
/// softmax's log-sum-exp pass: compared with `logsumexp` over the input.
pub fn cpu_result(name: &str, a: &Tensor, dims: Option<&[usize]>, keepdim: bool) -> Tensor {
    let r = match (name, dims) {
        ("sum", Some(d)) => tensor_ops::sum(a, d, keepdim),
        ("sum", None) => tensor_ops::sum_all(a),
        ("prod", Some(d)) => tensor_ops::prod(a, d, keepdim),
        ("prod", None) => tensor_ops::prod_all(a),
        ("mean", Some(d)) => tensor_ops::mean(a, d, keepdim),
        ("mean", None) => tensor_ops::mean_all(a),
        ("amax", Some(d)) => tensor_ops::amax(a, d, keepdim),
        ("amax", None) => tensor_ops::amax_all(a),
        ("amin", Some(d)) => tensor_ops::amin(a, d, keepdim),
        ("amin", None) => tensor_ops::amin_all(a),
        ("all", Some(d)) => tensor_ops::all(a, d, keepdim),
        ("any", Some(d)) => tensor_ops::any(a, d, keepdim),
        ("logsumexp" | "softmax", Some(d)) => tensor_ops::logsumexp(a, d, keepdim),
        ("logsumexp" | "softmax", None) => tensor_ops::logsumexp_all(a),
        ("var", Some(d)) => tensor_ops::var(a, d, 1, keepdim),
        ("std", Some(d)) => tensor_ops::std(a, d, 1, keepdim),
        ("argmax", Some([d])) => tensor_ops::argmax(a, *d, keepdim),
        ("argmin", Some([d])) => tensor_ops::argmin(a, *d, keepdim),
        ("l2_norm", Some(d)) => user_reduce::l2_norm(a, d, keepdim),
        ("l2_norm", None) => user_reduce::l2_norm_all(a),
        ("welford_var", Some(d)) => user_reduce::welford_var(a, d, keepdim),
        ("my_argmax", Some(d)) => user_reduce::my_argmax(a, d, keepdim),
        ("count_nonzero", Some(d)) => user_reduce::count_nonzero(a, d, keepdim),
        ("count_nonzero", None) => user_reduce::count_nonzero_all(a),
        ("capped_sum", Some(d)) => user_reduce::capped_sum(a, d, keepdim, CAP),
        ("capped_sum", None) => user_reduce::capped_sum_all(a, CAP),
        ("sum_sq_shifted", Some(d)) => user_reduce::sum_sq_shifted(a, d, keepdim, SHIFT),
        ("sum_sq_shifted", None) => user_reduce::sum_sq_shifted_all(a, SHIFT),
        other => panic!("no CPU reference for {other:?}"),
    };
    r.unwrap_or_else(|e| panic!("{name} on the CPU: {e}"))
}

/// capped_sum's param.
pub const CAP: f64 = 2.5;

/// sum_sq_shifted's param.
pub const SHIFT: f32 = 0.5;

/// The user-defined reductions (their inputs have no NaN: `my_argmax` has no NaN rule, so
/// its answer with NaNs depends on the order of combination, on the CPU too).
pub fn user_op(name: &str) -> bool {
    matches!(name, "l2_norm" | "welford_var" | "my_argmax" | "count_nonzero" | "capped_sum" | "sum_sq_shifted")
}

/// Ops whose results do not depend on the order of combination.
pub fn order_free(name: &str, dtype: DType) -> bool {
    matches!(name, "amax" | "amin" | "all" | "any" | "argmax" | "argmin" | "my_argmax" | "count_nonzero")
        || (matches!(name, "sum" | "prod" | "capped_sum") && !dtype.is_float())
}

/// One planned reduction on the shim.
pub struct Case {
    pub what: String,
    pub name: &'static str,
    pub steps: Vec<Step>,
    pub got: Tensor,
    pub want: Tensor,
    /// Σ|x| over the largest reduced extent: the scale of a sum's rounding differences.
    pub scale: f64,
    pub _input: Tensor,
    pub _work: Vec<u128>,
    pub order_free: bool,
    pub compute: DType,
}

/// One CUDA reduction row: (op, dtype, kernel).
pub type Row = (&'static OpSpec, DType, &'static CudaReduceKernel);

/// The layouts and dims every row is run on: (shape, layout, dims, keepdim, max_blocks).
pub type Shape = (&'static [usize], Lay, Option<&'static [usize]>, bool, u32);
pub const SHAPES: [Shape; 13] = [
    (&[6, 37], Lay::Contiguous, Some(&[1]), false, 64),
    (&[6, 37], Lay::Offset, Some(&[1]), true, 64),
    (&[6, 37], Lay::Stepped, Some(&[1]), false, 64),
    (&[6, 37], Lay::Flipped, Some(&[0]), false, 64),
    (&[37, 6], Lay::Contiguous, Some(&[0]), true, 64),
    (&[6, 37], Lay::Transposed, Some(&[1]), false, 64),
    (&[4, 5, 9], Lay::Permuted, Some(&[0, 2]), false, 64),
    (&[4, 5, 9], Lay::Contiguous, Some(&[2, 0]), true, 64),
    (&[3, 4, 5], Lay::Flipped, None, false, 64),
    // Rows of 256 threads with four vectors each in one round, then three (some four)
    // left to the round after, past a scalar head.
    (&[2, 7316], Lay::Offset, Some(&[1]), false, 64),
    // A long extent with one output: sliced, partials combined by the second pass.
    (&[1, 9000], Lay::Offset, Some(&[1]), false, 5),
    // A long strided extent: column kernel, sliced.
    (&[700, 3], Lay::Contiguous, Some(&[0]), false, 5),
    // An empty reduced extent: the identity's finish everywhere.
    (&[3, 0], Lay::Contiguous, Some(&[1]), false, 64),
];

pub fn no_nan_for_users(name: &str, vals: Vec<V>) -> Vec<V> {
    if !user_op(name) {
        return vals;
    }
    vals.into_iter().map(|v| if matches!(v, V::F(x) if x.is_nan()) { V::F(1.5) } else { v }).collect()
}

/// Σ|x| over `input`: the scale of a sum's rounding differences.
pub fn scale_of(input: &Tensor) -> f64 {
    let abs = values(input).into_iter().map(|v| match v {
        V::F(x) if x.is_finite() => x.abs(),
        V::I(i) => i.unsigned_abs() as f64,
        _ => 0.0,
    });
    abs.sum::<f64>().max(1.0)
}

/// Asserts `c.got` equals `c.want` (exactly when order does not matter, else within the
/// rounding of the dtypes at the input's scale).
pub fn close(c: &Case) {
    let (got, want) = (values(&c.got), values(&c.want));
    assert_eq!(got.len(), want.len(), "{}: length", c.what);
    // The rounding of the output dtype, or of the accumulate dtype when that is coarser
    // (softmax's log-sum-exp pass folds f32 into an f64 result).
    let rel_of = |d: DType| -> f64 {
        match d {
            DType::F16 => 2e-3,
            DType::BF16 => 1.6e-2,
            DType::F32 => 2e-6,
            _ => 1e-12,
        }
    };
    let rel = rel_of(c.got.dtype()).max(rel_of(c.compute));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = match (g, w) {
            (V::F(g), V::F(w)) if !c.order_free => {
                if w.is_nan() || w.is_infinite() {
                    g.is_nan() == w.is_nan() && (w.is_nan() || g == w)
                } else {
                    // Another summation order: within the dtype's rounding of the terms.
                    let tol = rel * (w.abs() + if c.name == "prod" { 0.0 } else { c.scale }) + 1e-30;
                    (g - w).abs() <= tol
                }
            }
            (V::F(g), V::F(w)) => g == w || g.is_nan() && w.is_nan(),
            (g, w) => g == w,
        };
        assert!(ok, "{}: element {i}: got {g:?}, CPU {w:?}", c.what);
    }
}
