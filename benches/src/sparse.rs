//! The sparse cases (issue 34): `spmv`/`spmm` of a CSR matrix, `to_dense` of a COO matrix
//! at 1 % and 10 % density beside a same-run memset + scatter yardstick, and `coalesce` of
//! random COO entries with duplicates. Shared by `cpu-perf` and the criterion bench
//! (`benches/sparse.rs`).
//!
//! The patterns come from [`splitmix64`] of the entry number, so `benches/python/
//! sparse_peers.py` builds the very same matrices for scipy (same formulas, numpy's
//! wrapping `uint64`):
//! - CSR `[rows, rows]`, `per_row` entries per row: entry `j`'s column is
//!   `splitmix64(j) % rows`, each row's columns sorted (duplicates kept); values in [-1, 1).
//! - `to_dense`: an `[r, c]` f32 result (`dims2`), element `i` specified when
//!   `splitmix64(i) % 1000 < permille` (sorted, unique: a coalesced COO tensor).
//! - `coalesce`: `nnz` entries of a `[side, side]` COO tensor, row `splitmix64(j) % side`,
//!   column `splitmix64(j + nnz) % side` (in that random order; with `nnz = side²` about
//!   37 % of the entries are duplicates).

use crate::error::BenchResult;
use crate::ours::Call;
use crate::par::split_mut;
use crate::shapes::dims2;
use crate::timing::{gbps, measure, measure_infallible, Sampling};
use rayon::prelude::*;
use std::hint::black_box;
use tensor_kernels_cpu::parallel::{for_each_chunk, GRAIN};
use tensor_ops::{DType, Device, Tensor};

/// The splitmix64 finaliser of `x` (the patterns' hash).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value in [-1, 1) from a hash (exact in f32).
fn unit(h: u64) -> f32 {
    (h >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// One sparse case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseCase {
    /// `a.spmv(&x)`: CSR `[rows, rows]` with `per_row` entries per row, f32, index
    /// components of `index` bytes (8: I64, PyTorch's default; 4: I32, scipy's).
    Spmv { rows: usize, per_row: usize, index: usize },
    /// `a.spmm(&b)`: the same CSR times a dense `[rows, n]`.
    Spmm { rows: usize, per_row: usize, n: usize, index: usize },
    /// `s.to_dense()` of a coalesced COO matrix filling `bytes` of f32 at `permille` ‰.
    ToDense { bytes: u64, permille: u64 },
    /// `s.coalesce()` of `nnz` random COO entries of a `[side, side]` f32 matrix.
    Coalesce { nnz: usize, side: usize },
    /// `relu(&s)` of a coalesced COO matrix with `nnz` entries (a zero-preserving map over
    /// the stored values), against the dense map engine's `relu` of a `[nnz]` tensor.
    Map { nnz: usize },
}

impl SparseCase {
    /// Stable key, e.g. `spmv/f32/1048576x1048576/nnz16777216` (I64 components; I32 ones
    /// add `/i32`).
    pub fn key(&self) -> String {
        let narrow = |index: usize| if index == 4 { "/i32" } else { "" };
        match *self {
            SparseCase::Spmv { rows, per_row, index } => {
                format!("spmv/f32/{rows}x{rows}/nnz{}{}", rows * per_row, narrow(index))
            }
            SparseCase::Spmm { rows, per_row, n, index } => {
                format!("spmm/f32/{rows}x{rows}x{n}/nnz{}{}", rows * per_row, narrow(index))
            }
            SparseCase::ToDense { bytes, permille } => {
                let [r, c] = dims2(bytes as usize / 4);
                format!("to_dense/f32/{r}x{c}/{}pct", permille as f64 / 10.0)
            }
            SparseCase::Coalesce { nnz, side } => format!("coalesce/f32/{side}x{side}/nnz{nnz}"),
            SparseCase::Map { nnz } => format!("sparse_relu/f32/nnz{nnz}"),
        }
    }

    /// Bytes each call must move at least (every component and operand read once, the
    /// result written once; the vector/dense rows gathered once per entry).
    pub fn bytes(&self) -> u64 {
        let b = match *self {
            SparseCase::Spmv { rows, per_row, index } => rows * per_row * (4 + index + 4) + rows * (index + 4),
            SparseCase::Spmm { rows, per_row, n, index } => {
                rows * per_row * (4 + index + 4 * n) + rows * (index + 4 * n)
            }
            SparseCase::ToDense { bytes, permille } => {
                bytes as usize + (bytes as usize / 4) * permille as usize / 1000 * (16 + 4)
            }
            SparseCase::Coalesce { nnz, .. } => nnz * (16 + 4) * 2,
            SparseCase::Map { nnz } => nnz * 4 * 2,
        };
        b as u64
    }
}

/// The `cpu-perf` set (the sizes: 2^24 entries, a 256 MiB result), or a quick one.
pub fn cpu_set(quick: bool) -> Vec<SparseCase> {
    let s = if quick { 4 } else { 0 };
    vec![
        SparseCase::Spmv { rows: 1 << (20 - s), per_row: 16, index: 8 },
        SparseCase::Spmv { rows: 1 << (20 - s), per_row: 16, index: 4 },
        SparseCase::Spmm { rows: 1 << (18 - s), per_row: 16, n: 16, index: 8 },
        SparseCase::Spmm { rows: 1 << (18 - s), per_row: 16, n: 16, index: 4 },
        SparseCase::Spmm { rows: 1 << (18 - s), per_row: 16, n: 64, index: 8 },
        SparseCase::ToDense { bytes: 256 << (20 - s), permille: 10 },
        SparseCase::ToDense { bytes: 256 << (20 - s), permille: 100 },
        SparseCase::Coalesce { nnz: 1 << (24 - s), side: 1 << (12 - s / 2) },
        SparseCase::Map { nnz: 1 << (24 - s) },
    ]
}

/// The CSR matrix of a spmv/spmm case, with index components of `index` bytes (4: I32).
pub fn csr(rows: usize, per_row: usize, index: usize) -> BenchResult<Tensor> {
    let nnz = rows * per_row;
    let mut col: Vec<i64> = (0..nnz).into_par_iter().map(|j| (splitmix64(j as u64) % rows as u64) as i64).collect();
    col.par_chunks_mut(per_row.max(1)).for_each(|r| r.sort_unstable());
    let values: Vec<f32> = (0..nnz).into_par_iter().map(|j| unit(splitmix64((j + nnz) as u64))).collect();
    let crow: Vec<i64> = (0..=rows).map(|r| (r * per_row) as i64).collect();
    let a = Tensor::sparse_csr(
        &Tensor::from_vec(crow, &[rows + 1])?,
        &Tensor::from_vec(col, &[nnz])?,
        &Tensor::from_vec(values, &[nnz])?,
        &[rows, rows],
    )?;
    Ok(if index == 4 { a.with_index_dtype(DType::I32)? } else { a })
}

/// The sorted element numbers of a `to_dense` case's specified elements.
fn dense_positions(total: usize, permille: u64) -> Vec<usize> {
    (0..total).into_par_iter().filter(|&i| splitmix64(i as u64) % 1000 < permille).collect()
}

/// The COO components (`rows`, `cols`, `values`) of a `to_dense` or `coalesce` case.
fn coo_parts(case: &SparseCase) -> (Vec<i64>, Vec<i64>, Vec<f32>, [usize; 2]) {
    match *case {
        SparseCase::ToDense { bytes, permille } => {
            let [r, c] = dims2(bytes as usize / 4);
            let pos = dense_positions(r * c, permille);
            let rows = pos.par_iter().map(|&p| (p / c) as i64).collect();
            let cols = pos.par_iter().map(|&p| (p % c) as i64).collect();
            let values = pos.par_iter().map(|&p| unit(splitmix64(!(p as u64)))).collect();
            (rows, cols, values, [r, c])
        }
        SparseCase::Coalesce { nnz, side } => {
            let h = |j: usize| (splitmix64(j as u64) % side as u64) as i64;
            let rows = (0..nnz).into_par_iter().map(h).collect();
            let cols = (0..nnz).into_par_iter().map(|j| h(j + nnz)).collect();
            let values = (0..nnz).into_par_iter().map(|j| unit(splitmix64((2 * nnz + j) as u64))).collect();
            (rows, cols, values, [side, side])
        }
        SparseCase::Map { nnz } => {
            // One entry per row of a [nnz, 4] matrix: sorted, unique (coalesced).
            let rows = (0..nnz as i64).collect();
            let cols = (0..nnz).into_par_iter().map(|j| (splitmix64(j as u64) % 4) as i64).collect();
            let values = (0..nnz).into_par_iter().map(|j| unit(splitmix64((nnz + j) as u64)) - 0.5).collect();
            (rows, cols, values, [nnz, 4])
        }
        _ => (Vec::new(), Vec::new(), Vec::new(), [0, 0]),
    }
}

/// A COO tensor from [`coo_parts`].
fn coo(rows: &[i64], cols: &[i64], values: Vec<f32>, shape: [usize; 2]) -> BenchResult<Tensor> {
    let nnz = rows.len();
    let mut idx = Vec::with_capacity(2 * nnz);
    idx.extend_from_slice(rows);
    idx.extend_from_slice(cols);
    Ok(Tensor::sparse_coo(&Tensor::from_vec(idx, &[2, nnz])?, &Tensor::from_vec(values, &[nnz])?, &shape)?)
}

/// The `cuda-perf` set: the spmv/spmm cases of [`cpu_set`] (2^24 entries; quick: 2^20).
pub fn cuda_set(quick: bool) -> Vec<SparseCase> {
    cpu_set(quick).into_iter().filter(|c| matches!(c, SparseCase::Spmv { .. } | SparseCase::Spmm { .. })).collect()
}

/// Prepares `case`: the call through tensor-ops.
pub fn prepare(case: &SparseCase) -> BenchResult<Call> {
    prepare_on(case, Device::Cpu)
}

/// Prepares `case` with its operands on `device` (built on the CPU, then moved).
pub fn prepare_on(case: &SparseCase, device: Device) -> BenchResult<Call> {
    Ok(match *case {
        SparseCase::Spmv { rows, per_row, index } => {
            let (a, x) = (csr(rows, per_row, index)?, crate::ours::input(DType::F32, &[rows])?);
            let (a, x) = (a.to_device(device)?, x.to_device(device)?);
            Box::new(move || {
                black_box(a.spmv(&x)?);
                Ok(())
            })
        }
        SparseCase::Spmm { rows, per_row, n, index } => {
            let (a, b) = (csr(rows, per_row, index)?, crate::ours::input(DType::F32, &[rows, n])?);
            let (a, b) = (a.to_device(device)?, b.to_device(device)?);
            Box::new(move || {
                black_box(a.spmm(&b)?);
                Ok(())
            })
        }
        SparseCase::Map { .. } => {
            let (rows, cols, values, shape) = coo_parts(case);
            let s = coo(&rows, &cols, values, shape)?;
            Box::new(move || {
                black_box(tensor_ops::relu(&s)?);
                Ok(())
            })
        }
        SparseCase::ToDense { .. } | SparseCase::Coalesce { .. } => {
            let (rows, cols, values, shape) = coo_parts(case);
            let s = coo(&rows, &cols, values, shape)?.to_device(device)?;
            let densify = matches!(case, SparseCase::ToDense { .. });
            Box::new(move || {
                black_box(if densify { s.to_dense()? } else { s.coalesce()? });
                Ok(())
            })
        }
    })
}

/// The same-run yardstick of a `to_dense` case: a zeroed output (parallel memset of a
/// buffer allocated once) and the scatter's writes, reading the same row and column
/// components; of a sparse map: the dense map engine over a tensor of the same values.
/// Seconds per call (median). `None` for other cases.
pub fn yardstick(case: &SparseCase, cfg: &Sampling) -> Option<f64> {
    if let SparseCase::Map { nnz } = *case {
        // The dense map engine over the same values: relu of a [nnz] f32 tensor.
        let (_, _, values, _) = coo_parts(case);
        let dense = Tensor::from_vec(values, &[nnz]).ok()?;
        let t = measure_infallible(cfg, || {
            black_box(tensor_ops::relu(&dense).expect("relu of a dense f32 tensor"));
        });
        return Some(t.secs());
    }
    let SparseCase::ToDense { .. } = case else { return None };
    let (rows, cols, values, [r, c]) = coo_parts(case);
    let mut out = vec![1f32; r * c];
    let nnz = rows.len();
    let t = measure_infallible(cfg, || {
        split_mut(&mut out, |_, d| d.fill(0.0));
        let base = SyncOut(out.as_mut_ptr());
        for_each_chunk(nnz, GRAIN, |range| {
            for j in range {
                let p = rows[j] as usize * c + cols[j] as usize;
                if p < r * c {
                    // SAFETY: `p` is in bounds (checked) and the positions are unique, so
                    // no two workers write one element.
                    unsafe { *base.at(p) = values[j] };
                }
            }
        });
        black_box(&out);
    });
    Some(t.secs())
}

/// The output pointer shared by the yardstick's workers (disjoint elements).
#[derive(Clone, Copy)]
struct SyncOut(*mut f32);
// SAFETY: workers write disjoint elements (unique positions) while the buffer lives.
unsafe impl Sync for SyncOut {}
impl SyncOut {
    fn at(self, i: usize) -> *mut f32 {
        self.0.wrapping_add(i)
    }
}

/// Measures `case` (and its yardstick): `(ours_secs, limit label, limit GB/s)`, the limit
/// being the yardstick for `to_dense` and `read_gbps` (the same run's STREAM read)
/// otherwise.
pub fn measure_case(case: &SparseCase, cfg: &Sampling, read_gbps: f64) -> BenchResult<(f64, String, f64)> {
    let mut call = prepare(case)?;
    let t = measure(cfg, &mut call)?;
    drop(call);
    Ok(match yardstick(case, cfg) {
        Some(y) if matches!(case, SparseCase::Map { .. }) => (t.secs(), "dense map".into(), gbps(case.bytes(), y)),
        Some(y) => (t.secs(), "memset+scatter".into(), gbps(case.bytes(), y)),
        None => (t.secs(), "stream read".into(), read_gbps),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_the_documented_ones() {
        // Python's sparse_peers.py checks the same figures.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        let a = csr(64, 4, 8).unwrap();
        assert_eq!(a.nnz().unwrap(), 256);
        let case = SparseCase::Coalesce { nnz: 1 << 10, side: 1 << 5 };
        let c = prepare(&case).map(|_| ()).is_ok();
        assert!(c);
        assert_eq!(SparseCase::ToDense { bytes: 256 << 20, permille: 10 }.key(), "to_dense/f32/8192x8192/1pct");
        assert!(cpu_set(true).iter().all(|c| prepare(c).is_ok()));
        // the sparse map case runs and matches the dense relu of its values
        let case = SparseCase::Map { nnz: 1 << 10 };
        let (rows, cols, values, shape) = coo_parts(&case);
        let s = coo(&rows, &cols, values.clone(), shape).unwrap();
        assert!(s.is_coalesced().unwrap());
        let want: Vec<f32> = values.iter().map(|v| v.max(0.0)).collect();
        assert_eq!(tensor_ops::relu(&s).unwrap().values().unwrap().to_vec::<f32>().unwrap(), want);
    }
}
