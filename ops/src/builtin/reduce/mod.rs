//! The built-in reductions: sum, prod, mean, amax, amin, all, any, logsumexp, var, std,
//! argmax, argmin, and softmax / log_softmax (one fused pass per dense row along the last
//! dim; otherwise a log-sum-exp pass, then one map).
//!
//! Every reduction takes any strided view and runs on the core's one call path
//! ([`tensor_core::call::reduce`]). This module holds only the public entry points: the
//! specs and their one dtype rule are the core's (`tensor_core::registry::reductions`), the
//! kernels and their rows the backends' (tensor-kernels-cpu's `reduce::builtin` reducers and
//! `softmax` rows; tensor-kernels-cuda's `reduce_rows.rs` over
//! `kernels/cuda/include/reduce.cuh`).

mod logic;
mod softmax;

/// The built-in reductions' specs, one `static` each: the core's, and those of the
/// built-ins written with `#[tensor_op(reduce)]` (`sum`, `prod`, `mean`, `all`, `any`).
pub mod specs {
    /// `all` (written with `#[tensor_op(reduce)]`).
    pub use super::logic::all::SPEC as ALL;
    /// `any` (written with `#[tensor_op(reduce)]`).
    pub use super::logic::any::SPEC as ANY;
    /// `mean` (written with `#[tensor_op(reduce)]`).
    pub use super::logic::mean::SPEC as MEAN;
    /// `prod` (written with `#[tensor_op(reduce)]`).
    pub use super::logic::prod::SPEC as PROD;
    /// `sum` (written with `#[tensor_op(reduce)]`).
    pub use super::logic::sum::SPEC as SUM;
    pub use tensor_core::registry::reductions::*;
}

pub use logic::*;
pub use softmax::{log_softmax, log_softmax_out, softmax, softmax_out};
use specs::*;

use crate::call::call_reduce;
use crate::call::call_reduce_new;
use tensor_core::call::ReduceDims;
use tensor_core::{Result, Scalar, Tensor};

macro_rules! dims_reduction {
    ($($spec:ident, $name:ident, $out:ident, $what:literal, $example:literal;)*) => { $(
        #[doc = concat!($what, " over `dims` (non-empty, distinct, each < ndim); `keepdim` keeps them as size 1.\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();\nlet r = tensor_ops::", stringify!($name), "(&a, &[1], false).unwrap();\nassert_eq!(r.shape(), &[2]);\n", $example, "\n```")]
        pub fn $name(a: &Tensor, dims: &[usize], keepdim: bool) -> Result<Tensor> {
            call_reduce_new(&$spec, a, ReduceDims::Dims(dims), keepdim, &[])
        }
        #[doc = concat!("[`", stringify!($name), "`](fn@", stringify!($name), ") into `out` (exactly the result's shape; the result is cast into `out`'s dtype where `can_cast` allows).")]
        pub fn $out(a: &Tensor, dims: &[usize], keepdim: bool, out: &Tensor) -> Result<()> {
            call_reduce(&$spec, a, ReduceDims::Dims(dims), keepdim, &[], Some(out)).map(|_| ())
        }
    )* };
}

dims_reduction! {
    AMAX, amax, amax_out, "The greatest element (NaN propagates; an empty extent is an error)",
        "assert_eq!(r.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);";
    AMIN, amin, amin_out, "The least element (NaN propagates; an empty extent is an error)",
        "assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.0, 4.0]);";
    LOGSUMEXP, logsumexp, logsumexp_out, "ln Σ e^x, max-rescaled in one pass (bool/integers → f32; −∞ over an empty extent)",
        "assert!((r.to_vec::<f32>().unwrap()[0] - 3.4076).abs() < 1e-3);";
}

macro_rules! all_reduction {
    ($($spec:ident, $name:ident, $out:ident, $what:literal;)*) => { $(
        #[doc = concat!($what, " of every element → a 0-dim tensor (a 0-dim input is its one element).\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();\nassert_eq!(tensor_ops::", stringify!($name), "(&a).unwrap().shape(), &[] as &[usize]);\n```")]
        pub fn $name(a: &Tensor) -> Result<Tensor> {
            call_reduce_new(&$spec, a, ReduceDims::All, false, &[])
        }
        #[doc = concat!("[`", stringify!($name), "`](fn@", stringify!($name), ") into a 0-dim `out` (the result is cast into `out`'s dtype where `can_cast` allows).\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();\nlet out = Tensor::zeros(&[], DType::F64, Device::Cpu).unwrap();\ntensor_ops::", stringify!($out), "(&a, &out).unwrap();\nassert_eq!(out.to_vec::<f64>().unwrap().len(), 1);\n```")]
        pub fn $out(a: &Tensor, out: &Tensor) -> Result<()> {
            call_reduce(&$spec, a, ReduceDims::All, false, &[], Some(out)).map(|_| ())
        }
    )* };
}

all_reduction! {
    AMAX, amax_all, amax_all_out, "The greatest element";
    AMIN, amin_all, amin_all_out, "The least element";
    LOGSUMEXP, logsumexp_all, logsumexp_all_out, "ln Σ e^x";
}

macro_rules! moment_reduction {
    ($($spec:ident, $name:ident, $out:ident, $what:literal;)*) => { $(
        #[doc = concat!($what, " over `dims`, dividing by `n - correction` (1: the sample statistic, 0: the population one; NaN or ∞ when that is ≤ 0, as PyTorch). Welford, one pass. Bool/integers → f32.\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();\nlet r = tensor_ops::", stringify!($name), "(&a, &[0], 0, false).unwrap();\nassert_eq!(r.shape(), &[2]);\n```")]
        pub fn $name(a: &Tensor, dims: &[usize], correction: i64, keepdim: bool) -> Result<Tensor> {
            call_reduce_new(&$spec, a, ReduceDims::Dims(dims), keepdim, &[Scalar::Int(correction)])
        }
        #[doc = concat!("[`", stringify!($name), "`](fn@", stringify!($name), ") into `out` (exactly the result's shape, a dtype the result can be cast to).")]
        pub fn $out(a: &Tensor, dims: &[usize], correction: i64, keepdim: bool, out: &Tensor) -> Result<()> {
            call_reduce(&$spec, a, ReduceDims::Dims(dims), keepdim, &[Scalar::Int(correction)], Some(out)).map(|_| ())
        }
    )* };
}

moment_reduction! {
    VAR, var, var_out, "The variance";
    STD, std, std_out, "The standard deviation";
}

macro_rules! index_reduction {
    ($($spec:ident, $name:ident, $out:ident, $what:literal, $expect:literal;)*) => { $(
        #[doc = concat!("The index along `dim` (< ndim) of the ", $what, " element → I64: ties go to the first index, a NaN wins (the first NaN); an empty extent is an error.\n\n```\nuse tensor_ops::prelude::*;\nlet a = Tensor::from_vec(vec![1i32, 7, 7, 0], &[2, 2]).unwrap();\nassert_eq!(tensor_ops::", stringify!($name), "(&a, 1, false).unwrap().to_vec::<i64>().unwrap(), ", $expect, ");\n```")]
        pub fn $name(a: &Tensor, dim: usize, keepdim: bool) -> Result<Tensor> {
            call_reduce_new(&$spec, a, ReduceDims::Dims(&[dim]), keepdim, &[])
        }
        #[doc = concat!("[`", stringify!($name), "`](fn@", stringify!($name), ") into `out` (exactly the result's shape; an integer or float dtype).")]
        pub fn $out(a: &Tensor, dim: usize, keepdim: bool, out: &Tensor) -> Result<()> {
            call_reduce(&$spec, a, ReduceDims::Dims(&[dim]), keepdim, &[], Some(out)).map(|_| ())
        }
    )* };
}

index_reduction! {
    ARGMAX, argmax, argmax_out, "first greatest", "vec![1, 0]";
    ARGMIN, argmin, argmin_out, "first least", "vec![0, 1]";
}
