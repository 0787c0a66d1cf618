//! Ops on sparse tensors against the dense model (issue 34): binary maps (union for
//! `add`/`sub`/`maximum`/`minimum` and user ops that keep zeros, intersection for `mul` and
//! `sparse_intersection` user ops, sparse ⊙ dense, sparse + dense → dense, in place and
//! `_out`), `amax`/`amin` counting the implicit zeros, and softmax / log_softmax with
//! unspecified entries as −∞ — random shapes, duplicates, unsorted indices, hybrid dense
//! dims, nnz 0, every dtype, COO and CSR; every refused call an `Err` saying why.

mod sparse_model;

use proptest::prelude::*;
use sparse_model::{as_f64, assert_err, coo, i64s, Coo};
use std::collections::BTreeMap;
use tensor_ops::prelude::*;
use tensor_ops::{DType, Device, Error, Layout, Tensor};

/// `a² − 2ab + b²`-like user op: keeps zeros (runs over the union).
#[tensor_op(name = "sparse_test_sq_diff", dtypes = [numeric])]
pub fn sq_diff<T: Num>(a: T, b: T) -> T {
    (a - b) * (a - b)
}

/// A user op stating the intersection rule: zero when either input is.
#[tensor_op(name = "sparse_test_scaled_product", sparse_intersection, dtypes = [float])]
pub fn scaled_product<T: Float>(a: T, b: T) -> T {
    a * b * T::from_f64(0.5)
}

/// Does not keep zeros: `a + b + 1`.
#[tensor_op(name = "sparse_test_plus_one", dtypes = [numeric])]
pub fn plus_one<T: Num>(a: T, b: T) -> T {
    a + b + T::from_f64(1.0)
}

/// The elements as f64 bits, `-0.0` read as `0.0` (implicit entries stay `+0.0`), NaN as one NaN.
fn bits(t: &Tensor) -> Vec<u64> {
    as_f64(t)
        .into_iter()
        .map(|x| {
            if x == 0.0 {
                0u64
            } else if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect()
}

/// The coalesced pattern of a sparse tensor as sorted index columns.
fn pattern(t: &Tensor) -> Vec<Vec<i64>> {
    let c = t.to_sparse_coo().unwrap().coalesce().unwrap();
    let (idx, nnz) = (c.indices().unwrap().to_vec::<i64>().unwrap(), c.nnz().unwrap());
    let sd = c.sparse_dim().unwrap();
    (0..nnz).map(|j| (0..sd).map(|d| idx[d * nnz + j]).collect()).collect()
}

type Binary = fn(&Tensor, &Tensor) -> tensor_ops::Result<Tensor>;

const UNION_OPS: [(&str, Binary); 5] = [
    ("add", |a, b| tensor_ops::add(a, b)),
    ("sub", |a, b| tensor_ops::sub(a, b)),
    ("maximum", |a, b| tensor_ops::maximum(a, b)),
    ("minimum", |a, b| tensor_ops::minimum(a, b)),
    ("sq_diff", |a, b| sq_diff(a, b)),
];

/// Two random COO tensors of one shape and sparse dims (dtypes may differ: promotion), the
/// second's entries drawn inside the first's shape (overlaps likely), values signed.
fn pair() -> impl Strategy<Value = (Coo, Coo)> {
    (coo(), sparse_model::dtype(), 0usize..=12).prop_flat_map(|(a, dtype, nnz)| {
        let idx: Vec<_> = (0..a.sd).map(|d| prop::collection::vec(0..a.shape[d] as i64, nnz)).collect();
        let row: usize = a.shape[a.sd..].iter().product();
        let vals = prop::collection::vec((-2i32..=2).prop_map(f64::from), nnz * row);
        (Just(a), Just(dtype), idx, vals).prop_map(|(a, dtype, idx, vals)| {
            let b = Coo { shape: a.shape.clone(), sd: a.sd, dtype, idx: idx.concat(), vals };
            (a, b)
        })
    })
}

fn maybe_csr(t: Tensor, csr: bool) -> Tensor {
    if csr && t.sparse_dim().unwrap() == 2 {
        t.to_sparse_csr().unwrap()
    } else {
        t
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn union_ops_match_the_dense_ops((a, b) in pair(), csr in any::<bool>()) {
        let (sa, sb) = (maybe_csr(a.tensor(), csr), maybe_csr(b.tensor(), csr));
        let (da, db) = (sa.to_dense().unwrap(), sb.to_dense().unwrap());
        let mut union = pattern(&sa);
        union.extend(pattern(&sb));
        union.sort();
        union.dedup();
        for (name, op) in UNION_OPS {
            let want = op(&da, &db);
            let got = op(&sa, &sb);
            match (got, want) {
                (Ok(got), Ok(want)) => {
                    prop_assert_eq!(got.layout(), sa.layout(), "{}", name);
                    prop_assert_eq!((got.shape(), got.dtype()), (want.shape(), want.dtype()), "{}", name);
                    prop_assert_eq!(bits(&got.to_dense().unwrap()), bits(&want), "{} {:?}", name, (a.dtype, b.dtype));
                    prop_assert_eq!(&pattern(&got), &union, "{}: the union of the patterns", name);
                }
                // the dense call refuses these dtypes (bool sub): so does the sparse one
                (Err(_), Err(_)) => {}
                (got, want) => prop_assert!(false, "{}: sparse {:?} vs dense {:?}", name, got.map(|_| ()), want.map(|_| ())),
            }
        }
    }

    #[test]
    fn mul_runs_over_the_intersection((a, b) in pair(), csr in any::<bool>()) {
        let (sa, sb) = (maybe_csr(a.tensor(), csr), maybe_csr(b.tensor(), csr));
        let (da, db) = (sa.to_dense().unwrap(), sb.to_dense().unwrap());
        let Ok(want) = tensor_ops::mul(&da, &db) else { return Ok(()) };
        let got = tensor_ops::mul(&sa, &sb).unwrap();
        prop_assert_eq!((got.layout(), got.dtype()), (sa.layout(), want.dtype()));
        prop_assert_eq!(bits(&got.to_dense().unwrap()), bits(&want));
        let (pa, pb) = (pattern(&sa), pattern(&sb));
        let both: Vec<_> = pa.iter().filter(|k| pb.contains(k)).cloned().collect();
        prop_assert_eq!(pattern(&got), both);
        // sparse ⊙ dense (either order): the sparse operand's pattern, the dense values
        for got in [tensor_ops::mul(&sa, &db).unwrap(), tensor_ops::mul(&db, &sa).unwrap()] {
            prop_assert_eq!(got.layout(), sa.layout());
            prop_assert_eq!(bits(&got.to_dense().unwrap()), bits(&want));
            prop_assert_eq!(pattern(&got), pa.clone());
        }
        // sparse + dense: the dense result
        if let Ok(want) = tensor_ops::add(&da, &db) {
            let got = tensor_ops::add(&sa, &db).unwrap();
            prop_assert_eq!(got.layout(), Layout::Strided);
            prop_assert_eq!(bits(&got), bits(&want));
        }
    }
}

fn f32s(v: Vec<f32>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

/// [[1, _, 2], [_, _, -3]] and [[_, 4, 5], [_, _, 6]] (f32).
fn two() -> (Tensor, Tensor) {
    let a =
        Tensor::sparse_coo(&i64s(vec![0, 0, 1, 0, 2, 2], &[2, 3]), &f32s(vec![1., 2., -3.], &[3]), &[2, 3]).unwrap();
    let b = Tensor::sparse_coo(&i64s(vec![1, 0, 0, 2, 1, 2], &[2, 3]), &f32s(vec![6., 4., 5.], &[3]), &[2, 3]).unwrap();
    (a, b)
}

#[test]
fn binary_ops_by_example() {
    let (a, b) = two();
    let s = tensor_ops::add(&a, &b).unwrap();
    assert_eq!(s.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 0, 1, 0, 1, 2, 2]);
    assert_eq!(s.values().unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 7., 3.]);
    assert!(s.is_coalesced().unwrap());
    let p = tensor_ops::mul(&a, &b).unwrap();
    assert_eq!((p.nnz().unwrap(), as_f64(&p.to_dense().unwrap())), (2, vec![0., 0., 10., 0., 0., -18.]));
    // user ops: the union (sq_diff) and a stated intersection
    assert_eq!(as_f64(&sq_diff(&a, &b).unwrap().to_dense().unwrap()), vec![1., 16., 9., 0., 0., 81.]);
    let h = scaled_product(&a, &b).unwrap();
    assert_eq!((h.nnz().unwrap(), as_f64(&h.to_dense().unwrap())), (2, vec![0., 0., 5., 0., 0., -9.]));
    // promotion follows the dense rule: f32 + i32 sparse → f32
    let bi = b.with_values(&b.values().unwrap().to_dtype(DType::I32).unwrap()).unwrap();
    let mixed = tensor_ops::add(&a, &bi).unwrap();
    assert_eq!((mixed.dtype(), as_f64(&mixed.to_dense().unwrap())), (DType::F32, vec![1., 4., 7., 0., 0., 3.]));
    // a dense operand broadcast onto the sparse pattern (mul), and into a dense result (add)
    let row = f32s(vec![10., 20., 30.], &[3]);
    let m = tensor_ops::mul(&a, &row).unwrap();
    assert_eq!((m.layout(), as_f64(&m.to_dense().unwrap())), (Layout::SparseCoo, vec![10., 0., 60., 0., 0., -90.]));
    let d = tensor_ops::add(&a, &row).unwrap();
    assert_eq!((d.layout(), as_f64(&d)), (Layout::Strided, vec![11., 20., 32., 10., 20., 27.]));
    // CSR ⊕ CSR stays CSR; COO ⊕ CSR is COO
    let (ca, cb) = (a.to_sparse_csr().unwrap(), b.to_sparse_csr().unwrap());
    assert_eq!(tensor_ops::sub(&ca, &cb).unwrap().layout(), Layout::SparseCsr);
    assert_eq!(tensor_ops::sub(&a, &cb).unwrap().layout(), Layout::SparseCoo);
    assert_eq!(as_f64(&tensor_ops::sub(&ca, &cb).unwrap().to_dense().unwrap()), vec![1., -4., -3., 0., 0., -9.]);
}

#[test]
fn binary_errors_say_why() {
    let (a, b) = two();
    // a union op that does not keep zeros
    let e = assert_err(plus_one(&a, &b), "sparse_test_plus_one", &["maps zeros to", "to_dense()"]);
    assert!(matches!(e, Error::Layout { .. }));
    // sparse operands of different shapes or sparse dims
    let c = Tensor::sparse_coo(&i64s(vec![0, 0], &[2, 1]), &f32s(vec![1.], &[1]), &[2, 4]).unwrap();
    assert_err(tensor_ops::add(&a, &c), "add", &["same shape", "[2, 3]", "[2, 4]"]);
    let hybrid = Tensor::sparse_coo(&i64s(vec![1], &[1, 1]), &f32s(vec![1., 2., 3.], &[1, 3]), &[2, 3]).unwrap();
    assert_err(tensor_ops::add(&a, &hybrid), "add", &["sparse dims", "2", "1"]);
    // a dense operand that would enlarge the sparse shape (mul keeps the sparse shape)
    let big = Tensor::ones(&[4, 2, 3], DType::F32, Device::Cpu).unwrap();
    assert_err(tensor_ops::mul(&a, &big), "mul", &["[4, 2, 3]", "broadcast to the sparse operand's shape [2, 3]"]);
    // in place: values only, never a new pattern
    let (a, b) = two();
    assert_err(tensor_ops::add_(&a, &b), "add", &["keeps its pattern", "without the trailing underscore"]);
    let row = f32s(vec![10., 20., 30.], &[3]);
    tensor_ops::mul_(&a, &row).unwrap();
    assert_eq!(as_f64(&a.to_dense().unwrap()), vec![10., 0., 60., 0., 0., -90.]);
    // in place on a dense tensor with a sparse operand, and _out into a dense tensor
    let d = Tensor::ones(&[2, 3], DType::F32, Device::Cpu).unwrap();
    tensor_ops::add_(&d, &b).unwrap();
    assert_eq!(as_f64(&d), vec![1., 5., 6., 1., 1., 7.]);
    let out = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    tensor_ops::mul_out(&a, &b, &out).unwrap();
    assert_eq!(as_f64(&out), vec![0., 0., 300., 0., 0., -540.]);
    assert_err(tensor_ops::mul_out(&a, &b, &b), "mul", &["_out into a sparse tensor"]);
    // duplicates in place
    let dup = Tensor::sparse_coo(&i64s(vec![1, 1], &[1, 2]), &f32s(vec![4., 9.], &[2]), &[2]).unwrap();
    assert_err(tensor_ops::mul_(&dup, &f32s(vec![1., 2.], &[2])), "mul", &["duplicate entries"]);
}

// ---- amax / amin ----

fn dims_of(rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::btree_set(0..rank, 1..=rank).prop_map(|s| s.into_iter().collect())
}

/// A COO tensor whose values may be negative (so the implicit zeros can win a max).
fn signed_coo() -> impl Strategy<Value = Coo> {
    coo().prop_map(|mut c| {
        c.vals.iter_mut().enumerate().for_each(|(k, v)| *v = if k % 3 == 0 { -*v - 1.0 } else { *v });
        c
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn amax_amin_count_the_implicit_zeros((c, dims) in signed_coo().prop_flat_map(|c| { let r = c.shape.len(); (Just(c), dims_of(r)) }), keepdim in any::<bool>(), csr in any::<bool>()) {
        let s = maybe_csr(c.tensor(), csr);
        let d = s.to_dense().unwrap();
        for (name, max) in [("amax", true), ("amin", false)] {
            let want = if max { d.amax(&dims, keepdim) } else { d.amin(&dims, keepdim) };
            let got = if max { s.amax(&dims, keepdim) } else { s.amin(&dims, keepdim) };
            match (got, want) {
                (Ok(got), Ok(want)) => {
                    prop_assert_eq!((got.shape(), got.dtype()), (want.shape(), want.dtype()), "{}", name);
                    prop_assert_eq!(bits(&got.to_dense().unwrap()), bits(&want), "{} {:?}", name, c.dtype);
                }
                (Err(_), Err(_)) => {} // an empty reduced dim: both refuse
                (got, want) => prop_assert!(false, "{}: sparse {:?} vs dense {:?}", name, got.map(|_| ()), want.map(|_| ())),
            }
        }
    }
}

#[test]
fn amax_amin_by_example() {
    let (a, _) = two(); // [[1, _, 2], [_, _, -3]]
    assert_eq!(as_f64(&a.amax(&[1], false).unwrap().to_dense().unwrap()), vec![2., 0.]);
    assert_eq!(as_f64(&a.amin(&[1], false).unwrap().to_dense().unwrap()), vec![0., -3.]);
    assert_eq!(as_f64(&a.amax(&[0, 1], false).unwrap()), vec![2.]);
    assert_eq!(as_f64(&a.amin_all().unwrap()), vec![-3.]);
    // a full row: no implicit zero joins it
    let full = Tensor::sparse_coo(&i64s(vec![0, 0, 0, 1], &[2, 2]), &f32s(vec![-1., -2.], &[2]), &[1, 2]).unwrap();
    assert_eq!(as_f64(&full.amax(&[1], false).unwrap().to_dense().unwrap()), vec![-1.]);
    // NaN propagates; nnz 0 gives zeros
    let nan = Tensor::sparse_coo(&i64s(vec![0], &[1, 1]), &f32s(vec![f32::NAN], &[1]), &[3]).unwrap();
    assert!(as_f64(&nan.amax_all().unwrap())[0].is_nan());
    let none = Tensor::sparse_coo(&i64s(vec![], &[1, 0]), &f32s(vec![], &[0]), &[3]).unwrap();
    assert_eq!(as_f64(&none.amax_all().unwrap()), vec![0.]);
    // an empty reduced dim is the dense error
    let empty = Tensor::sparse_coo(&i64s(vec![], &[1, 0]), &f32s(vec![], &[0, 0]), &[3, 0]).unwrap();
    assert!(empty.amax(&[1], false).is_err());
}

// ---- softmax ----

/// The model: softmax of each group of entries (same indices but along `dim`) in f64.
fn softmax_model(s: &Tensor, dim: usize, log: bool) -> BTreeMap<Vec<i64>, f64> {
    let c = s.to_sparse_coo().unwrap().coalesce().unwrap();
    assert_eq!(c.dense_dim().unwrap(), 0, "the model takes no dense dims");
    let (idx, vals, nnz, sd) = (
        c.indices().unwrap().to_vec::<i64>().unwrap(),
        as_f64(&c.values().unwrap()),
        c.nnz().unwrap(),
        c.sparse_dim().unwrap(),
    );
    let key = |j: usize| (0..sd).map(|d| idx[d * nnz + j]).collect::<Vec<_>>();
    let mut groups: BTreeMap<Vec<i64>, Vec<usize>> = BTreeMap::new();
    for j in 0..nnz {
        let mut k = key(j);
        k.remove(dim);
        groups.entry(k).or_default().push(j);
    }
    let mut out = BTreeMap::new();
    for members in groups.values() {
        let hi = members.iter().map(|&j| vals[j]).fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = members.iter().map(|&j| (vals[j] - hi).exp()).sum();
        for &j in members {
            let v = if log { vals[j] - hi - total.ln() } else { (vals[j] - hi).exp() / total };
            out.insert(key(j), v);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn softmax_matches_the_model(c in coo().prop_map(|mut c| { c.shape.truncate(c.sd); c.vals.truncate(c.idx.len() / c.sd); c }), dim_seed in any::<usize>(), log in any::<bool>(), csr in any::<bool>()) {
        let s = maybe_csr(c.tensor(), csr);
        let dim = dim_seed % c.sd;
        let got = if log { tensor_ops::log_softmax(&s, dim) } else { tensor_ops::softmax(&s, dim) }.unwrap();
        prop_assert_eq!(got.layout(), s.layout());
        let want_dtype = if c.dtype.is_float() { c.dtype } else { DType::F32 };
        prop_assert_eq!(got.dtype(), want_dtype);
        let model = softmax_model(&s, dim, log);
        let got_coo = got.to_sparse_coo().unwrap();
        prop_assert_eq!(pattern(&got_coo), model.keys().cloned().collect::<Vec<_>>());
        let vals = as_f64(&got_coo.coalesce().unwrap().values().unwrap());
        let tol = match want_dtype {
            DType::F8E4M3 => 0.07,
            DType::F8E5M2 => 0.13,
            DType::F16 | DType::BF16 => 1e-2,
            _ => 1e-6,
        };
        for (g, w) in vals.iter().zip(model.values()) {
            prop_assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{} vs {}", g, w);
        }
    }
}

#[test]
fn softmax_by_example() {
    let (a, _) = two(); // [[1, _, 2], [_, _, -3]]
    let p = tensor_ops::softmax(&a, 1).unwrap();
    let e = 1f64.exp() + 2f64.exp();
    let want = [1f64.exp() / e, 2f64.exp() / e, 1.0];
    for (g, w) in as_f64(&p.values().unwrap()).iter().zip(want) {
        assert!((g - w).abs() < 1e-6);
    }
    // along dim 0: column 0 holds one entry (log 1 = 0), column 2 holds 2 and -3
    let l = as_f64(&tensor_ops::log_softmax(&a, 0).unwrap().values().unwrap());
    let lse = (2f64.exp() + (-3f64).exp()).ln();
    for (g, w) in l.iter().zip([0.0, 2.0 - lse, -3.0 - lse]) {
        assert!((g - w).abs() < 1e-6, "{l:?}");
    }
    // along a dense dim: the dense softmax of each entry's slice
    let h = Tensor::sparse_coo(&i64s(vec![1], &[1, 1]), &f32s(vec![0., 0.], &[1, 2]), &[3, 2]).unwrap();
    let q = tensor_ops::softmax(&h, 1).unwrap();
    assert_eq!((q.layout(), as_f64(&q.to_dense().unwrap())), (Layout::SparseCoo, vec![0., 0., 0.5, 0.5, 0., 0.]));
    assert!(matches!(tensor_ops::softmax(&a, 2), Err(Error::DimOutOfRange { .. })));
    let out = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    assert_err(tensor_ops::softmax_out(&a, 1, &out), "softmax", &["sparse"]);
}

// ---- batched CSR ----

/// Two 2x3 matrices, two entries each: [[1, _, 2], [_, _, _]] and [[_, 3, _], [4, _, _]].
fn batched() -> Tensor {
    let crow = i64s(vec![0, 2, 2, 0, 1, 2], &[2, 3]);
    let col = i64s(vec![0, 2, 1, 0], &[2, 2]);
    Tensor::sparse_csr(&crow, &col, &f32s(vec![1., 2., 3., 4.], &[2, 2]), &[2, 2, 3]).unwrap()
}

#[test]
fn batched_csr() {
    let b = batched();
    let dense = vec![1., 0., 2., 0., 0., 0., 0., 3., 0., 4., 0., 0.];
    assert_eq!((b.nnz().unwrap(), b.sparse_dim().unwrap(), b.dense_dim().unwrap()), (2, 2, 0));
    assert_eq!(as_f64(&b.to_dense().unwrap()), dense);
    let coo = b.to_sparse_coo().unwrap();
    assert_eq!(coo.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 1, 1, 0, 0, 0, 1, 0, 2, 1, 0]);
    assert!(coo.is_coalesced().unwrap());
    // back to batched CSR, from COO and from its dense form through COO
    let again = coo.to_sparse_csr().unwrap();
    assert_eq!(again.crow_indices().unwrap().shape(), &[2, 3]);
    assert_eq!(again.crow_indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 2, 2, 0, 1, 2]);
    assert_eq!(again.col_indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 2, 1, 0]);
    let from_dense = b.to_dense().unwrap().to_sparse(3).unwrap().to_sparse_csr().unwrap();
    assert_eq!(as_f64(&from_dense.to_dense().unwrap()), dense);
    // unequal nnz per batch cannot be batched CSR
    let uneven =
        Tensor::sparse_coo(&i64s(vec![0, 0, 1, 0, 0, 0, 0, 1, 2], &[3, 3]), &f32s(vec![1., 2., 3.], &[3]), &[2, 2, 3])
            .unwrap();
    assert_err(uneven.to_sparse_csr(), "to_sparse_csr", &["same nnz in every batch", "[2, 1]"]);
    // ops: a map over the values, a union, an intersection with a dense tensor, sums,
    // amax and softmax, each against the dense result
    let d = b.to_dense().unwrap();
    let n = tensor_ops::neg(&b).unwrap();
    assert_eq!(
        (n.layout(), as_f64(&n.to_dense().unwrap())),
        (Layout::SparseCsr, as_f64(&tensor_ops::neg(&d).unwrap()))
    );
    let s = tensor_ops::add(&b, &b).unwrap();
    assert_eq!(
        (s.layout(), as_f64(&s.to_dense().unwrap())),
        (Layout::SparseCsr, as_f64(&tensor_ops::add(&d, &d).unwrap()))
    );
    let m = tensor_ops::mul(&b, &d).unwrap();
    assert_eq!(as_f64(&m.to_dense().unwrap()), as_f64(&tensor_ops::mul(&d, &d).unwrap()));
    tensor_ops::mul_(&b.deep_clone().unwrap(), &d).unwrap();
    assert_eq!(as_f64(&b.sum(&[0], false).unwrap().to_dense().unwrap()), as_f64(&d.sum(&[0], false).unwrap()));
    assert_eq!(as_f64(&b.amax(&[2], false).unwrap().to_dense().unwrap()), as_f64(&d.amax(&[2], false).unwrap()));
    let p = tensor_ops::softmax(&b, 2).unwrap();
    assert_eq!(p.layout(), Layout::SparseCsr);
    assert_eq!(
        as_f64(&p.values().unwrap()),
        vec![1. / (1. + 1f64.exp()), 1f64.exp() / (1. + 1f64.exp()), 1., 1.]
            .into_iter()
            .map(|x| x as f32 as f64)
            .collect::<Vec<_>>()
    );
    // constructor errors name the batch
    let bad = i64s(vec![0, 2, 2, 0, 2, 1], &[2, 3]);
    assert_err(
        Tensor::sparse_csr(&bad, &i64s(vec![0, 2, 1, 0], &[2, 2]), &f32s(vec![0.; 4], &[2, 2]), &[2, 2, 3]),
        "sparse_csr",
        &["batch 1"],
    );
    assert_err(
        Tensor::sparse_csr(
            &i64s(vec![0, 2, 2, 0, 1, 2], &[2, 3]),
            &i64s(vec![0, 2, 1, 0], &[4]),
            &f32s(vec![0.; 4], &[4]),
            &[2, 2, 3],
        ),
        "sparse_csr",
        &["[*batch, nnz]"],
    );
    assert_err(
        Tensor::sparse_csr(
            &i64s(vec![0, 2, 2, 0, 1, 2], &[2, 3]),
            &i64s(vec![0, 2, 1, 0], &[2, 2]),
            &f32s(vec![0.; 4], &[4]),
            &[2, 2, 3],
        ),
        "sparse_csr",
        &["[*batch, nnz, *dense_dims] = [2, 2]"],
    );
    assert_err(
        Tensor::sparse_csr(
            &i64s(vec![0, 2, 2, 0, 1, 2], &[2, 3]),
            &i64s(vec![0, 2, 1, 0], &[2, 2]),
            &f32s(vec![0.; 4], &[2, 2]),
            &[3, 2, 3],
        ),
        "sparse_csr",
        &["[*batch, rows + 1] = [3, 3]"],
    );
}
