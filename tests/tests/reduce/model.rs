//! The reductions' test model: deterministic values exact in every dtype, per-dtype
//! tolerances, and `check`, which compares a result with the naive model in
//! `reference.rs` output by output. Shared by `reductions.rs` (the contract) and
//! `reduction_paths.rs` (the CPU engine's paths).
#![allow(dead_code)]

use super::reference;
use tensor_ops::prelude::*;

pub const DTYPES: [DType; DType::ALL.len()] = DType::ALL;

/// Deterministic small values, exact in every dtype (quarters for floats).
pub fn values(n: usize, dtype: DType) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let v = ((i * 7919 + 3) % 13) as f64;
            match dtype {
                DType::Bool => (i % 3 == 0) as i32 as f64,
                DType::U8 => v,
                d if d.is_float() => (v - 6.0) * 0.25,
                _ => v - 6.0,
            }
        })
        .collect()
}

/// `vals` as a tensor of `shape` and `dtype`.
pub fn tensor_of(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(vals.to_vec(), shape).unwrap().to_dtype(dtype).unwrap()
}

/// The values of `t` in logical order, as f64.
pub fn as_f64(t: &Tensor) -> Vec<f64> {
    t.contiguous().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The relative tolerance of results computed in `dtype`.
pub fn tolerance(dtype: DType) -> f64 {
    match dtype {
        // half an ulp of 3 (E4M3) or 2 (E5M2) mantissa bits: one rounding of the f32 result
        DType::F8E4M3 => 0.07,
        DType::F8E5M2 => 0.13,
        DType::F16 => 2e-3,
        DType::BF16 => 1e-2,
        DType::F64 => 1e-12,
        _ => 2e-6,
    }
}

/// `got` equals `want` within `dtype`'s tolerance (NaN and infinities exactly).
pub fn close(got: f64, want: f64, dtype: DType) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= tolerance(dtype) * want.abs().max(1.0)
}

/// Checks `got` (the result of `op` over `dims`) against the model.
pub fn check(op: &str, input: &Tensor, dims: &[usize], keepdim: bool, correction: f64, got: &Tensor, what: &str) {
    let shape = input.shape().to_vec();
    let vals = as_f64(input);
    let ints = !input.dtype().is_float();
    let mut want_shape: Vec<usize> = Vec::new();
    for (d, &s) in shape.iter().enumerate() {
        if !dims.contains(&d) {
            want_shape.push(s);
        } else if keepdim {
            want_shape.push(1);
        }
    }
    assert_eq!(got.shape(), &want_shape[..], "{what}: shape");
    let got_vals = as_f64(got);
    let result_dtype = got.dtype();
    for (k, idx) in reference::outputs(&shape, dims).iter().enumerate() {
        let xs = reference::gather(&shape, &vals, dims, idx);
        let want = reference::reduce(op, &xs, ints, correction);
        // The model's value as the result dtype would hold it.
        let want = as_f64(&Tensor::from_vec(vec![want], &[1]).unwrap().to_dtype(result_dtype).unwrap())[0];
        let tol_dtype = if input.dtype().is_float() { input.dtype() } else { result_dtype };
        assert!(close(got_vals[k], want, tol_dtype), "{what}: output {idx:?}: got {}, want {want}", got_vals[k]);
    }
}

/// Deterministic pseudo-random floats in [-1, 1).
pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
