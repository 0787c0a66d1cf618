//! ndarray interop: zero-copy adoption (pointer equality) of every layout an owned array
//! can have, borrowed views under the storage lock, copies out, and the error cases.

use tensor_ops::prelude::*;
use tensor_ops::tensor_core::ndarray::{s, Array, ArrayD, Axis, IxDyn};

fn grid(rows: usize, cols: usize) -> ArrayD<f32> {
    Array::from_shape_fn((rows, cols), |(r, c)| (r * 100 + c) as f32).into_dyn()
}

/// Values of `t` in logical order next to `a`'s, and the data pointer of the tensor's view.
fn check_same(t: &Tensor, a: &ArrayD<f32>) {
    assert_eq!(t.shape(), a.shape());
    assert_eq!(t.to_vec::<f32>().unwrap(), a.iter().copied().collect::<Vec<_>>());
}

#[test]
fn adoption_is_zero_copy_for_every_layout() {
    let layouts: Vec<(&str, ArrayD<f32>)> = vec![
        ("standard", grid(3, 4)),
        ("fortran", {
            let mut a = grid(3, 4);
            a.swap_axes(0, 1);
            a.as_standard_layout().to_owned().reversed_axes().into_dyn()
        }),
        ("transposed", grid(3, 4).reversed_axes().into_dyn()),
        ("flipped", {
            let mut a = grid(3, 4);
            a.invert_axis(Axis(1));
            a
        }),
        ("stepped", grid(6, 5).slice_move(s![1..;2, ..;-2]).into_dyn()),
        ("empty", grid(0, 4)),
        ("0-dim", Array::from_elem(IxDyn(&[]), 7.0f32)),
    ];
    for (what, a) in layouts {
        let expect = a.clone();
        let ptr = a.as_ptr();
        let t = Tensor::from_ndarray(a).unwrap();
        check_same(&t, &expect);
        if t.numel() > 0 {
            let back = t.with_ndarray_view::<f32, _>(|v| (v.as_ptr(), v.to_owned())).unwrap();
            assert_eq!(back.0, ptr, "{what}: the tensor's first element is the array's");
            assert_eq!(back.1, expect, "{what}");
        }
        assert_eq!(t.to_ndarray::<f32>().unwrap(), expect, "{what}");
    }
}

#[test]
fn views_borrow_under_the_lock_and_write_through() {
    let t = Tensor::arange(0, 12, 1, DType::I32, Device::Cpu).unwrap().view(&[3, 4]).unwrap();
    let col = t.slice(1, 0, 4, 2).unwrap().flip(0).unwrap();
    let sum = col.with_ndarray_view::<i32, _>(|v| v.sum()).unwrap();
    assert_eq!(sum, 2 + 4 + 6 + 8 + 10);
    col.with_ndarray_view_mut::<i32, _>(|mut v| v.mapv_inplace(|x| -x)).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11]);
    // the lock is held during the closure: an op on the same storage inside is an error
    let inner = t.with_ndarray_view::<i32, _>(|_| t.add_(&t)).unwrap();
    assert!(matches!(inner, Err(Error::Locked { .. })), "{inner:?}");
}

#[test]
fn interop_errors_are_values() {
    let t = Tensor::zeros(&[2, 2], DType::F32, Device::Cpu).unwrap();
    assert!(matches!(t.with_ndarray_view::<f64, _>(|_| ()), Err(Error::DTypeMismatch { .. })));
    assert!(t.to_ndarray::<i32>().is_err());
    let expanded = t.select(0, 0).unwrap().unsqueeze(0).unwrap().expand(&[3, 2]).unwrap();
    assert!(expanded.with_ndarray_view::<f32, _>(|v| v.sum()).is_ok());
    assert!(expanded.with_ndarray_view_mut::<f32, _>(|_| ()).is_err());
    t.storage().set_read_only();
    assert!(matches!(t.with_ndarray_view_mut::<f32, _>(|_| ()), Err(Error::ReadOnly { .. })));
    let gpu = Tensor::empty(&[2], DType::F32, Device::Cuda(0)).unwrap();
    assert!(gpu.with_ndarray_view::<f32, _>(|_| ()).is_err());
}
