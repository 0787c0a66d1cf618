//! The sparse tests' shared model: random COO tensors (duplicates likely, unsorted,
//! hybrid dense dims, every dtype) and their naive dense model.

#![allow(dead_code)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use tensor_ops::{DType, Error, Tensor};

/// Asserts `r` is an error whose message names `op` and contains every one of `parts`.
#[track_caller]
pub fn assert_err<T: std::fmt::Debug>(r: Result<T, Error>, op: &str, parts: &[&str]) -> Error {
    let e = r.unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with(op), "{msg:?} should name {op}");
    for p in parts {
        assert!(msg.contains(p), "{msg:?} should contain {p:?}");
    }
    e
}

pub fn i64s(v: Vec<i64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

/// The elements as f64 (every test value is exact there).
pub fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

pub fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// Small integer values (exact in every dtype; sums of a few stay exact), half of them 0.
pub fn values(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![Just(0.0), (1i32..=3).prop_map(f64::from)], n)
}

/// The values as `dtype` (bool: nonzero).
pub fn tensor_of(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(vals.to_vec(), shape).unwrap().to_dtype(dtype).unwrap()
}

/// A random COO tensor: its shape, sparse dims, dtype, indices (duplicates likely,
/// unsorted) and values.
#[derive(Debug, Clone)]
pub struct Coo {
    pub shape: Vec<usize>,
    pub sd: usize,
    pub dtype: DType,
    pub idx: Vec<i64>,
    pub vals: Vec<f64>,
}

impl Coo {
    pub fn nnz(&self) -> usize {
        self.idx.len() / self.sd
    }
    pub fn row(&self) -> usize {
        self.shape[self.sd..].iter().product()
    }
    pub fn tensor(&self) -> Tensor {
        let vshape: Vec<usize> = std::iter::once(self.nnz()).chain(self.shape[self.sd..].iter().copied()).collect();
        let values = tensor_of(&self.vals, &vshape, self.dtype);
        Tensor::sparse_coo(&i64s(self.idx.clone(), &[self.sd, self.nnz()]), &values, &self.shape).unwrap()
    }
    /// Index column → summed row (in f64; bool sums saturate at 1).
    pub fn model(&self) -> BTreeMap<Vec<i64>, Vec<f64>> {
        let (nnz, row) = (self.nnz(), self.row());
        let mut m: BTreeMap<Vec<i64>, Vec<f64>> = BTreeMap::new();
        for j in 0..nnz {
            let key: Vec<i64> = (0..self.sd).map(|d| self.idx[d * nnz + j]).collect();
            let acc = m.entry(key).or_insert_with(|| vec![0.0; row]);
            for (a, v) in acc.iter_mut().zip(&self.vals[j * row..(j + 1) * row]) {
                *a += if self.dtype == DType::Bool { f64::from(*v != 0.0) } else { *v };
                if self.dtype == DType::Bool {
                    *a = a.min(1.0);
                }
                // The 8-bit floats hold few integers: each add rounds (in entry order), as
                // the kernels' adds do; the other dtypes hold these sums exactly.
                if self.dtype == DType::F8E4M3 {
                    *a = tensor_ops::F8E4M3::from_f64(*a).to_f64();
                } else if self.dtype == DType::F8E5M2 {
                    *a = tensor_ops::F8E5M2::from_f64(*a).to_f64();
                }
            }
        }
        m
    }
    /// The dense model, row-major.
    pub fn dense_model(&self) -> Vec<f64> {
        let row = self.row();
        let mut out = vec![0.0; self.shape.iter().product()];
        for (key, vals) in self.model() {
            let p = key.iter().zip(&self.shape).fold(0usize, |acc, (&i, &s)| acc * s + i as usize);
            out[p * row..(p + 1) * row].copy_from_slice(&vals);
        }
        out
    }
}

/// A random COO tensor with sparse sizes ≥ 1 (so entries exist), nnz 0..=12, indices drawn
/// from the sizes (duplicates likely).
pub fn coo() -> impl Strategy<Value = Coo> {
    (prop::collection::vec(1usize..=4, 1..=4), dtype(), 0usize..=12).prop_flat_map(|(shape, dtype, nnz)| {
        let rank = shape.len();
        (Just(shape), 1..=rank, Just(dtype), Just(nnz))
            .prop_flat_map(|(shape, sd, dtype, nnz)| {
                let idx: Vec<_> = (0..sd).map(|d| prop::collection::vec(0..shape[d] as i64, nnz)).collect();
                let row: usize = shape[sd..].iter().product();
                (Just(shape), Just(sd), Just(dtype), idx, values(nnz * row))
            })
            .prop_map(|(shape, sd, dtype, idx, vals)| Coo { shape, sd, dtype, idx: idx.concat(), vals })
    })
}
