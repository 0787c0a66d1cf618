//! Sparse layouts (issue 34, the foundation): the validating constructors (every error
//! case), strided-only operations on sparse tensors as `Err`s naming the layout, the
//! accessors and display, and property tests of the CPU conversions against naive models:
//! `to_dense(to_sparse(d)) == d`, `coalesce` against a map of summed duplicates, COO ↔ CSR
//! round trips — random shapes, nnz 0 included, duplicate and unsorted indices, hybrid dense
//! dims, every dtype.

mod sparse_model;

use proptest::prelude::*;
use sparse_model::{as_f64, assert_err, coo, dtype, i64s, tensor_of};
use std::collections::BTreeMap;
use tensor_core::registry::{registry, sparse::COO_TO_DENSE};
use tensor_ops::prelude::*;
use tensor_ops::{DType, Device, Error, Layout, Tensor};

fn f32s(v: Vec<f32>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

/// A 2x3 COO tensor with a duplicate: (0,2)=1, (1,0)=2, (1,0)=3.
fn example() -> Tensor {
    Tensor::sparse_coo(&i64s(vec![0, 1, 1, 2, 0, 0], &[2, 3]), &f32s(vec![1., 2., 3.], &[3]), &[2, 3]).unwrap()
}

fn csr_example() -> Tensor {
    let crow = i64s(vec![0, 1, 3], &[3]);
    let col = i64s(vec![1, 0, 1], &[3]);
    Tensor::sparse_csr(&crow, &col, &f32s(vec![7., 8., 9.], &[3]), &[2, 2]).unwrap()
}

#[test]
fn coo_constructor_errors() {
    let v2 = f32s(vec![1., 2.], &[2]);
    let idx = i64s(vec![0, 1, 1, 2], &[2, 2]);
    // indices dtype
    let e = assert_err(Tensor::sparse_coo(&idx.to_dtype(DType::I32).unwrap(), &v2, &[2, 3]), "sparse_coo", &["i64"]);
    assert!(matches!(e, Error::DType { .. }));
    // indices rank
    assert_err(Tensor::sparse_coo(&i64s(vec![0, 1], &[2]), &v2, &[2]), "sparse_coo", &["2-D", "[2]"]);
    // zero sparse dims, and more than the rank
    assert_err(Tensor::sparse_coo(&i64s(vec![], &[0, 2]), &v2, &[2]), "sparse_coo", &["0 sparse dims", "1..=1"]);
    assert_err(Tensor::sparse_coo(&idx, &v2, &[4]), "sparse_coo", &["2 sparse dims", "1..=1"]);
    // values: wrong nnz, wrong dense dims
    assert_err(Tensor::sparse_coo(&idx, &f32s(vec![1., 2., 3.], &[3]), &[2, 3]), "sparse_coo", &["[2]", "[3]"]);
    let e = assert_err(
        Tensor::sparse_coo(&i64s(vec![0, 1], &[1, 2]), &f32s(vec![0.; 6], &[2, 3]), &[2, 4]),
        "sparse_coo",
        &["[2, 4]", "[2, 3]"],
    );
    assert!(matches!(e, Error::Shape { .. }));
    // indices out of range: too large, negative
    let e = assert_err(
        Tensor::sparse_coo(&i64s(vec![0, 1, 1, 3], &[2, 2]), &v2, &[2, 3]),
        "sparse_coo",
        &["indices[1, 1] = 3", "0..3"],
    );
    assert!(matches!(e, Error::OutOfBounds { .. }));
    assert_err(Tensor::sparse_coo(&i64s(vec![0, -1, 1, 2], &[2, 2]), &v2, &[2, 3]), "sparse_coo", &["= -1"]);
    // a sparse component
    let e = assert_err(Tensor::sparse_coo(&idx, &example(), &[2, 3]), "sparse_coo", &["sparse_coo", "to_dense()"]);
    assert!(matches!(e, Error::Layout { .. }));
    // an overflowing shape
    assert!(Tensor::sparse_coo(&i64s(vec![0], &[1, 1]), &f32s(vec![1.], &[1]), &[1, usize::MAX, 2]).is_err());
    // nnz 0 is fine
    let empty = Tensor::sparse_coo(&i64s(vec![], &[2, 0]), &f32s(vec![], &[0]), &[2, 3]).unwrap();
    assert_eq!(empty.nnz().unwrap(), 0);
}

#[test]
fn csr_constructor_errors() {
    let crow = i64s(vec![0, 1, 3], &[3]);
    let col = i64s(vec![1, 0, 1], &[3]);
    let v = f32s(vec![7., 8., 9.], &[3]);
    assert_err(
        Tensor::sparse_csr(&crow.to_dtype(DType::I32).unwrap(), &col, &v, &[2, 2]),
        "sparse_csr",
        &["both be i64 or both i32", "got i32 and i64"],
    );
    assert_err(
        Tensor::sparse_csr(&crow, &col.to_dtype(DType::U8).unwrap(), &v, &[2, 2]),
        "sparse_csr",
        &["both be i64 or both i32", "got i64 and u8"],
    );
    assert_err(Tensor::sparse_csr(&crow, &col, &v, &[4]), "sparse_csr", &["rank >= 2"]);
    assert_err(Tensor::sparse_csr(&crow, &col, &v, &[3, 2]), "sparse_csr", &["rows + 1] = [4]", "[3]"]);
    assert_err(
        Tensor::sparse_csr(&i64s(vec![0, 1, 3, 0, 1, 3], &[2, 3]), &col, &v, &[2, 2]),
        "sparse_csr",
        &["1 batch dims", "[2, 2]"],
    );
    assert_err(
        Tensor::sparse_csr(&crow, &i64s(vec![1, 0, 1], &[3, 1]), &v, &[2, 2]),
        "sparse_csr",
        &["[*batch, nnz]", "[3, 1]"],
    );
    assert_err(Tensor::sparse_csr(&i64s(vec![1, 1, 3], &[3]), &col, &v, &[2, 2]), "sparse_csr", &["start at 0"]);
    assert_err(Tensor::sparse_csr(&i64s(vec![0, 1, 2], &[3]), &col, &v, &[2, 2]), "sparse_csr", &["nnz = 3"]);
    assert_err(
        Tensor::sparse_csr(&i64s(vec![0, 2, 1, 3], &[4]), &col, &v, &[3, 2]),
        "sparse_csr",
        &["must not decrease", "crow_indices[1] = 2"],
    );
    assert_err(
        Tensor::sparse_csr(&crow, &i64s(vec![1, 0, 2], &[3]), &v, &[2, 2]),
        "sparse_csr",
        &["col_indices[2] = 2", "0..2"],
    );
    assert_err(Tensor::sparse_csr(&crow, &i64s(vec![1, -1, 0], &[3]), &v, &[2, 2]), "sparse_csr", &["= -1"]);
    assert_err(Tensor::sparse_csr(&crow, &col, &f32s(vec![1., 2.], &[2]), &[2, 2]), "sparse_csr", &["[3]", "[2]"]);
    assert_err(Tensor::sparse_csr(&crow, &col, &v, &[2, 2, 4]), "sparse_csr", &["[3, 4]"]);
    assert_err(Tensor::sparse_csr(&crow, &col, &csr_example(), &[2, 2]), "sparse_csr", &["to_dense()"]);
}

#[test]
fn strided_only_operations_are_layout_errors() {
    for s in [example(), csr_example()] {
        let layout = s.layout().name();
        let check = |r: Result<(), Error>, op: &str| {
            let e = assert_err(r, op, &[layout, "to_dense()"]);
            assert!(matches!(e, Error::Layout { .. }), "{e:?}");
        };
        check(s.view(&[-1]).map(drop), "view");
        check(s.reshape(&[-1]).map(drop), "reshape");
        check(s.as_strided(&[1], &[1], 0).map(drop), "as_strided");
        check(s.t().map(drop), "t");
        check(s.select(0, 0).map(drop), "select");
        check(s.slice(0, 0, 1, 1).map(drop), "slice");
        check(s.expand(&[2, 2, 2]).map(drop), "expand");
        check(s.unsqueeze(0).map(drop), "unsqueeze");
        check(s.flatten().map(drop), "flatten");
        check(s.to_vec::<f32>().map(drop), "to_vec");
        check(s.fill_(1.0), "fill_");
        check(s.contiguous().map(drop), "contiguous");
        check(s.copy_(&Tensor::zeros(s.shape(), DType::F32, Device::Cpu).unwrap()), "copy_");
        check(s.clone().resize_(&[4]), "resize_");
        // the stand-in storage refuses every lock
        check(s.storage().read().map(drop), "Storage::read");
        check(s.storage().write().map(drop), "Storage::write");
        assert_eq!((s.dtype(), s.device(), s.is_contiguous()), (DType::F32, Device::Cpu, false));
        // a reduction with no sparse form: NoKernel under the sparse layout, naming the layouts it has
        let e = assert_err(s.logsumexp(&[0], false).map(drop), "logsumexp", &["to_dense()", "Strided"]);
        assert!(matches!(e, Error::NoKernel { layout, .. } if layout == s.layout()), "{e:?}");
        // a sparse tensor's pattern never changes in place, and an _out is never sparse
        let dense = Tensor::ones(s.shape(), DType::F32, Device::Cpu).unwrap();
        assert!(matches!(tensor_ops::add_(&s, &dense), Err(Error::Layout { .. })));
        assert!(matches!(tensor_ops::add_out(&dense, &dense, &s), Err(Error::Layout { .. })));
        // the fused path too
        let chain = tensor_ops::fuse::Expr::input(&s) + 1.0f32;
        assert!(chain.eval().is_err());
    }
}

#[test]
fn accessors_and_display() {
    let s = example();
    assert_eq!(s.layout(), Layout::SparseCoo);
    assert!(s.is_sparse());
    assert_eq!((s.nnz().unwrap(), s.sparse_dim().unwrap(), s.dense_dim().unwrap()), (3, 2, 0));
    assert!(!s.is_coalesced().unwrap());
    assert_eq!(s.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 1, 2, 0, 0]);
    assert_eq!(s.values().unwrap().to_vec::<f32>().unwrap(), vec![1., 2., 3.]);
    assert!(matches!(s.crow_indices(), Err(Error::Layout { .. })));
    assert!(matches!(s.col_indices(), Err(Error::Layout { .. })));
    assert_eq!(
        s.to_string(),
        "tensor(indices=tensor([[0, 1, 1], [2, 0, 0]], dtype=i64), values=tensor([1., 2., 3.], dtype=f32), size=[2, 3], nnz=3, layout=sparse_coo)"
    );
    assert_eq!(format!("{s:?}"), s.to_string());
    assert!(format!("{s:#}").contains(",\n       values="));
    let c = csr_example();
    assert_eq!(c.crow_indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 3]);
    assert_eq!(c.col_indices().unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 1]);
    assert!(matches!(c.indices(), Err(Error::Layout { .. })));
    assert!(matches!(c.is_coalesced(), Err(Error::Layout { .. })));
    assert!(c.to_string().starts_with("tensor(crow_indices=tensor([0, 1, 3], dtype=i64), col_indices="));
    assert!(c.to_string().ends_with("size=[2, 2], nnz=3, layout=sparse_csr)"));
    let d = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    for r in [d.values().map(drop), d.indices().map(drop), d.nnz().map(drop), d.coalesce().map(drop)] {
        assert!(matches!(r, Err(Error::Layout { layout: Layout::Strided, .. })), "{r:?}");
    }
}

#[test]
fn conversions_by_example() {
    let s = example();
    assert_eq!(as_f64(&s.to_dense().unwrap()), vec![0., 0., 1., 5., 0., 0.]);
    let c = s.coalesce().unwrap();
    assert!(c.is_coalesced().unwrap());
    assert_eq!(c.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2, 0]);
    assert_eq!(c.values().unwrap().to_vec::<f32>().unwrap(), vec![1., 5.]);
    // copy_ from sparse into strided goes through to_dense
    let out = Tensor::zeros(&[2, 3], DType::F64, Device::Cpu).unwrap();
    out.copy_(&s).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![0., 0., 1., 5., 0., 0.]);
    // dtype and device of the components
    let h = s.to_dtype(DType::F16).unwrap();
    assert_eq!((h.layout(), h.dtype(), h.values().unwrap().dtype()), (Layout::SparseCoo, DType::F16, DType::F16));
    assert_eq!(h.indices().unwrap().dtype(), DType::I64);
    assert_eq!(as_f64(&h.to_dense().unwrap()), vec![0., 0., 1., 5., 0., 0.]);
    assert_eq!(s.to_device(Device::Cpu).unwrap().layout(), Layout::SparseCoo);
    let deep = s.deep_clone().unwrap();
    assert!(!deep.values().unwrap().shares_storage(&s.values().unwrap()));
    assert_eq!(as_f64(&deep.to_dense().unwrap()), vec![0., 0., 1., 5., 0., 0.]);
    // CSR
    let csr = s.to_sparse_csr().unwrap();
    assert_eq!(csr.crow_indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2]);
    assert_eq!(csr.col_indices().unwrap().to_vec::<i64>().unwrap(), vec![2, 0]);
    assert_eq!(as_f64(&csr.to_dense().unwrap()), vec![0., 0., 1., 5., 0., 0.]);
    assert_eq!(
        csr_example().to_sparse_coo().unwrap().indices().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 1, 1, 1, 0, 1]
    );
    // rank and sparse-dim errors
    assert_err(Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap().to_sparse_csr(), "to_sparse_csr", &["rank >= 2"]);
    assert_err(Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap().to_sparse(2), "to_sparse", &["1..=1"]);
    assert_err(Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap().to_sparse(0), "to_sparse", &["1..=1"]);
    assert_err(s.to_sparse(1), "to_sparse", &["sparse dims"]);
    let s1 = Tensor::zeros(&[2, 3, 2], DType::F32, Device::Cpu).unwrap().to_sparse(1).unwrap();
    assert_err(s1.to_sparse_csr(), "to_sparse_csr", &["2 sparse dims"]);
    // a strided tensor's to_dense is itself
    let d = Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap();
    assert!(d.to_dense().unwrap().is_same_view(&d));
}

#[test]
fn cuda_has_every_sparse_row_and_no_driver_is_an_err() {
    // Every CPU step has a CUDA row (tests/tests/cuda_sparse.rs and cuda_device.rs run them).
    for dtype in DType::ALL {
        assert!(registry().lookup_spec(&COO_TO_DENSE, Device::Cuda(0), Layout::SparseCoo, dtype).is_ok(), "{dtype}");
    }
    // Without a driver, a CUDA sparse tensor is an Err value, never a panic; with one (or the
    // stand-in) its conversions equal the CPU's.
    let s = example();
    match s.to_device(Device::Cuda(0)) {
        Err(e) => assert!(e.to_string().contains("cuda"), "{e}"),
        Ok(g) => assert_eq!(as_f64(&g.to_dense().unwrap()), as_f64(&s.to_dense().unwrap())),
    }
}

#[test]
fn large_inputs_take_the_parallel_paths() {
    // 2^17 entries over 2^12 x 2^8 positions: the parallel sort, scatter and segment sums.
    let (rows, cols, nnz) = (1usize << 12, 1usize << 8, 1usize << 17);
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let mut idx = vec![0i64; 2 * nnz];
    let mut vals = vec![0i64; nnz];
    let mut model: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for j in 0..nnz {
        let (r, c, v) = ((next() % rows) as i64, (next() % cols) as i64, (next() % 100 + 1) as i64); // never 0: every coalesced entry stays nonzero
        (idx[j], idx[nnz + j], vals[j]) = (r, c, v);
        *model.entry((r, c)).or_default() += v;
    }
    let s = Tensor::sparse_coo(&i64s(idx, &[2, nnz]), &i64s(vals, &[nnz]), &[rows, cols]).unwrap();
    let c = s.coalesce().unwrap();
    let ci = c.indices().unwrap().to_vec::<i64>().unwrap();
    let n = c.nnz().unwrap();
    assert_eq!(n, model.len());
    let got: Vec<((i64, i64), i64)> = (0..n)
        .map(|k| ((ci[k], ci[n + k]), 0))
        .zip(c.values().unwrap().to_vec::<i64>().unwrap())
        .map(|(a, v)| (a.0, v))
        .collect();
    assert!(got == model.into_iter().collect::<Vec<_>>(), "coalesce differs from the model");
    let dense = c.to_dense().unwrap();
    assert!(dense.to_vec::<i64>().unwrap() == s.to_dense().unwrap().to_vec::<i64>().unwrap(), "to_dense");
    let back = dense.to_sparse(2).unwrap();
    assert!(back.indices().unwrap().to_vec::<i64>().unwrap() == ci, "to_sparse of the dense result");
    assert!(as_f64(&back.to_sparse_csr().unwrap().to_dense().unwrap()) == as_f64(&dense), "through CSR");
}

#[test]
fn coalesced_to_dense_zeros_and_fills_every_block() {
    // Coalesced tensors large enough for the line-by-line scatter: rows of 1, 3 and 20000
    // elements (an entry over many lines), densities from empty to full, and one output of
    // 16 MiB (streamed stores). The output memory is
    // poisoned first (a freed block of the same size is what the CPU allocator hands back).
    for (positions, row, permille) in [
        (1usize << 17, 1usize, 0u64),
        (1 << 17, 1, 100),
        (50_000, 3, 10),
        (40, 20_000, 500),
        (1 << 16, 1, 1000),
        (1 << 22, 1, 30),
    ] {
        let shape: Vec<usize> = if row == 1 { vec![positions / 256, 256] } else { vec![positions, row] };
        drop(Tensor::full(&shape, 7.0f64, DType::F32, Device::Cpu).unwrap());
        let keep: Vec<i64> = (0..positions as u64)
            .filter(|&p| p.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1000 < permille)
            .map(|p| p as i64)
            .collect();
        let nnz = keep.len();
        let (idx, sparse_shape) = if row == 1 {
            let mut idx = vec![0i64; 2 * nnz];
            for (j, &p) in keep.iter().enumerate() {
                (idx[j], idx[nnz + j]) = (p / 256, p % 256);
            }
            (i64s(idx, &[2, nnz]), shape.clone())
        } else {
            (i64s(keep.clone(), &[1, nnz]), shape.clone())
        };
        let vals: Vec<f32> = (0..nnz * row).map(|k| (k % 97) as f32 - 48.5).collect();
        let vshape = if row == 1 { vec![nnz] } else { vec![nnz, row] };
        let s = Tensor::sparse_coo(&idx, &f32s(vals.clone(), &vshape), &sparse_shape).unwrap();
        assert!(s.is_coalesced().unwrap());
        let mut want = vec![0f32; positions * row];
        for (j, &p) in keep.iter().enumerate() {
            want[p as usize * row..(p as usize + 1) * row].copy_from_slice(&vals[j * row..(j + 1) * row]);
        }
        let got = s.to_dense().unwrap().to_vec::<f32>().unwrap();
        assert!(got == want, "to_dense of {positions} positions x {row} at {permille} permille");
    }
}

// ---- property tests ----

/// A shape of rank 1..=4 (sizes 0..=4) and a number of sparse dims in 1..=rank.
fn shape_and_sd() -> impl Strategy<Value = (Vec<usize>, usize)> {
    prop::collection::vec(0usize..=4, 1..=4).prop_flat_map(|shape| {
        let rank = shape.len();
        (Just(shape), 1..=rank)
    })
}

/// A float result's elements compared as f64 with the model (bool compared as 0/1).
fn assert_matches(t: &Tensor, want: &[f64]) {
    assert_eq!(as_f64(t), want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn dense_round_trip((shape, sd) in shape_and_sd(), dtype in dtype(), seed in any::<u64>()) {
        let n: usize = shape.iter().product();
        let vals: Vec<f64> = (0..n as u64).map(|i| ((seed.rotate_left(i as u32 % 64) ^ i) % 4) as f64).map(|v| if v == 3.0 { 0.0 } else { v }).collect();
        let d = tensor_of(&vals, &shape, dtype);
        let s = d.to_sparse(sd).unwrap();
        prop_assert_eq!(s.layout(), Layout::SparseCoo);
        prop_assert!(s.is_coalesced().unwrap());
        prop_assert_eq!(s.sparse_dim().unwrap(), sd);
        prop_assert_eq!(s.dtype(), dtype);
        let back = s.to_dense().unwrap();
        prop_assert_eq!(back.shape(), d.shape());
        prop_assert_eq!(as_f64(&back), as_f64(&d));
        // nnz counts the positions with a nonzero row
        let row: usize = shape[sd..].iter().product();
        let positions = if row == 0 { 0 } else { vals.chunks(row).filter(|r| r.iter().any(|&v| v != 0.0)).count() };
        prop_assert_eq!(s.nnz().unwrap(), positions);
        // coalescing a coalesced tensor changes nothing
        prop_assert_eq!(as_f64(&s.coalesce().unwrap().to_dense().unwrap()), as_f64(&d));
        if shape.len() >= 2 {
            // hybrid: rows and cols the first two dims, the rest dense
            let csr = d.to_sparse_csr_hybrid(shape.len() - 2).unwrap();
            prop_assert_eq!(csr.layout(), Layout::SparseCsr);
            prop_assert_eq!(as_f64(&csr.to_dense().unwrap()), as_f64(&d));
            prop_assert_eq!(as_f64(&csr.to_sparse_coo().unwrap().to_dense().unwrap()), as_f64(&d));
            // PyTorch's default: the leading dims are batch dims (equal nnz per batch, else Err)
            let batches: usize = shape[..shape.len() - 2].iter().product();
            let per = vals.len() / batches.max(1);
            let per_batch: Vec<usize> = if per == 0 {
                vec![0; batches]
            } else {
                vals.chunks(per).map(|b| b.iter().filter(|&&v| v != 0.0).count()).collect()
            };
            match d.to_sparse_csr() {
                Ok(b) => {
                    prop_assert!(per_batch.windows(2).all(|w| w[0] == w[1]), "{:?}", per_batch);
                    prop_assert_eq!(b.crow_indices().unwrap().ndim(), shape.len() - 1);
                    prop_assert_eq!(as_f64(&b.to_dense().unwrap()), as_f64(&d));
                }
                Err(e) => {
                    prop_assert!(per_batch.windows(2).any(|w| w[0] != w[1]), "{e}");
                    prop_assert!(e.to_string().contains("same nnz in every batch"), "{e}");
                }
            }
        }
    }

    #[test]
    fn coalesce_matches_the_model(c in coo()) {
        let s = c.tensor();
        let model = c.model();
        let co = s.coalesce().unwrap();
        prop_assert!(co.is_coalesced().unwrap());
        prop_assert_eq!(co.nnz().unwrap(), model.len());
        let n = model.len();
        let idx = co.indices().unwrap().to_vec::<i64>().unwrap();
        let keys: Vec<Vec<i64>> = (0..n).map(|k| (0..c.sd).map(|d| idx[d * n + k]).collect()).collect();
        prop_assert_eq!(&keys, &model.keys().cloned().collect::<Vec<_>>());
        let want: Vec<f64> = model.values().flatten().copied().collect();
        assert_matches(&co.values().unwrap(), &want);
        prop_assert_eq!(co.values().unwrap().dtype(), c.dtype);
        // to_dense sums duplicates whether coalesced or not
        let dense = c.dense_model();
        assert_matches(&s.to_dense().unwrap(), &dense);
        assert_matches(&co.to_dense().unwrap(), &dense);
    }

    #[test]
    fn coo_csr_round_trips(c in coo()) {
        let s = c.tensor();
        if c.sd == 1 {
            prop_assert!(s.to_sparse_csr().is_err());
            return Ok(());
        }
        if c.sd > 2 {
            // batched CSR (leading sparse dims as batch dims) when every batch holds the
            // same nnz, else an Err saying so
            match s.to_sparse_csr() {
                Ok(b) => {
                    prop_assert_eq!(b.crow_indices().unwrap().ndim(), c.sd - 1);
                    assert_matches(&b.to_dense().unwrap(), &c.dense_model());
                    assert_matches(&b.to_sparse_coo().unwrap().to_dense().unwrap(), &c.dense_model());
                }
                Err(e) => prop_assert!(e.to_string().contains("same nnz in every batch"), "{}", e),
            }
            return Ok(());
        }
        let dense = c.dense_model();
        let csr = s.to_sparse_csr().unwrap();
        prop_assert_eq!(csr.nnz().unwrap(), c.model().len());
        let crow = csr.crow_indices().unwrap().to_vec::<i64>().unwrap();
        prop_assert_eq!(crow.len(), c.shape[0] + 1);
        prop_assert!(crow.windows(2).all(|w| w[0] <= w[1]));
        assert_matches(&csr.to_dense().unwrap(), &dense);
        let back = csr.to_sparse_coo().unwrap();
        assert_matches(&back.to_dense().unwrap(), &dense);
        // CSR → COO → CSR gives the same components
        let again = back.to_sparse_csr().unwrap();
        prop_assert_eq!(again.crow_indices().unwrap().to_vec::<i64>().unwrap(), crow);
        prop_assert_eq!(again.col_indices().unwrap().to_vec::<i64>().unwrap(), csr.col_indices().unwrap().to_vec::<i64>().unwrap());
        prop_assert_eq!(as_f64(&again.values().unwrap()), as_f64(&csr.values().unwrap()));
    }
}

// ---- maps over values and sums ----

/// A user op with params: zero-preserving exactly when `b == 0`.
#[tensor_op(name = "sparse_test_affine", dtypes = [numeric])]
pub fn affine<T: Num>(x: T, #[param] a: f64, #[param] b: f64) -> T {
    x * T::from_f64(a) + T::from_f64(b)
}

/// The elements as f64 bits, `-0.0` read as `0.0` (implicit entries stay `+0.0`).
fn bits(t: &Tensor) -> Vec<u64> {
    as_f64(t).into_iter().map(|x| if x == 0.0 { 0u64 } else { x.to_bits() }).collect()
}

#[test]
fn zero_preserving_maps_run_over_values() {
    let i = i64s(vec![0, 1, 1, 2, 0, 0], &[2, 3]);
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I8] {
        let v = Tensor::from_vec(vec![-2.0f64, 4.0, 9.0], &[3]).unwrap().to_dtype(dtype).unwrap();
        let s = Tensor::sparse_coo(&i, &v, &[2, 3]).unwrap();
        let d = s.to_dense().unwrap();
        type Op = fn(&Tensor) -> tensor_ops::Result<Tensor>;
        let ops: [(&str, Op); 6] = [
            ("neg", |t| tensor_ops::neg(t)),
            ("abs", |t| tensor_ops::abs(t)),
            ("relu", |t| tensor_ops::relu(t)),
            ("sqrt", |t| tensor_ops::sqrt(t)),
            ("sin", |t| tensor_ops::sin(t)),
            ("tanh", |t| tensor_ops::tanh(t)),
        ];
        for (name, op) in ops {
            let got = op(&s).unwrap();
            let want = op(&d).unwrap();
            assert_eq!(
                (got.layout(), got.dtype(), got.shape()),
                (Layout::SparseCoo, want.dtype(), want.shape()),
                "{name}"
            );
            assert_eq!(
                got.indices().unwrap().to_vec::<i64>().unwrap(),
                vec![0, 1, 2, 0],
                "{name}: the coalesced pattern is kept"
            );
            assert_eq!(bits(&got.to_dense().unwrap()), bits(&want), "{name} {dtype}");
        }
        // a user op with params: accepted for b == 0, refused for b == 1
        let got = affine(&s, 3.0, 0.0).unwrap();
        assert_eq!(bits(&got.to_dense().unwrap()), bits(&affine(&d, 3.0, 0.0).unwrap()));
        let e = assert_err(affine(&s, 3.0, 1.0), "sparse_test_affine", &["maps 0 to", "to_dense()", "sparse_coo"]);
        assert!(matches!(e, Error::Layout { .. }));
    }
    // ops that do not keep zero are Errs naming the value
    let s = example();
    assert_err(tensor_ops::exp(&s), "exp", &["maps 0 to Float(1.0)", "to_dense()"]);
    assert_err(tensor_ops::cos(&s), "cos", &["maps 0 to"]);
    assert_err(tensor_ops::sigmoid(&s), "sigmoid", &["maps 0 to Float(0.5)"]);
    // duplicates are coalesced first: sqrt(4 + 9), not sqrt(4) + sqrt(9)
    let dup = Tensor::sparse_coo(&i64s(vec![1, 1], &[1, 2]), &f32s(vec![4., 9.], &[2]), &[2]).unwrap();
    assert_eq!(as_f64(&tensor_ops::sqrt(&dup).unwrap().to_dense().unwrap()), vec![0., 13f32.sqrt() as f64]);
    assert_err(tensor_ops::sqrt_(&dup), "sqrt", &["duplicate entries", "coalesce()"]);
    // CSR too, and in place on the values
    let c = csr_example();
    let n = tensor_ops::neg(&c).unwrap();
    assert_eq!((n.layout(), as_f64(&n.to_dense().unwrap())), (Layout::SparseCsr, vec![0., -7., -8., -9.]));
    tensor_ops::neg_(&c).unwrap();
    assert_eq!(as_f64(&c.to_dense().unwrap()), vec![0., -7., -8., -9.]);
    assert!(tensor_ops::exp_(&c).is_err());
    assert_eq!(as_f64(&c.to_dense().unwrap()), vec![0., -7., -8., -9.], "a refused in-place call writes nothing");
    // an _out form into a strided tensor runs the dense call on to_dense(); into a sparse
    // tensor it is a Layout error
    let out = Tensor::full(&[2, 2], 5.0, DType::F32, Device::Cpu).unwrap();
    tensor_ops::neg_out(&c, &out).unwrap();
    assert_eq!(as_f64(&out), vec![0., 7., 8., 9.]);
    let e = assert_err(tensor_ops::neg_out(&out, &c), "neg", &["_out into a sparse tensor"]);
    assert!(matches!(e, Error::Layout { .. }));
}

#[test]
fn sums_by_example() {
    let s = example(); // [[0, 0, 1], [5, 0, 0]] with a duplicate
    assert_eq!(s.sum_all().unwrap().to_vec::<f32>().unwrap(), vec![6.0]);
    let rows = s.sum(&[1], false).unwrap();
    assert_eq!((rows.layout(), as_f64(&rows.to_dense().unwrap())), (Layout::SparseCoo, vec![1., 5.]));
    let both = s.sum(&[0, 1], true).unwrap();
    assert_eq!((both.layout(), both.shape(), as_f64(&both)), (Layout::Strided, &[1, 1][..], vec![6.]));
    let ints = Tensor::sparse_coo(&i64s(vec![1, 1], &[1, 2]), &Tensor::from_vec(vec![true, true], &[2]).unwrap(), &[3])
        .unwrap();
    // duplicates add up as to_dense adds them: bool `or`, so the sum is the dense sum
    let total = ints.sum_all().unwrap();
    assert_eq!((total.dtype(), total.to_vec::<i64>().unwrap()), (DType::I64, vec![1]));
    // a reduction with no sparse form is NoKernel naming the layout
    assert!(matches!(s.logsumexp(&[0], false), Err(Error::NoKernel { .. })));
    assert!(s.sum(&[2], false).is_err());
    // an _out form runs the dense call on to_dense()
    let out = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    tensor_ops::sum_out(&s, &[1], false, &out).unwrap();
    assert_eq!(as_f64(&out), vec![1., 5.]);
    assert!(tensor_ops::sum_out(&s, &[1], false, &Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap()).is_err());
}

/// A random non-empty set of dims of a rank.
fn dims_of(rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::btree_set(0..rank, 1..=rank).prop_map(|s| s.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sums_match_the_dense_sums((c, dims) in coo().prop_flat_map(|c| { let r = c.shape.len(); (Just(c), dims_of(r)) }), keepdim in any::<bool>(), csr in any::<bool>()) {
        let mut s = c.tensor();
        if csr && c.sd == 2 {
            s = s.to_sparse_csr().unwrap();
        }
        let d = s.to_dense().unwrap();
        let want = d.sum(&dims, keepdim).unwrap();
        let got = s.sum(&dims, keepdim).unwrap();
        prop_assert_eq!((got.shape(), got.dtype()), (want.shape(), want.dtype()));
        // The 8-bit floats hold few of these sums: the sparse path adds duplicates and
        // segments in the values' dtype (a rounding per add, as for f16), the dense sum
        // rounds once; within a few of their ulps. Every other dtype: exactly.
        let rel = match c.dtype { DType::F8E4M3 => 0.25, DType::F8E5M2 => 0.5, _ => 0.0 };
        let close = |g: Vec<f64>, w: Vec<f64>| g.len() == w.len() && g.iter().zip(&w).all(|(g, w)| g == w || (g - w).abs() <= rel * w.abs());
        prop_assert!(close(as_f64(&got.to_dense().unwrap()), as_f64(&want)), "{:?} vs {:?}", as_f64(&got.to_dense().unwrap()), as_f64(&want));
        prop_assert!(close(as_f64(&s.sum_all().unwrap()), as_f64(&d.sum_all().unwrap())));
    }
}
