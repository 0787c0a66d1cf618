//! Every error path of the core returns a value whose message names the op.

mod common;

use common::assert_err_names;
use tensor_core::{DType, Device, Error, Scalar, Storage, Tensor};

fn t23() -> Tensor {
    Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap()
}

#[test]
fn dim_out_of_range() {
    let t = t23();
    for (op, r) in [
        ("transpose", t.transpose(0, 2)),
        ("transpose", t.transpose(5, 0)),
        ("narrow", t.narrow(2, 0, 1)),
        ("select", t.select(2, 0)),
        ("slice", t.slice(3, 0, 1, 1)),
        ("squeeze", t.squeeze(2)),
        ("unsqueeze", t.unsqueeze(4)),
        ("flip", t.flip(2)),
    ] {
        let e = assert_err_names(r, op);
        assert!(matches!(e, Error::DimOutOfRange { .. }), "{op}: {e:?}");
        assert!(e.to_string().contains("2 dims") || e.to_string().contains("3 dims"), "{e}");
    }
    assert_err_names(t.size(2), "size");
    let s = Tensor::scalar(1, DType::F32).unwrap();
    assert_err_names(s.select(0, 0), "select");
    assert_err_names(s.flip(0), "flip");
    assert!(s.unsqueeze(0).is_ok());
}

#[test]
fn index_out_of_range() {
    let t = t23();
    let e = assert_err_names(t.select(1, 3), "select");
    assert!(matches!(e, Error::OutOfBounds { .. }));
    assert!(e.to_string().contains("index 3") && e.to_string().contains("size 3"), "{e}");
    assert_err_names(t.narrow(1, 2, 2), "narrow");
    assert_err_names(t.narrow(1, usize::MAX, 2), "narrow");
    assert_err_names(t.slice(0, 0, 1, 0), "slice");
}

#[test]
fn bad_permutations() {
    let t = t23();
    for p in [&[0usize, 0][..], &[0], &[0, 1, 2], &[1, 2], &[]] {
        let e = assert_err_names(t.permute(p), "permute");
        assert!(e.to_string().contains("[2, 3]"), "{e}");
    }
}

#[test]
fn bad_view_and_reshape_shapes() {
    let t = t23();
    for op in ["view", "reshape"] {
        let f = |s: &[isize]| if op == "view" { t.view(s) } else { t.reshape(s) };
        assert_err_names(f(&[4, 2]), op);
        assert_err_names(f(&[-1, -1]), op);
        assert_err_names(f(&[-2, 3]), op);
        assert_err_names(f(&[-1, 4]), op);
        assert_err_names(f(&[0, -1]), op);
        assert!(matches!(f(&[isize::MAX, isize::MAX, 0]), Err(Error::Overflow { .. })));
    }
    let e = assert_err_names(t.t().unwrap().view(&[6]), "view");
    assert!(e.to_string().contains("reshape"), "the message points at reshape: {e}");
    let e = assert_err_names(t.unsqueeze(0).unwrap().t(), "t");
    assert!(e.to_string().contains("transpose"), "{e}");
}

#[test]
fn bad_expand() {
    let t = t23();
    for op in ["expand", "broadcast_to"] {
        let f = |s: &[usize]| if op == "expand" { t.expand(s) } else { t.broadcast_to(s) };
        assert_err_names(f(&[3]), op);
        assert_err_names(f(&[2, 4]), op);
        assert_err_names(f(&[3, 3]), op);
        let e = assert_err_names(t.select(1, 0).unwrap().unsqueeze(1).unwrap().expand(&[2, usize::MAX]), "expand");
        assert!(matches!(e, Error::Overflow { .. }));
    }
    let one = Tensor::from_vec(vec![1u8], &[1]).unwrap();
    assert!(matches!(assert_err_names(one.expand(&[usize::MAX, 2]), "expand"), Error::Overflow { .. }));
    assert_err_names(one.broadcast_to(&[isize::MAX as usize, 4]), "broadcast_to");
}

#[test]
fn as_strided_bounds() {
    let t = t23(); // 6 elements of storage
    let e = assert_err_names(t.as_strided(&[2, 3], &[3, 1], 1), "as_strided");
    assert!(e.to_string().contains("6 elements"), "{e}");
    assert_err_names(t.as_strided(&[2], &[-1], 0), "as_strided"); // reaches element -1
    assert_err_names(t.as_strided(&[2], &[1, 1], 0), "as_strided"); // rank mismatch
    assert_err_names(t.as_strided(&[0], &[1], 7), "as_strided"); // empty, offset past the end
    assert_err_names(t.as_strided(&[2], &[isize::MAX], 0), "as_strided");
    assert_err_names(t.as_strided(&[2], &[isize::MIN], 5), "as_strided");
    assert!(matches!(
        assert_err_names(t.as_strided(&[usize::MAX, 2], &[0, 0], 0), "as_strided"),
        Error::Overflow { .. }
    ));
    // in bounds: fine, including negative strides, stride 0 and an empty view at the end
    assert!(t.as_strided(&[3], &[-2], 4).is_ok());
    assert!(t.as_strided(&[4, 2], &[0, 5], 0).is_ok());
    assert!(t.as_strided(&[0], &[1], 6).is_ok());
    // exotic but valid: huge strides on size-1 and empty dims
    let w = t.as_strided(&[1, 2], &[isize::MAX, 1], 0).unwrap();
    assert_eq!(w.to_vec::<i32>().unwrap(), vec![0, 1]);
    let e = t.as_strided(&[3, 0], &[isize::MAX, 1], 0).unwrap();
    assert_eq!(e.flip(0).unwrap().select(0, 2).unwrap().numel(), 0);
    assert_eq!(e.unsqueeze(0).unwrap().slice(1, 0, 3, 2).unwrap().shape(), &[1, 2, 0]);
    assert_eq!(w.flip(0).unwrap().to_vec::<i32>().unwrap(), vec![0, 1]);
}

#[test]
fn overflowing_shapes() {
    for shape in [&[usize::MAX, 2][..], &[isize::MAX as usize, 2], &[usize::MAX, 0], &[1 << 62, 4]] {
        let e = assert_err_names(Tensor::empty(shape, DType::F32, Device::Cpu), "empty");
        assert!(matches!(e, Error::Overflow { .. }), "{e:?}");
        assert!(e.to_string().contains(&format!("{shape:?}")), "{e}");
        assert_err_names(Tensor::zeros(shape, DType::U8, Device::Cpu), "zeros");
        assert_err_names(Tensor::ones(shape, DType::U8, Device::Cpu), "ones");
        assert_err_names(Tensor::full(shape, 1, DType::U8, Device::Cpu), "full");
    }
    assert_err_names(Tensor::from_vec(vec![1u8], &[usize::MAX, 2]), "from_vec");
    assert_err_names(Tensor::from_slice(&[1u8], &[usize::MAX, 2]), "from_slice");
    assert!(matches!(Storage::new_lazy(DType::F64, usize::MAX / 4, Device::Cpu), Err(Error::Overflow { .. })));
    assert_err_names(Tensor::arange(0.0, 1e300, 1e-300, DType::F32, Device::Cpu), "arange");
}

#[test]
fn construction_errors() {
    assert_err_names(Tensor::from_vec(vec![1i64, 2], &[3]), "from_vec");
    assert_err_names(Tensor::from_slice(&[1i64, 2], &[3]), "from_slice");
    assert_err_names(Tensor::arange(0, 5, 0, DType::I32, Device::Cpu), "arange");
    assert_err_names(Tensor::arange(0.0, f64::NAN, 1.0, DType::F32, Device::Cpu), "arange");
    let s = Storage::new_lazy(DType::F32, 4, Device::Cpu).unwrap();
    assert_err_names(Tensor::from_storage(s, &[5]), "from_storage");
    assert_err_names(t23().item(), "item");
}

#[test]
fn dtype_mismatch_in_to_vec() {
    let t = t23();
    let e = assert_err_names(t.to_vec::<f32>(), "to_vec");
    assert_eq!(e, Error::DTypeMismatch { op: "to_vec", expected: DType::I32, got: DType::F32 });
    assert!(e.to_string().contains("i32") && e.to_string().contains("f32"));
    assert_err_names(Tensor::scalar(true, DType::Bool).unwrap().to_vec::<u8>(), "to_vec");
}

#[test]
fn write_errors() {
    let t = t23();
    // copy_ shape mismatch
    let e = assert_err_names(t.copy_(&Tensor::zeros(&[3, 2], DType::F32, Device::Cpu).unwrap()), "copy_");
    assert!(e.to_string().contains("[3, 2]") && e.to_string().contains("[2, 3]"), "{e}");
    // writes into expanded (self-overlapping) views
    let row = Tensor::zeros(&[3], DType::I32, Device::Cpu).unwrap();
    let ex = row.expand(&[2, 3]).unwrap();
    assert_err_names(ex.fill_(1), "fill_");
    assert_err_names(ex.copy_(&t), "copy_");
    assert!(matches!(ex.fill_(Scalar::Int(1)), Err(Error::InvalidOutput { .. })));
    // ...which leave the data alone
    assert_eq!(row.to_vec::<i32>().unwrap(), vec![0, 0, 0]);
}

#[test]
fn device_errors_are_values() {
    // tensor-core alone links no CUDA runtime: every CUDA path is an error, never a panic.
    let t = Tensor::empty(&[2], DType::F32, Device::Cuda(0)).unwrap();
    assert!(t.to_vec::<f32>().is_err());
    assert!(t.fill_(1.0).is_err());
    assert!(t23().to_device(Device::Cuda(0)).is_err());
    assert!(Tensor::zeros(&[2], DType::F32, Device::Cuda(0)).is_err());
    let cpu = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    let e = cpu.check_same_device("add", &t).unwrap_err();
    assert!(e.to_string().contains("add") && e.to_string().contains("cuda:0"), "{e}");
}
