//! Random COO tensors for the CUDA sparse tests (the shim's `cuda_sparse.rs` and the
//! stand-in's `cuda_device/sparse.rs`), and the independent references they are checked
//! against besides the CPU: a naive stable sort of index columns, the unique columns, the
//! nonzero positions of a dense tensor.
#![allow(dead_code)]

use std::collections::BTreeSet;
use tensor_ops::prelude::*;

/// A random COO tensor: shape, sparse dims, dtype, indices `[sd, nnz]` (unsorted,
/// duplicates likely) and values (`[nnz, *dense]`, as f64).
#[derive(Debug, Clone)]
pub struct Case {
    pub shape: Vec<usize>,
    pub sd: usize,
    pub dtype: DType,
    pub idx: Vec<i64>,
    pub vals: Vec<f64>,
}

/// A xorshift generator (deterministic cases).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A value of `dtype` (as f64): floats with fractions, signs, `-0.0` and magnitudes that
/// make sums depend on their order; integers that wrap when duplicates add up; bools.
fn value(rng: &mut Rng, dtype: DType) -> f64 {
    let r = rng.next();
    match dtype {
        DType::Bool => (r & 1) as f64,
        DType::U8 => (r % 256) as f64,
        DType::I8 => (r % 256) as f64 - 128.0,
        DType::I16 => (r % 65536) as f64 - 32768.0,
        DType::I32 | DType::I64 => (r % 2_000_001) as f64 - 1_000_000.0,
        _ => match r % 8 {
            0 => -0.0,
            1 => 0.0,
            2 => ((r >> 8) % 1000) as f64 * 0.001,
            3 => ((r >> 8) % 1000) as f64 * 7.3 - 3650.0,
            _ => ((r >> 8) % 20001) as f64 / 64.0 - 156.25,
        },
    }
}

impl Case {
    /// A case of `shape` with `sd` sparse dims and `nnz` entries drawn from `rng`.
    pub fn random(shape: &[usize], sd: usize, dtype: DType, nnz: usize, rng: &mut Rng) -> Case {
        let mut idx = Vec::with_capacity(sd * nnz);
        for &size in &shape[..sd] {
            idx.extend((0..nnz).map(|_| rng.below(size as u64) as i64));
        }
        let row: usize = shape[sd..].iter().product();
        let vals = (0..nnz * row).map(|_| value(rng, dtype)).collect();
        Case { shape: shape.to_vec(), sd, dtype, idx, vals }
    }
    pub fn nnz(&self) -> usize {
        self.idx.len() / self.sd
    }
    /// The indices tensor (CPU).
    pub fn indices(&self) -> Tensor {
        Tensor::from_vec(self.idx.clone(), &[self.sd, self.nnz()]).unwrap()
    }
    /// The values tensor (CPU).
    pub fn values(&self) -> Tensor {
        let shape: Vec<usize> = std::iter::once(self.nnz()).chain(self.shape[self.sd..].iter().copied()).collect();
        Tensor::from_vec(self.vals.clone(), &shape).unwrap().to_dtype(self.dtype).unwrap()
    }
    /// The COO tensor (CPU).
    pub fn tensor(&self) -> Tensor {
        Tensor::sparse_coo(&self.indices(), &self.values(), &self.shape).unwrap()
    }
    /// Index column `j`.
    pub fn column(&self, j: usize) -> Vec<i64> {
        (0..self.sd).map(|d| self.idx[d * self.nnz() + j]).collect()
    }
}

/// The cases of one dtype: nnz 0, one entry, unsorted duplicates with one, two and three
/// sparse dims, hybrid dense dims, and entries enough for several sort tiles and scan
/// levels over a dim of 17 bits.
pub fn cases(dtype: DType, seed: u64) -> Vec<Case> {
    let mut rng = Rng(seed | 1);
    let specs: [(&[usize], usize, usize); 8] = [
        (&[3, 4], 2, 0),
        (&[5, 2], 1, 1),
        (&[6], 1, 14),
        (&[5, 3], 1, 12),
        (&[4, 6], 2, 30),
        (&[3, 4, 5, 2], 3, 40),
        (&[37, 41], 2, 5000),
        (&[70_000, 2], 1, 3000),
    ];
    specs.iter().map(|&(shape, sd, nnz)| Case::random(shape, sd, dtype, nnz, &mut rng)).collect()
}

/// The naive stable row-major order of the index columns.
pub fn naive_order(c: &Case) -> Vec<i64> {
    let mut perm: Vec<usize> = (0..c.nnz()).collect();
    perm.sort_by_key(|&j| c.column(j));
    perm.into_iter().map(|j| j as i64).collect()
}

/// The sorted unique index columns, as `[sd, n]` row-major.
pub fn naive_unique(c: &Case) -> Vec<i64> {
    let set: BTreeSet<Vec<i64>> = (0..c.nnz()).map(|j| c.column(j)).collect();
    (0..c.sd).flat_map(|d| set.iter().map(move |col| col[d])).collect()
}

/// The multi-indices (`[sd, nnz]` row-major) of the positions of `dense` (its first `sd`
/// dims) whose rows hold a nonzero element (NaN counts, -0.0 does not).
pub fn naive_nonzero(dense: &Tensor, sd: usize) -> Vec<i64> {
    let shape = dense.shape().to_vec();
    let row: usize = shape[sd..].iter().product();
    let vals: Vec<bool> = dense.to_dtype(DType::Bool).unwrap().to_vec::<bool>().unwrap();
    let mut cols: Vec<Vec<i64>> = Vec::new();
    for p in 0..shape[..sd].iter().product::<usize>() {
        if vals[p * row..(p + 1) * row].iter().any(|&b| b) {
            let mut rest = p;
            let mut col = vec![0i64; sd];
            for d in (0..sd).rev() {
                col[d] = (rest % shape[d]) as i64;
                rest /= shape[d];
            }
            cols.push(col);
        }
    }
    (0..sd).flat_map(|d| cols.iter().map(move |c| c[d])).collect()
}

/// Row pointers of sorted rows `rows` over `n` rows, counted naively.
pub fn naive_crow(rows: &[i64], n: usize) -> Vec<i64> {
    (0..=n).map(|r| rows.iter().filter(|&&x| x < r as i64).count() as i64).collect()
}
