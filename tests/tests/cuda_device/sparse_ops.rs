//! Ops on sparse tensors on `Device::Cuda` (issue 34), each equal to the same call on the
//! CPU tensors: the union maps (`add`, `sub`, `maximum`, `minimum`) of two sparse tensors,
//! `mul` sparse ⊙ sparse and sparse ⊙ dense (either order), sparse + dense → dense,
//! `amax`/`amin` over sparse and dense dims with and without `keepdim`, softmax /
//! log_softmax along sparse and dense dims, and a map, a union, an intersection, amax and
//! softmax on batched CSR — COO and CSR, hybrid dense dims, duplicates, nnz 0, several
//! dtypes. Maps and max/min are compared bit for bit (layout, indices, values, coalesced
//! flag); softmax along a sparse dim (`sparse_segment_softmax`) too under the stand-in (the
//! host's libm, as the CPU), and within 1e-6 relative on a GPU (its `exp`/`log` may differ
//! from the host's in the last bit) and along a dense dim (the dense softmax rows, whose
//! CUDA kernel sums in another order than the CPU's).

use tensor_ops::prelude::*;

use super::cases::{Case, Rng};
use super::sparse::{assert_same, cpu};
use super::{control, DEV};

/// Small random COO cases of `dtype`: 1 to 3 sparse dims, hybrid dense dims, nnz 0 and
/// duplicates; the values of every third entry negated (so an implicit zero can win a max).
fn small_cases(dtype: DType, rng: &mut Rng) -> Vec<Case> {
    let specs: [(&[usize], usize, usize); 7] = [
        (&[3, 4], 2, 0),
        (&[6], 1, 5),
        (&[4, 5], 2, 9),
        (&[5, 3], 1, 7),
        (&[3, 4, 2], 2, 10),
        (&[2, 3, 4], 3, 12),
        (&[4, 4], 2, 30),
    ];
    specs
        .iter()
        .map(|&(shape, sd, nnz)| {
            let mut c = Case::random(shape, sd, dtype, nnz, rng);
            if dtype != DType::Bool && dtype != DType::U8 {
                c.vals.iter_mut().step_by(3).for_each(|v| *v = -*v - 1.0);
            }
            c
        })
        .collect()
}

/// `t` as CSR when it has two sparse dims and `csr`.
fn maybe_csr(t: Tensor, csr: bool) -> Tensor {
    if csr && t.sparse_dim().unwrap() == 2 {
        t.to_sparse_csr().unwrap()
    } else {
        t
    }
}

/// `op` on the device tensors equals `op` on the CPU tensors (or both refuse).
fn same_call(what: &str, op: impl Fn(&Tensor, &Tensor) -> tensor_ops::Result<Tensor>, host: [&Tensor; 2]) {
    let dev = [host[0].to_device(DEV).unwrap(), host[1].to_device(DEV).unwrap()];
    match (op(&dev[0], &dev[1]), op(host[0], host[1])) {
        (Ok(got), Ok(want)) => assert_same(&got, &want, what),
        (Err(_), Err(_)) => {} // the dense call refuses these dtypes (bool sub): so do both
        (got, want) => panic!("{what}: device {:?} vs CPU {:?}", got.map(|_| ()), want.map(|_| ())),
    }
}

const DTYPES: [DType; 7] = [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I8, DType::Bool];

type Binary = fn(&Tensor, &Tensor) -> tensor_ops::Result<Tensor>;

/// The union maps, `mul` over the intersection, sparse ⊙ dense and sparse + dense on the
/// device equal the CPU's.
pub fn sparse_binary_ops_match_the_cpu() {
    let mut rng = Rng(0xb1a7);
    let union: [(&str, Binary); 4] = [
        ("add", |a, b| tensor_ops::add(a, b)),
        ("sub", |a, b| tensor_ops::sub(a, b)),
        ("maximum", |a, b| tensor_ops::maximum(a, b)),
        ("minimum", |a, b| tensor_ops::minimum(a, b)),
    ];
    for dtype in DTYPES {
        for a in small_cases(dtype, &mut rng) {
            let b = Case::random(&a.shape, a.sd, dtype, a.nnz() + 2, &mut rng);
            for csr in [false, true] {
                let (sa, sb) = (maybe_csr(a.tensor(), csr), maybe_csr(b.tensor(), csr));
                let what = format!("{dtype} {:?} sd {} nnz {} csr {csr}", a.shape, a.sd, a.nnz());
                for (name, op) in union {
                    same_call(&format!("{what}: {name}"), op, [&sa, &sb]);
                }
                let mul: Binary = |x, y| tensor_ops::mul(x, y);
                same_call(&format!("{what}: mul sparse ⊙ sparse"), mul, [&sa, &sb]);
                let db = sb.to_dense().unwrap();
                same_call(&format!("{what}: mul sparse ⊙ dense"), mul, [&sa, &db]);
                same_call(&format!("{what}: mul dense ⊙ sparse"), mul, [&db, &sa]);
                same_call(&format!("{what}: sparse + dense"), union[0].1, [&sa, &db]);
            }
        }
    }
}

/// Every non-empty set of dims of `rank` dims.
fn dim_sets(rank: usize) -> Vec<Vec<usize>> {
    (1..1u32 << rank).map(|m| (0..rank).filter(|&d| m & (1 << d) != 0).collect()).collect()
}

/// `amax`/`amin` over every set of dims (sparse, dense, both), with and without keepdim, on
/// the device equal the CPU's.
pub fn sparse_amax_amin_match_the_cpu() {
    let mut rng = Rng(0xa3a);
    for dtype in DTYPES {
        for c in small_cases(dtype, &mut rng) {
            for csr in [false, true] {
                let s = maybe_csr(c.tensor(), csr);
                let g = s.to_device(DEV).unwrap();
                for dims in dim_sets(c.shape.len()) {
                    for keepdim in [false, true] {
                        let what =
                            format!("{dtype} {:?} sd {} csr {csr} dims {dims:?} keepdim {keepdim}", c.shape, c.sd);
                        for (name, max) in [("amax", true), ("amin", false)] {
                            let run = |t: &Tensor| if max { t.amax(&dims, keepdim) } else { t.amin(&dims, keepdim) };
                            match (run(&g), run(&s)) {
                                (Ok(got), Ok(want)) => assert_same(&got, &want, &format!("{what}: {name}")),
                                (Err(_), Err(_)) => {}
                                (got, want) => {
                                    panic!("{what}: {name}: {:?} vs {:?}", got.map(|_| ()), want.map(|_| ()))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The values of `got` (device) and `want` (CPU) agree: bit for bit when `exact` and under
/// the stand-in, else within 1e-6 relative (1e-2 for f16/bf16); the layouts and patterns
/// exactly.
fn assert_softmax_same(got: &Tensor, want: &Tensor, exact: bool, what: &str) {
    if exact && control().is_some() {
        return assert_same(got, want, what);
    }
    let (g, w) = (cpu(got), want.clone());
    assert_eq!((g.layout(), g.shape(), g.dtype()), (w.layout(), w.shape(), w.dtype()), "{what}");
    let (g, w) = (g.to_sparse_coo().unwrap(), w.to_sparse_coo().unwrap());
    let idx = |t: &Tensor| t.indices().unwrap().to_vec::<i64>().unwrap();
    assert_eq!(idx(&g), idx(&w), "{what}: indices");
    let vals = |t: &Tensor| t.values().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let tol = if matches!(w.dtype(), DType::F16 | DType::BF16) { 1e-2 } else { 1e-6 };
    for (x, y) in vals(&g).into_iter().zip(vals(&w)) {
        assert!((x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs()), "{what}: {x} vs {y}");
    }
}

/// softmax and log_softmax along every dim (sparse dims: unspecified entries −∞; dense
/// dims: each entry's slice) on the device equal the CPU's.
pub fn sparse_softmax_matches_the_cpu() {
    let mut rng = Rng(0x50f7);
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32] {
        for c in small_cases(dtype, &mut rng) {
            for csr in [false, true] {
                let s = maybe_csr(c.tensor(), csr);
                let g = s.to_device(DEV).unwrap();
                for dim in 0..c.shape.len() {
                    for log in [false, true] {
                        let what = format!("{dtype} {:?} sd {} csr {csr} dim {dim} log {log}", c.shape, c.sd);
                        let run = |t: &Tensor| {
                            if log {
                                tensor_ops::log_softmax(t, dim)
                            } else {
                                tensor_ops::softmax(t, dim)
                            }
                        };
                        assert_softmax_same(&run(&g).unwrap(), &run(&s).unwrap(), dim < c.sd, &what);
                    }
                }
            }
        }
    }
}

/// Two 2x3 matrices, two entries each: [[1, _, 2], [_, _, _]] and [[_, 3, _], [4, _, _]]
/// (the CPU test's), in `dtype`.
fn batched(dtype: DType) -> Tensor {
    let crow = Tensor::from_vec(vec![0i64, 2, 2, 0, 1, 2], &[2, 3]).unwrap();
    let col = Tensor::from_vec(vec![0i64, 2, 1, 0], &[2, 2]).unwrap();
    let vals = Tensor::from_vec(vec![1.0f64, -2., 3., 4.], &[2, 2]).unwrap().to_dtype(dtype).unwrap();
    Tensor::sparse_csr(&crow, &col, &vals, &[2, 2, 3]).unwrap()
}

/// A map, a union, an intersection with a dense tensor, amax and softmax of batched CSR on
/// the device equal the CPU's.
pub fn batched_csr_ops_match_the_cpu() {
    for dtype in [DType::F32, DType::F64, DType::BF16, DType::I64] {
        let b = batched(dtype);
        let (g, d) = (b.to_device(DEV).unwrap(), b.to_dense().unwrap());
        let gd = d.to_device(DEV).unwrap();
        let what = format!("{dtype} batched csr");
        assert_same(&tensor_ops::neg(&g).unwrap(), &tensor_ops::neg(&b).unwrap(), &format!("{what}: neg"));
        assert_same(&tensor_ops::add(&g, &g).unwrap(), &tensor_ops::add(&b, &b).unwrap(), &format!("{what}: add"));
        assert_same(&tensor_ops::mul(&g, &gd).unwrap(), &tensor_ops::mul(&b, &d).unwrap(), &format!("{what}: mul"));
        assert_same(&g.amax(&[2], false).unwrap(), &b.amax(&[2], false).unwrap(), &format!("{what}: amax"));
        assert_same(&g.amin(&[0], true).unwrap(), &b.amin(&[0], true).unwrap(), &format!("{what}: amin"));
        let (p, q) = (tensor_ops::softmax(&g, 2).unwrap(), tensor_ops::softmax(&b, 2).unwrap());
        assert_softmax_same(&p, &q, true, &format!("{what}: softmax"));
    }
}
