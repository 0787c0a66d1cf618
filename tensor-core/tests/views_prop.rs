//! Property tests of every view op against the independent offset model in `common`.

mod common;

use common::{apply, assert_err_names, config, op_strategy, shape_strategy, Model, Op};
use proptest::prelude::*;
use tensor_core::{DType, Element, Scalar, Tensor};

/// A tensor of `shape` placed at `start` inside a larger storage of distinct values.
fn base(shape: &[usize], start: usize, extra: usize) -> (Tensor, Tensor, Model<i64>) {
    let n: usize = shape.iter().product();
    let cap = start + n + extra;
    let data: Vec<i64> = (0..cap as i64).map(|i| i * 3 - 7).collect();
    let whole = Tensor::from_vec(data.clone(), &[cap]).unwrap();
    let spec: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    let t = whole.narrow(0, start, n).unwrap().view(&spec).unwrap();
    let m = Model::new(data, shape, start);
    m.check(&t);
    (whole, t, m)
}

/// Runs a chain of ops, stopping at the first (checked) error.
fn run_chain(t: &Tensor, m: &Model<i64>, ops: &[Op]) -> (Tensor, Model<i64>) {
    let (mut t, mut m) = (t.clone(), m.clone());
    for op in ops {
        match apply(&t, &m, op) {
            Some((t2, m2)) => (t, m) = (t2, m2),
            None => break,
        }
    }
    (t, m)
}

fn chain() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op_strategy(), 1..if cfg!(miri) { 5 } else { 8 })
}

proptest! {
    #![proptest_config(config())]

    /// Every single op, on random shapes and offsets, against the model.
    #[test]
    fn single_op_matches_model(shape in shape_strategy(), start in 0usize..3, extra in 0usize..3, op in op_strategy()) {
        let (_whole, t, m) = base(&shape, start, extra);
        apply(&t, &m, &op);
    }

    /// Chains of random views (negative strides, expanded dims, as_strided, copies).
    #[test]
    fn view_chains_match_model(shape in shape_strategy(), start in 0usize..3, extra in 0usize..3, ops in chain()) {
        let (_whole, t, m) = base(&shape, start, extra);
        run_chain(&t, &m, &ops);
    }

    /// A write through one view (copy_ or fill_) is seen through the storage and through
    /// an unrelated second view of it; writes into views with repeated elements are
    /// rejected naming the op.
    #[test]
    fn writes_are_visible_through_other_views(
        shape in shape_strategy(),
        start in 0usize..3,
        ops1 in chain(),
        ops2 in chain(),
        use_fill in any::<bool>(),
    ) {
        let (whole, t, m) = base(&shape, start, 2);
        let (v1, m1) = run_chain(&t, &m, &ops1);
        let (v2, m2) = run_chain(&t, &m, &ops2);
        let (op, res) = if use_fill {
            ("fill_", v1.fill_(-1000))
        } else {
            let src: Vec<i64> = (0..m1.numel() as i64).map(|k| 10_000 + k).collect();
            ("copy_", v1.copy_(&Tensor::from_vec(src, &m1.shape).unwrap()))
        };
        if m1.has_overlap() {
            assert_err_names(res, op);
            return Ok(());
        }
        prop_assert!(res.is_ok(), "{op} refused a view without overlap: {:?}", res);
        let mut data = m1.data.clone();
        for (k, &o) in m1.offsets.iter().enumerate() {
            data[o] = if use_fill { -1000 } else { 10_000 + k as i64 };
        }
        if v1.shares_storage(&whole) {
            prop_assert_eq!(whole.to_vec::<i64>().unwrap(), data.clone());
            if v2.shares_storage(&whole) {
                Model { data, ..m2 }.check(&v2);
            }
        }
        let expect: Vec<i64> = (0..m1.numel() as i64).map(|k| if use_fill { -1000 } else { 10_000 + k }).collect();
        prop_assert_eq!(v1.to_vec::<i64>().unwrap(), expect);
    }

    /// to_vec / copy_ / fill_ for every dtype through random views.
    #[test]
    fn dtypes_through_views(
        dtype in 0usize..DType::ALL.len(),
        src_dtype in 0usize..DType::ALL.len(),
        shape in shape_strategy(),
        ops in chain(),
        fill in prop_oneof![
            (-100i64..100).prop_map(Scalar::Int),
            (-100.0f64..100.0).prop_map(Scalar::Float),
            any::<bool>().prop_map(Scalar::Bool),
        ],
    ) {
        let (dtype, src_dtype) = (DType::ALL[dtype], DType::ALL[src_dtype]);
        tensor_core::with_dtype!(dtype, T => dtype_case::<T>(src_dtype, &shape, &ops, fill));
    }
}

fn dtype_case<T: Element>(src_dtype: DType, shape: &[usize], ops: &[Op], fill: Scalar) {
    // Build the i64 chain to learn which views are reachable, then replay it on a tensor
    // of dtype T holding the cast values.
    let (_w, t64, m64) = base(shape, 1, 1);
    let data: Vec<T> = m64.data.iter().map(|&v| v.cast::<T>()).collect();
    let whole = Tensor::from_vec(data.clone(), &[data.len()]).unwrap();
    let t = whole.as_strided(t64.shape(), t64.strides(), t64.storage_offset()).unwrap();
    let m = Model { data, shape: m64.shape.clone(), offsets: m64.offsets.clone() };
    m.check(&t);
    let (mut t, mut m) = (t, m);
    for op in ops {
        match apply(&t, &m, op) {
            Some((t2, m2)) => (t, m) = (t2, m2),
            None => break,
        }
    }
    // to_vec with another dtype names both.
    let other = if T::DTYPE == DType::F32 { DType::I64 } else { DType::F32 };
    let err = if other == DType::F32 { t.to_vec::<f32>().map(|_| ()) } else { t.to_vec::<i64>().map(|_| ()) };
    let msg = assert_err_names(err, "to_vec").to_string();
    assert!(msg.contains(T::DTYPE.name()) && msg.contains(other.name()), "{msg}");

    if m.has_overlap() {
        assert_err_names(t.fill_(fill), "fill_");
        return;
    }
    assert!(!t.has_internal_overlap(), "exact overlap rule refused strides {:?}", t.strides());
    // fill_
    t.fill_(fill).unwrap();
    let mut data = m.data.clone();
    for &o in &m.offsets {
        data[o] = T::from_scalar(fill);
    }
    Model { data: data.clone(), ..m.clone() }.check(&t);
    // copy_ from a flipped source of another dtype: values cast on the way.
    let n = m.numel();
    let src_vals: Vec<i64> = (0..n as i64).map(|k| k % 7 - 3).collect();
    let src = Tensor::from_vec(src_vals.iter().rev().copied().collect::<Vec<_>>(), &[n]).unwrap();
    let src = src.to_dtype(src_dtype).unwrap().flip(0).unwrap();
    let src = src.view(&m.shape.iter().map(|&d| d as isize).collect::<Vec<_>>());
    let src = match src {
        Ok(s) => s,
        Err(_) => return, // flipped 1-D views reshape freely; only empty corner cases land here
    };
    t.copy_(&src).unwrap();
    for (k, &o) in m.offsets.iter().enumerate() {
        data[o] = tensor_core::with_dtype!(src_dtype, S => src_vals[k].cast::<S>().cast::<T>());
    }
    Model { data, ..m }.check(&t);
}
