//! Sparse × dense products (issue 34): `spmm`/`spmv` (and their `_out` forms) against an
//! independent reference — the sparse operand's `to_dense()` and a naive index-by-index
//! matmul in f64 — for every float dtype, random shapes with m, k or n = 1 (and 0), empty
//! rows, nnz = 0, transposed and strided dense operands, a property test over shapes and
//! densities, and every error case.

mod sparse_model;

use proptest::prelude::*;
use sparse_model::assert_err;
use tensor_ops::prelude::*;
use tensor_ops::{DType, Device, Error, Layout, Tensor};

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// In `0..1`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A nonzero multiple of 1/4 in [-2, 2] (exact in every float dtype).
    fn value(&mut self) -> f64 {
        let v = (self.next() % 16) as i64 - 8;
        (if v >= 0 { v + 1 } else { v }) as f64 / 4.0
    }
}

/// A dense `[rows, cols]` f64 matrix in which each element is nonzero with probability
/// `density`.
fn random_dense(rng: &mut Rng, rows: usize, cols: usize, density: f64) -> Vec<f64> {
    (0..rows * cols).map(|_| if rng.unit() < density { rng.value() } else { 0.0 }).collect()
}

fn tensor(v: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap().to_dtype(dtype).unwrap()
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The reference: `a.to_dense()` (read back as f64) times `b` (`[k, n]`, read as f64), one
/// product at a time; also each output's sum of |products| (for the tolerance).
fn reference(a: &Tensor, b: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let (m, k) = (a.shape()[0], a.shape()[1]);
    let n = if b.ndim() == 1 { 1 } else { b.shape()[1] };
    let (ad, bd) = (as_f64(&a.to_dense().unwrap()), as_f64(&b.contiguous().unwrap()));
    let (mut out, mut mag) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                out[i * n + j] += ad[i * k + p] * bd[p * n + j];
                mag[i * n + j] += (ad[i * k + p] * bd[p * n + j]).abs();
            }
        }
    }
    (out, mag)
}

/// The relative tolerance of one result element of `dtype` (f16/bf16 accumulate in f32 and
/// round once; f32/f64 accumulate in their own type).
fn rel_tol(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2.0f64.powi(-10),
        DType::BF16 => 2.0f64.powi(-7),
        DType::F32 => 1e-6,
        _ => 1e-14,
    }
}

#[track_caller]
fn assert_close(got: &Tensor, a: &Tensor, b: &Tensor, what: &str) {
    let (want, mag) = reference(a, b);
    let got = as_f64(got);
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = rel_tol(a.dtype());
    for (i, ((g, w), s)) in got.iter().zip(&want).zip(&mag).enumerate() {
        assert!((g - w).abs() <= tol * s.max(w.abs()) + 1e-30, "{what}: element {i}: got {g}, want {w} (tol {tol})");
    }
}

/// `spmm` and `spmv` of a random `[m, k]` CSR of `density` against the reference, with
/// contiguous, transposed and strided dense operands.
fn check_case(rng: &mut Rng, m: usize, k: usize, n: usize, density: f64, dtype: DType) {
    let what = format!("m {m} k {k} n {n} density {density} {dtype}");
    let a = tensor(&random_dense(rng, m, k, density), &[m, k], dtype).to_sparse_csr().unwrap();
    assert_eq!(a.layout(), Layout::SparseCsr);
    let b = tensor(&random_dense(rng, k, n, 1.0), &[k, n], dtype);
    assert_close(&a.spmm(&b).unwrap(), &a, &b, &what);
    // a transposed operand ([n, k] stored, viewed as [k, n])
    let bt = tensor(&random_dense(rng, n, k, 1.0), &[n, k], dtype).t().unwrap();
    assert!(!bt.is_contiguous() || n <= 1 || k <= 1);
    assert_close(&a.spmm(&bt).unwrap(), &a, &bt, &format!("{what} transposed"));
    // every other column of a wider operand
    let wide = tensor(&random_dense(rng, k, 2 * n, 1.0), &[k, 2 * n], dtype);
    let bs = wide.slice(1, 0, 2 * n, 2).unwrap();
    assert_close(&a.spmm(&bs).unwrap(), &a, &bs, &format!("{what} strided"));
    // spmv, contiguous and strided vectors
    let v = tensor(&random_dense(rng, k, 1, 1.0), &[k], dtype);
    let y = a.spmv(&v).unwrap();
    assert_eq!(y.shape(), &[m]);
    assert_close(&y, &a, &v, &format!("{what} spmv"));
    let vs = tensor(&random_dense(rng, 2 * k, 1, 1.0), &[2 * k], dtype).slice(0, 0, 2 * k, 2).unwrap();
    assert_close(&a.spmv(&vs).unwrap(), &a, &vs, &format!("{what} spmv strided"));
    // i32 index components: the same bits as i64
    let a32 = a.with_index_dtype(DType::I32).unwrap();
    assert_eq!(a32.col_indices().unwrap().dtype(), DType::I32);
    assert_eq!(bits(&a32.spmm(&bt).unwrap()), bits(&a.spmm(&bt).unwrap()), "{what} i32 spmm");
    assert_eq!(bits(&a32.spmv(&v).unwrap()), bits(&y), "{what} i32 spmv");
    assert_eq!(bits(&a32.to_dense().unwrap()), bits(&a.to_dense().unwrap()), "{what} i32 to_dense");
}

/// The raw bits of a tensor's elements (as f64 is enough here: every float dtype widens
/// exactly, and NaN payloads do not occur).
fn bits(t: &Tensor) -> Vec<u64> {
    as_f64(t).iter().map(|x| x.to_bits()).collect()
}

#[test]
fn i32_index_components() {
    let crow = Tensor::from_vec(vec![0i32, 2, 2, 3], &[4]).unwrap();
    let col = Tensor::from_vec(vec![0i32, 2, 1], &[3]).unwrap();
    let vals = Tensor::from_vec(vec![1f32, 2., 3.], &[3]).unwrap();
    let s = Tensor::sparse_csr(&crow, &col, &vals, &[3, 3]).unwrap();
    assert_eq!(s.crow_indices().unwrap().dtype(), DType::I32);
    assert_eq!(as_f64(&s.to_dense().unwrap()), vec![1., 0., 2., 0., 0., 0., 0., 3., 0.]);
    // COO indices are i64 whatever the CSR components were
    let coo = s.to_sparse_coo().unwrap();
    assert_eq!(coo.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 2, 0, 2, 1]);
    // maps keep the components; reductions and products work
    let negated = tensor_ops::neg(&s).unwrap();
    assert_eq!(negated.col_indices().unwrap().dtype(), DType::I32);
    assert_eq!(as_f64(&negated.to_dense().unwrap()), vec![-1., 0., -2., 0., 0., 0., 0., -3., 0.]);
    assert_eq!(as_f64(&s.sum_all().unwrap()), vec![6.]);
    let x = Tensor::from_vec(vec![1f32, 10., 100.], &[3]).unwrap();
    assert_eq!(as_f64(&s.spmv(&x).unwrap()), vec![201., 0., 30.]);
    assert_eq!(
        s.with_index_dtype(DType::I64).unwrap().crow_indices().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 2, 2, 3]
    );
    // the components' dtypes must agree and be i32 or i64; i32 rows are checked as i64 ones
    let col64 = Tensor::from_vec(vec![0i64, 2, 1], &[3]).unwrap();
    assert_err(Tensor::sparse_csr(&crow, &col64, &vals, &[3, 3]), "sparse_csr", &["i32", "i64"]);
    let crow16 = Tensor::from_vec(vec![0i16, 2, 2, 3], &[4]).unwrap();
    let col16 = Tensor::from_vec(vec![0i16, 2, 1], &[3]).unwrap();
    assert_err(Tensor::sparse_csr(&crow16, &col16, &vals, &[3, 3]), "sparse_csr", &["i16"]);
    let far = Tensor::from_vec(vec![0i32, 2, 3], &[3]).unwrap();
    assert_err(Tensor::sparse_csr(&crow, &far, &vals, &[3, 3]), "sparse_csr", &["col_indices[2] = 3"]);
    assert_err(s.with_index_dtype(DType::I16), "with_index_dtype", &["i16"]);
    assert_err(coo.with_index_dtype(DType::I32), "with_index_dtype", &["sparse_csr"]);
}

#[test]
fn every_float_dtype_and_edge_shapes() {
    let mut rng = Rng(0x5eed);
    for dtype in FLOATS {
        for (m, k, n) in [(1, 1, 1), (1, 7, 1), (7, 1, 5), (5, 6, 1), (1, 9, 9), (9, 9, 1), (13, 11, 17), (40, 30, 70)]
        {
            for density in [0.0, 0.1, 0.5, 1.0] {
                check_case(&mut rng, m, k, n, density, dtype);
            }
        }
    }
}

#[test]
fn empty_rows_and_zero_sizes() {
    // rows 0, 2 and 4 empty; an all-empty matrix (nnz = 0) gives zeros
    let crow = Tensor::from_vec(vec![0i64, 0, 2, 2, 3, 3], &[6]).unwrap();
    let col = Tensor::from_vec(vec![0i64, 3, 1], &[3]).unwrap();
    let a = Tensor::sparse_csr(&crow, &col, &tensor(&[1.5, -2., 0.25], &[3], DType::F32), &[5, 4]).unwrap();
    let b = tensor(&(0..12).map(|i| i as f64).collect::<Vec<_>>(), &[4, 3], DType::F32);
    assert_close(&a.spmm(&b).unwrap(), &a, &b, "empty rows");
    let none = Tensor::sparse_csr(
        &Tensor::from_vec(vec![0i64; 4], &[4]).unwrap(),
        &Tensor::from_vec(Vec::<i64>::new(), &[0]).unwrap(),
        &tensor(&[], &[0], DType::F64),
        &[3, 4],
    )
    .unwrap();
    let b64 = b.to_dtype(DType::F64).unwrap();
    let r = none.spmm(&b64).unwrap();
    assert_eq!(r.shape(), &[3, 3]);
    assert_close(&r, &none, &b64, "nnz 0");
    // m = 0, k = 0, n = 0
    for (m, k, n) in [(0, 3, 2), (3, 0, 2), (3, 2, 0)] {
        let a = tensor(&vec![1.0; m * k], &[m, k], DType::F32).to_sparse_csr().unwrap();
        let b = tensor(&vec![1.0; k * n], &[k, n], DType::F32);
        let r = a.spmm(&b).unwrap();
        assert_eq!(r.shape(), &[m, n]);
        assert_close(&r, &a, &b, &format!("m {m} k {k} n {n}"));
    }
}

#[test]
fn coo_operands_are_converted() {
    // unsorted COO with a duplicate: to_sparse_csr sums it, as to_dense does
    let i = Tensor::from_vec(vec![1i64, 0, 1, 2, 0, 2, 1, 0], &[2, 4]).unwrap();
    let a = Tensor::sparse_coo(&i, &tensor(&[1., 2., 3., 4.], &[4], DType::F64), &[3, 3]).unwrap();
    let b = tensor(&[1., 2., 3., 4., 5., 6.], &[3, 2], DType::F64);
    assert_close(&a.spmm(&b).unwrap(), &a, &b, "coo");
    let v = tensor(&[1., -1., 0.5], &[3], DType::F64);
    assert_close(&a.spmv(&v).unwrap(), &a, &v, "coo spmv");
}

#[test]
fn out_forms() {
    let mut rng = Rng(7);
    let a = tensor(&random_dense(&mut rng, 6, 5, 0.4), &[6, 5], DType::F32).to_sparse_csr().unwrap();
    let b = tensor(&random_dense(&mut rng, 5, 3, 1.0), &[5, 3], DType::F32);
    // a transposed out
    let out = Tensor::zeros(&[3, 6], DType::F32, Device::Cpu).unwrap().t().unwrap();
    a.spmm_out(&b, &out).unwrap();
    assert_close(&out, &a, &b, "spmm_out");
    let v = tensor(&random_dense(&mut rng, 5, 1, 1.0), &[5], DType::F32);
    let y = Tensor::zeros(&[6], DType::F32, Device::Cpu).unwrap();
    a.spmv_out(&v, &y).unwrap();
    assert_close(&y, &a, &v, "spmv_out");
    // wrong shape / dtype of out
    assert_err(a.spmm_out(&b, &Tensor::zeros(&[6, 4], DType::F32, Device::Cpu).unwrap()), "spmm_out", &["[6, 3]"]);
    assert_err(a.spmm_out(&b, &Tensor::zeros(&[6, 3], DType::F64, Device::Cpu).unwrap()), "spmm_out", &["f64"]);
    assert_err(a.spmv_out(&v, &Tensor::zeros(&[5], DType::F32, Device::Cpu).unwrap()), "spmv_out", &["[6]"]);
}

#[test]
fn errors() {
    let d = tensor(&[0., 1., 2., 0., 0., 3.], &[2, 3], DType::F32);
    let a = d.to_sparse_csr().unwrap();
    let b = tensor(&[1.; 6], &[3, 2], DType::F32);
    // a strided first operand
    let e = assert_err(d.spmm(&b), "spmm", &["strided", "[2, 3]", "to_sparse_csr"]);
    assert!(matches!(e, Error::Layout { .. }));
    assert_err(d.spmv(&b.select(1, 0).unwrap()), "spmv", &["strided"]);
    // a COO operand with the wrong number of sparse dims, and hybrid values
    assert_err(d.to_sparse(1).unwrap().spmm(&b), "spmm", &["sparse_coo"]);
    let hybrid = tensor(&[1.; 12], &[2, 3, 2], DType::F32).to_sparse_csr_hybrid(1).unwrap();
    assert_err(hybrid.spmm(&b), "spmm", &["[2, 3, 2]", "hybrid"]);
    // shape mismatches
    let e = assert_err(a.spmm(&tensor(&[1.; 8], &[4, 2], DType::F32)), "spmm", &["k = 3", "[4, 2]", "[2, 3]"]);
    assert!(matches!(e, Error::Shape { .. }));
    assert_err(a.spmm(&tensor(&[1.; 3], &[3], DType::F32)), "spmm", &["[k, n]", "[3]"]);
    assert_err(a.spmv(&tensor(&[1.; 2], &[2], DType::F32)), "spmv", &["k = 3", "[2]"]);
    assert_err(a.spmv(&b), "spmv", &["[k]", "[3, 2]"]);
    // dtypes: different, and not float
    let e = assert_err(a.spmm(&b.to_dtype(DType::F64).unwrap()), "spmm", &["f32", "f64", "equal"]);
    assert!(matches!(e, Error::DType { .. }));
    assert_err(a.spmv(&tensor(&[1.; 3], &[3], DType::BF16)), "spmv", &["f32", "bf16"]);
    let ai = d.to_dtype(DType::I32).unwrap().to_sparse_csr().unwrap();
    assert_err(ai.spmm(&b.to_dtype(DType::I32).unwrap()), "spmm", &["i32", "float"]);
    // a sparse second operand
    assert_err(a.spmm(&b.to_sparse_csr().unwrap()), "spmm", &["to_dense"]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_shapes_and_densities(
        m in 1usize..24, k in 1usize..24, n in 1usize..40,
        density in prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0],
        dtype in prop::sample::select(FLOATS.to_vec()),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed | 1);
        check_case(&mut rng, m, k, n, density, dtype);
    }
}

#[test]
fn large_parallel_product_matches() {
    // Big enough to split over threads (chunks balanced by nnz): a few dense rows among
    // sparse ones.
    let (m, k, n) = (3000, 500, 24);
    let mut rng = Rng(99);
    let mut d = random_dense(&mut rng, m, k, 0.01);
    for r in [0, 1, 1500] {
        for c in 0..k {
            d[r * k + c] = rng.value();
        }
    }
    let a = tensor(&d, &[m, k], DType::F32).to_sparse_csr().unwrap();
    let b = tensor(&random_dense(&mut rng, k, n, 1.0), &[k, n], DType::F32);
    assert_close(&a.spmm(&b).unwrap(), &a, &b, "large");
    let v = tensor(&random_dense(&mut rng, k, 1, 1.0), &[k], DType::F32);
    assert_close(&a.spmv(&v).unwrap(), &a, &v, "large spmv");
}

#[test]
fn large_coalesce_matches_a_naive_sum() {
    // Big enough for the parallel radix sort, segments and unique indices: 300k entries of
    // a 500 × 700 matrix (many duplicates), against a dense sum in f64.
    let (nnz, r, c) = (300_000, 500, 700);
    let mut rng = Rng(3);
    let rows: Vec<i64> = (0..nnz).map(|_| (rng.next() % r as u64) as i64).collect();
    let cols: Vec<i64> = (0..nnz).map(|_| (rng.next() % c as u64) as i64).collect();
    let vals: Vec<f64> = (0..nnz).map(|_| rng.value()).collect();
    let (mut want, mut seen) = (vec![0.0; r * c], vec![false; r * c]);
    for j in 0..nnz {
        want[rows[j] as usize * c + cols[j] as usize] += vals[j];
        seen[rows[j] as usize * c + cols[j] as usize] = true;
    }
    let idx = Tensor::from_vec([rows, cols].concat(), &[2, nnz]).unwrap();
    let s = Tensor::sparse_coo(&idx, &Tensor::from_vec(vals, &[nnz]).unwrap(), &[r, c]).unwrap();
    let k = s.coalesce().unwrap();
    let ki = k.indices().unwrap().to_vec::<i64>().unwrap();
    let n = k.nnz().unwrap();
    let keys: Vec<i64> = (0..n).map(|j| ki[j] * c as i64 + ki[n + j]).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    let distinct: Vec<i64> = (0..r * c).filter(|&p| seen[p]).map(|p| p as i64).collect();
    assert_eq!(keys, distinct, "one entry per distinct index");
    assert_eq!(as_f64(&k.to_dense().unwrap()), want);
    // spmm of it (through to_sparse_csr) as well
    let b = tensor(&random_dense(&mut rng, c, 3, 1.0), &[c, 3], DType::F64);
    assert_close(&s.spmm(&b).unwrap(), &s, &b, "coalesced spmm");
}
