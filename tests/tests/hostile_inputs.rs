//! Regression tests for the defects hostile and new users found (issue 32): empty tensors
//! across devices, negative dims, integer arithmetic in user reductions, deep and
//! number-heavy fused chains, errors that name their op, writes to read-only storage and
//! the deep copy. Each fails on the code before its fix. (DLPack, safetensors, rayon and
//! duplicate-name cases live in `interop_*.rs`, `rayon_stress.rs` and `duplicate_ops.rs`.)

use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

// ---------------------------------------------------------------- 1. empty across devices

#[test]
fn empty_tensors_move_between_devices_without_a_copy_error() {
    // The destination of an empty copy is lazy: no driver is needed to make it, and no
    // byte crosses. (cuda_device.rs moves empty tensors on a device too.)
    for shape in [&[0usize][..], &[3, 0], &[0, 4, 2]] {
        let cpu = Tensor::zeros(shape, DType::F32, Device::Cpu).unwrap();
        let dev = cpu.to_device(Device::Cuda(0)).unwrap();
        assert_eq!((dev.shape(), dev.device()), (shape, Device::Cuda(0)));
        let back = dev.to_device(Device::Cpu).unwrap();
        assert_eq!((back.shape(), back.dtype()), (shape, DType::F32));
        assert!(back.to_vec::<f32>().unwrap().is_empty());
    }
    // A shape mismatch is still an error, empty or not.
    let dst = Tensor::empty(&[0, 3], DType::F32, Device::Cuda(0)).unwrap();
    let src = Tensor::zeros(&[0, 4], DType::F32, Device::Cpu).unwrap();
    let e = dst.copy_(&src).unwrap_err().to_string();
    assert!(e.starts_with("copy_:") && e.contains("[0, 4]") && e.contains("[0, 3]"), "{e}");
}

// ---------------------------------------------------------------- 6. dims from -1 casts

#[test]
fn softmax_of_a_negative_dim_cast_to_usize_is_an_error_not_a_panic() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let scalar = Tensor::from_vec(vec![1.0f32], &[]).unwrap();
    let minus_one = -1i64 as usize;
    for t in [&a, &scalar] {
        for (name, r) in [
            ("softmax", t.softmax(minus_one)),
            ("log_softmax", t.log_softmax(minus_one)),
            ("softmax", t.softmax(t.ndim())),
        ] {
            let e = r.unwrap_err();
            assert!(matches!(e, Error::DimOutOfRange { .. }), "{e}");
            assert!(e.to_string().starts_with(name), "{e}");
        }
        let out = Tensor::zeros(t.shape(), DType::F32, Device::Cpu).unwrap();
        let e = tensor_ops::softmax_out(t, minus_one, &out).unwrap_err().to_string();
        assert!(e.contains("-1 cast to usize") && e.contains("ndim - 1"), "{e}");
        assert!(tensor_ops::log_softmax_out(t, minus_one, &out).is_err());
    }
    // Reductions and views say the same of such a dim.
    let e = a.sum(&[minus_one], false).unwrap_err().to_string();
    assert!(e.contains("-1 cast to usize"), "{e}");
    let e = a.transpose(0, minus_one).unwrap_err().to_string();
    assert!(e.contains("-1 cast to usize"), "{e}");
    // The last dim itself works.
    assert_eq!(f32s(&a.softmax(1).unwrap()).len(), 4);
}

// ---------------------------------------------------------------- 7. integer reduction bodies

/// Positives per mille of the extent in a plain `i64`: `finish` divides by `n` (0 over an
/// empty extent); the param weighs each positive (the sum wraps on overflow).
#[tensor_op(reduce, dtypes = [i32, i64, f32])]
pub mod positive_rate {
    fn identity<T: Num>() -> i64 {
        0
    }
    fn fold<T: Num>(acc: i64, x: T, #[param] w: i64) -> i64 {
        acc + (x > T::zero()) as i64 * w
    }
    fn combine<T: Num>(a: i64, b: i64) -> i64 {
        a + b
    }
    fn finish<T: Num>(acc: i64, n: i64) -> i64 {
        acc * 1000 / n
    }
}

/// Σ 10 / d over the positives (a plain `i64` divided by the param `d`, 0 included), less
/// the count, through unary minus.
#[tensor_op(reduce, dtypes = [i64])]
pub mod positives_div {
    fn identity<T: Num>() -> (i64, i64) {
        (0, 0)
    }
    fn fold<T: Num>(acc: (i64, i64), x: T, #[param] d: i64) -> (i64, i64) {
        let s = acc.0 + 10 * (x > T::zero()) as i64 / d;
        (s, acc.1 + 1)
    }
    fn combine<T: Num>(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
    fn finish<T: Num>(acc: (i64, i64)) -> i64 {
        -(acc.0 * 1) - -acc.1
    }
}

#[test]
fn integer_reduction_bodies_wrap_and_divide_by_zero_to_zero() {
    let empty = Tensor::zeros(&[0, 3], DType::I64, Device::Cpu).unwrap();
    // A rate over an empty extent: acc / 0 = 0, not a panic.
    assert_eq!(positive_rate(&empty, &[0], false, 1).unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 0]);
    assert_eq!(positive_rate_all(&empty, 1).unwrap().to_vec::<i64>().unwrap(), vec![0]);
    let t = Tensor::from_vec(vec![7i64, -9, 12, 5], &[4]).unwrap();
    for dtype in [DType::I32, DType::I64, DType::F32] {
        let t = t.to_dtype(dtype).unwrap();
        assert_eq!(positive_rate_all(&t, 1).unwrap().to_vec::<i64>().unwrap(), vec![750], "{dtype}");
    }
    // An overflowing accumulator wraps (debug builds included).
    let wrapped = i64::MAX.wrapping_mul(3).wrapping_mul(1000) / 4;
    assert_eq!(positive_rate_all(&t, i64::MAX).unwrap().to_vec::<i64>().unwrap(), vec![wrapped]);
    // A param of 0: x / 0 = 0.
    assert_eq!(positives_div_all(&t, 0).unwrap().to_vec::<i64>().unwrap(), vec![4]);
    assert_eq!(positives_div_all(&t, 3).unwrap().to_vec::<i64>().unwrap(), vec![-9 + 4]);
    // The same in fused chains ending in the user reductions.
    let x = Expr::input(&t);
    let fused = (&x * 1i64).reduce_all(&positives_div::SPEC, &[Scalar::Int(0)]).eval().unwrap();
    assert_eq!(fused.to_vec::<i64>().unwrap(), vec![4]);
    let x = Expr::input(&empty);
    let fused = (&x + 1i64).reduce(&positive_rate::SPEC, &[0], false, &[Scalar::Int(1)]).eval().unwrap();
    assert_eq!(fused.to_vec::<i64>().unwrap(), vec![0, 0, 0]);
}

// ---------------------------------------------------------------- 8. deep chains

/// `steps` rounds of `x * 0.5 + 1.0` from `x0`, as a fused chain and in plain f32 (each
/// node one IEEE operation, so the eager chain's value exactly).
fn deep_chain(a: &Tensor, steps: usize) -> (Expr, Vec<f32>) {
    let mut x = Expr::input(a);
    for _ in 0..steps {
        x = &x * 0.5f32 + 1.0f32;
    }
    let want = f32s(a)
        .into_iter()
        .map(|mut v| {
            for _ in 0..steps {
                v = v * 0.5 + 1.0;
            }
            v
        })
        .collect();
    (x, want)
}

#[test]
fn deep_fused_chains_evaluate_and_drop_without_recursion() {
    let a = Tensor::from_vec(vec![3.0f32, -7.5, 1e6, 0.0], &[4]).unwrap();
    for steps in [1, 6, 200, 20_000] {
        let (x, want) = deep_chain(&a, steps);
        let got = x.eval().unwrap();
        assert_eq!(
            f32s(&got).iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{steps} steps"
        );
        let s = x.sum_all().eval().unwrap();
        let eager = Tensor::from_vec(want.clone(), &[4]).unwrap().sum_all().unwrap();
        assert_eq!(f32s(&s)[0].to_bits(), f32s(&eager)[0].to_bits(), "{steps} steps, sum");
        let out = Tensor::full(&[4], f32::NAN, DType::F32, Device::Cpu).unwrap();
        x.eval_into(&out).unwrap();
        assert_eq!(f32s(&out), want, "{steps} steps, into");
    }
    // Building and dropping a very deep chain (it used to overflow the stack on drop).
    let mut x = Expr::input(&a);
    for _ in 0..200_000 {
        x = x.neg();
    }
    drop(x);
}

// ---------------------------------------------------------------- 10. numbers and leaves

#[test]
fn number_operands_do_not_exhaust_the_leaves_and_long_chains_fall_back() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, -3.0], &[3]).unwrap();
    // `x * 0.5 + 1.0` six times: two distinct numbers, used twelve times.
    let (x, want) = deep_chain(&a, 6);
    assert_eq!(f32s(&x.eval().unwrap()), want);
    let flat = x.to_chain().unwrap();
    assert_eq!((flat.leaves.len(), flat.consts.len()), (1, 2), "x is the leaf, 0.5 and 1.0 constants");
    // Fourteen distinct numbers: every one a leaf, fused on the CPU.
    let mut x = Expr::input(&a);
    let mut want = f32s(&a);
    for k in 0..14 {
        let c = k as f32 + 0.25;
        x = &x + c;
        want.iter_mut().for_each(|v| *v += c);
    }
    assert_eq!(f32s(&x.eval().unwrap()), want);
    // More leaf tensors than one kernel takes (70): node by node, the same answer.
    let leaves: Vec<Tensor> = (0..70).map(|k| Tensor::full(&[3], k as f32, DType::F32, Device::Cpu).unwrap()).collect();
    let mut x = Expr::input(&a);
    let mut want = f32s(&a);
    for (k, l) in leaves.iter().enumerate() {
        x = &x + Expr::input(l);
        want.iter_mut().for_each(|v| *v += k as f32);
    }
    assert_eq!(f32s(&x.eval().unwrap()), want);
    let total: f32 = want.iter().sum();
    let s = x.sum_all().eval().unwrap();
    assert!((f32s(&s)[0] - total).abs() <= 1e-3 * total.abs(), "{s} vs {total}");
}

// ---------------------------------------------------------------- 11. errors name the op

#[test]
fn a_bad_reduction_out_is_an_error_of_the_reduction_checked_first() {
    let a = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
    let row = Tensor::zeros(&[1], DType::F32, Device::Cpu).unwrap();
    let expanded = row.expand(&[3]).unwrap();
    for (op, r) in [
        ("sum", tensor_ops::sum_out(&a, &[1], false, &expanded)),
        ("mean", tensor_ops::mean_out(&a, &[1], false, &expanded)),
        ("sum", Expr::input(&a).exp().sum(&[1], false).eval_into(&expanded)),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidOutput { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("{op}:")), "{e}");
    }
    // The out is untouched: nothing was computed.
    assert_eq!(f32s(&row), vec![0.0]);
    let ro = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    ro.storage().set_read_only();
    assert!(matches!(tensor_ops::mean_out(&a, &[1], false, &ro), Err(Error::ReadOnly { op: "mean" })));
    let e = Expr::input(&a).sum(&[1], false).eval_into(&ro).unwrap_err();
    assert!(matches!(e, Error::ReadOnly { op: "sum" }), "{e}");
}

#[test]
fn out_of_memory_names_the_op_the_shape_and_the_dtype() {
    // 2^58 f32 elements: a valid shape, more memory than any machine has.
    let huge = Tensor::empty(&[1 << 29, 1 << 29], DType::F32, Device::Cpu).unwrap();
    let e = huge.fill_(1.0).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{msg}");
    assert!(msg.starts_with("fill_: out of memory") && msg.contains("f32"), "{msg}");
    // A new output allocated at once names its shape.
    let e = huge.exp().unwrap_err().to_string();
    assert!(e.starts_with("exp: out of memory") && e.contains("a [536870912, 536870912] f32 tensor"), "{e}");
    let one = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let e = one.add(&huge).unwrap_err().to_string();
    assert!(e.starts_with("add: out of memory") && e.contains("f32"), "{e}");
}

// ---------------------------------------------------------------- 12, 13. writes and copies

#[test]
fn every_write_to_read_only_storage_is_refused_even_a_no_op() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    t.storage().set_read_only();
    assert!(matches!(t.copy_(&t), Err(Error::ReadOnly { op: "copy_" })));
    let empty = t.narrow(0, 0, 0).unwrap();
    assert!(matches!(empty.fill_(0.0), Err(Error::ReadOnly { op: "fill_" })));
    assert!(matches!(empty.copy_(&empty), Err(Error::ReadOnly { op: "copy_" })));
    assert!(matches!(t.add_(&t), Err(Error::ReadOnly { .. })));
    assert!(matches!(empty.relu_(), Err(Error::ReadOnly { .. })));
    assert_eq!(f32s(&t), vec![1.0, 2.0]);
}

#[test]
fn deep_clone_is_a_writable_copy_and_contiguous_is_not() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let c = t.deep_clone().unwrap();
    assert!(!c.shares_storage(&t));
    c.fill_(0.0).unwrap();
    assert_eq!(f32s(&t), vec![1.0, 2.0, 3.0, 4.0]);
    // contiguous() of a contiguous tensor is the same storage (as PyTorch's).
    assert!(t.contiguous().unwrap().shares_storage(&t));
    // A read-only tensor's deep clone is writable; views clone row-major.
    t.storage().set_read_only();
    let c = t.t().unwrap().deep_clone().unwrap();
    assert!(c.is_contiguous());
    c.add_(&c).unwrap();
    assert_eq!(f32s(&c), vec![2.0, 6.0, 4.0, 8.0]);
    let msg = t.fill_(0.0).unwrap_err().to_string();
    assert!(msg.contains("deep_clone()"), "the read-only error names the copy method: {msg}");
    // Empty, 0-dim and every dtype.
    for dtype in DType::ALL {
        let s = Tensor::arange(0, 5, 1, dtype, Device::Cpu).unwrap();
        let c = s.flip(0).unwrap().deep_clone().unwrap();
        assert_eq!((c.dtype(), c.shape()), (dtype, &[5usize][..]));
        assert_eq!(
            c.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(),
            s.flip(0).unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
        );
    }
    assert_eq!(Tensor::zeros(&[0, 2], DType::I8, Device::Cpu).unwrap().deep_clone().unwrap().shape(), &[0, 2]);
}

// ---------------------------------------------------------------- dims near usize::MAX

/// Arguments near `usize::MAX` (a `-1` cast to `usize`) are errors, with no arithmetic
/// overflow on the way: a debug build panics on one (found by `examples/api_fuzz.rs` run
/// as a debug build).
#[test]
fn counts_near_usize_max_are_errors_without_overflow() {
    let d = Tensor::zeros(&[2, 3, 4], DType::F32, Device::Cpu).unwrap();
    for dense_dim in [usize::MAX, usize::MAX - 1, 2] {
        let e = d.to_sparse_csr_hybrid(dense_dim).unwrap_err().to_string();
        assert!(e.starts_with("to_sparse_csr_hybrid") && e.contains("rank >= dense_dim + 2"), "{e}");
    }
    assert_eq!(d.to_sparse_csr_hybrid(1).unwrap().shape(), &[2, 3, 4]);
}
