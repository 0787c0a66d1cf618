//! Promotion, casts, output rules, aliasing and error values of the built-in ops.

use tensor_ops::prelude::*;

fn t<T: tensor_ops::tensor_core::Element>(v: Vec<T>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

#[test]
fn promotion_follows_pytorch() {
    let i = t(vec![1i32, 2], &[2]);
    let f = t(vec![0.5f32, 0.25], &[2]);
    let u = t(vec![200u8, 100], &[2]);
    let s = t(vec![-1i8, 1], &[2]);
    assert_eq!(i.add(&f).unwrap().dtype(), DType::F32);
    assert_eq!(u.add(&s).unwrap().dtype(), DType::I16);
    assert_eq!(u.add(&s).unwrap().to_vec::<i16>().unwrap(), vec![199, 101]);
    // 0-dim of the same kind does not widen; a higher kind decides within its category
    // (PyTorch: only Python numbers use the default dtype, 0-dim tensors keep theirs).
    let big = Tensor::scalar(1000, DType::I64).unwrap();
    assert_eq!(u.add(&big).unwrap().dtype(), DType::U8);
    let half = Tensor::scalar(0.5, DType::F64).unwrap();
    assert_eq!(i.mul(&half).unwrap().dtype(), DType::F64);
    assert_eq!(i.mul(&half).unwrap().to_vec::<f64>().unwrap(), vec![0.5, 1.0]);
    assert_eq!(f.mul(&half).unwrap().dtype(), DType::F32);
    let h0 = Tensor::scalar(0.5, DType::F16).unwrap();
    assert_eq!(i.add(&h0).unwrap().dtype(), DType::F16);
    let flags = t(vec![true, false], &[2]);
    assert_eq!(flags.add(&Tensor::scalar(3, DType::I32).unwrap()).unwrap().dtype(), DType::I32);
    assert_eq!(flags.add(&Tensor::scalar(3, DType::I32).unwrap()).unwrap().to_vec::<i32>().unwrap(), vec![4, 3]);
    let h = t(vec![half::f16::from_f32(1.0)], &[1]);
    let b = t(vec![half::bf16::from_f32(1.0)], &[1]);
    assert_eq!(h.add(&b).unwrap().dtype(), DType::F32);
}

#[test]
fn float_ops_on_integers_compute_in_f32() {
    let i = t(vec![0i64, 1, 2], &[3]);
    let e = i.exp().unwrap();
    assert_eq!(e.dtype(), DType::F32);
    let v = e.to_vec::<f32>().unwrap();
    assert!((v[2] - 2f32.exp()).abs() < 1e-5);
    let d = t(vec![7i32, -7], &[2]).div(&t(vec![2i32, 2], &[2])).unwrap();
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![3.5, -3.5]);
    let b = t(vec![true, false], &[2]).sqrt().unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 0.0]);
}

#[test]
fn integer_overflow_wraps_and_division_is_true_division() {
    let a = t(vec![i32::MAX, i32::MIN], &[2]);
    let one = t(vec![1i32, 1], &[2]);
    assert_eq!(a.add(&one).unwrap().to_vec::<i32>().unwrap(), vec![i32::MIN, i32::MIN + 1]);
    assert_eq!(a.neg().unwrap().to_vec::<i32>().unwrap(), vec![-i32::MAX, i32::MIN]);
    let u = t(vec![250u8], &[1]);
    assert_eq!(u.mul(&t(vec![2u8], &[1])).unwrap().to_vec::<u8>().unwrap(), vec![244]);
}

#[test]
fn nan_and_infinities_are_ieee() {
    let x = t(vec![f32::NAN, f32::INFINITY, -1.0, 0.0], &[4]);
    let y = t(vec![1.0f32, 1.0, f32::NAN, -0.0], &[4]);
    let m = x.maximum(&y).unwrap().to_vec::<f32>().unwrap();
    assert!(m[0].is_nan() && m[1] == f32::INFINITY && m[2].is_nan());
    let l = x.log().unwrap().to_vec::<f32>().unwrap();
    assert!(l[0].is_nan() && l[1] == f32::INFINITY && l[2].is_nan() && l[3] == f32::NEG_INFINITY);
    let r = x.relu().unwrap().to_vec::<f32>().unwrap();
    assert!(r[0].is_nan() && r[2] == 0.0);
    assert_eq!(x.eq(&x).unwrap().to_vec::<bool>().unwrap(), vec![false, true, true, true]);
    assert_eq!(x.ne(&x).unwrap().to_vec::<bool>().unwrap(), vec![true, false, false, false]);
}

#[test]
fn out_rules() {
    let a = t(vec![1i32, 2, 3, 4], &[2, 2]);
    // Wider out dtype is fine.
    let out = Tensor::zeros(&[2, 2], DType::F64, Device::Cpu).unwrap();
    tensor_ops::add_out(&a, &a, &out).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![2., 4., 6., 8.]);
    // Float result into an integer out is an error naming both dtypes.
    let f = t(vec![0.5f32; 4], &[2, 2]);
    let err = tensor_ops::add_out(&f, &f, &a).unwrap_err().to_string();
    assert!(err.contains("add") && err.contains("f32") && err.contains("i32"), "{err}");
    // Wrong shape: no implicit resize.
    let small = Tensor::zeros(&[4], DType::I32, Device::Cpu).unwrap();
    let err = tensor_ops::add_out(&a, &a, &small).unwrap_err().to_string();
    assert!(err.contains("[4]") && err.contains("[2, 2]"), "{err}");
    // An out whose elements alias each other is rejected.
    let e = Tensor::zeros(&[1, 2], DType::I32, Device::Cpu).unwrap().expand(&[2, 2]).unwrap();
    assert!(matches!(tensor_ops::add_out(&a, &a, &e), Err(Error::InvalidOutput { .. })));
    // In place cannot broadcast self, and cannot take a float result into ints.
    let row = t(vec![1i32, 2], &[2]);
    assert!(row.add_(&a).is_err());
    assert!(a.add_(&f).is_err());
    // A bool result may go into any dtype (0/1), but a numeric result never into bool.
    tensor_ops::lt_out(&a, &t(vec![2i32, 2, 2, 2], &[2, 2]), &out).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![1., 0., 0., 0.]);
    let flags = Tensor::zeros(&[2, 2], DType::Bool, Device::Cpu).unwrap();
    assert!(tensor_ops::add_out(&a, &a, &flags).is_err());
}

#[test]
fn in_place_and_overlapping_operands() {
    // Exact aliasing: a += a.
    let a = t((0..6).map(|x| x as f32).collect(), &[6]);
    a.add_(&a).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0., 2., 4., 6., 8., 10.]);
    // Partial overlap: out is the input shifted by one element.
    let buf = t((0..7).map(|x| x as i64).collect(), &[7]);
    let src = buf.narrow(0, 0, 6).unwrap();
    let dst = buf.narrow(0, 1, 6).unwrap();
    tensor_ops::add_out(&src, &src, &dst).unwrap();
    assert_eq!(buf.to_vec::<i64>().unwrap(), vec![0, 0, 2, 4, 6, 8, 10]);
    // In place through a transposed view of itself: a = a + a.t().
    let m = t(vec![1f64, 2., 3., 4.], &[2, 2]);
    m.add_(&m.t().unwrap()).unwrap();
    assert_eq!(m.to_vec::<f64>().unwrap(), vec![2., 5., 5., 8.]);
}

#[test]
fn errors_are_values_naming_the_op() {
    let a = t(vec![1f32, 2., 3.], &[3]);
    let b = t(vec![1f32, 2.], &[2]);
    let err = a.add(&b).unwrap_err();
    assert!(matches!(err, Error::Broadcast { .. }));
    assert!(err.to_string().contains("add") && err.to_string().contains("[3]"));
    // No kernel: bool subtraction (refused by PyTorch too) names the supported dtypes.
    let bools = t(vec![true, false], &[2]);
    let err = bools.sub(&bools).unwrap_err();
    match &err {
        Error::NoKernel { op, dtype, supported, .. } => {
            assert_eq!(op, "sub");
            assert_eq!(*dtype, DType::Bool);
            assert!(supported.contains("f32"), "{supported}");
        }
        other => panic!("expected NoKernel, got {other:?}"),
    }
}

#[test]
fn output_follows_dense_input_memory_order() {
    let a = t((0..6).map(|x| x as f32).collect(), &[2, 3]).t().unwrap();
    let c = a.add(&a).unwrap();
    assert_eq!(c.shape(), &[3, 2]);
    assert_eq!(c.strides(), a.strides());
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0., 6., 2., 8., 4., 10.]);
    // Mixed layouts give a row-major result.
    let b = a.contiguous().unwrap();
    assert!(a.add(&b).unwrap().is_contiguous());
}

#[test]
fn copy_fill_and_casts() {
    let f = t(vec![1.7f32, -2.5, f32::NAN, 1e10, -1e10], &[5]);
    assert_eq!(f.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -2, 0, i32::MAX, i32::MIN]);
    assert_eq!(f.to_dtype(DType::U8).unwrap().to_vec::<u8>().unwrap(), vec![1, 0, 0, 255, 0]);
    let i = Tensor::zeros(&[3], DType::I16, Device::Cpu).unwrap();
    i.fill_(-3.9).unwrap();
    assert_eq!(i.to_vec::<i16>().unwrap(), vec![-3, -3, -3]);
    let dst = Tensor::zeros(&[2, 3], DType::BF16, Device::Cpu).unwrap();
    dst.t().unwrap().copy_(&t(vec![1u8, 2], &[2])).unwrap();
    let got: Vec<f32> = dst.to_vec::<half::bf16>().unwrap().iter().map(|x| x.to_f32()).collect();
    assert_eq!(got, vec![1., 1., 1., 2., 2., 2.]);
}

#[test]
fn registry_lists_every_builtin_for_every_dtype() {
    let reg = tensor_ops::registry();
    for op in [
        "neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "sin", "cos", "add", "sub", "mul", "div",
        "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge",
    ] {
        let cpu = reg.row_set(op, tensor_ops::tensor_core::DeviceKind::Cpu, Layout::Strided);
        assert!(cpu.is_some_and(|s| !s.dtypes().is_empty()), "{op} has CPU rows");
        let cuda = reg.row_set(op, tensor_ops::tensor_core::DeviceKind::Cuda, Layout::Strided);
        assert_eq!(cuda.map(|s| s.dtypes()), cpu.map(|s| s.dtypes()), "{op}: CUDA rows mirror CPU rows");
    }
    for op in ["copy", "fill"] {
        let cpu = reg.row_set(op, tensor_ops::tensor_core::DeviceKind::Cpu, Layout::Strided).unwrap();
        assert_eq!(cpu.dtypes().len(), DType::ALL.len(), "{op}");
    }
}
