//! DLPack export/import: zero-copy (pointer equality), shapes/strides/offsets kept, the
//! producer's deleter called exactly once, the read-only flag honoured both ways.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use tensor_ops::prelude::*;
use tensor_ops::tensor_core::dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
use tensor_ops::tensor_core::dlpark::DlpackFlags;
use tensor_ops::tensor_core::Storage;
use tensor_ops::DlpackTensor;

#[test]
fn export_is_zero_copy_and_keeps_views() {
    let v: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let addr = v.as_ptr() as usize;
    let t = Tensor::from_vec(v, &[2, 3, 4]).unwrap();
    let d = t.to_dlpack().unwrap();
    assert_eq!(d.first_element() as usize, addr, "the exported data is the Vec's buffer");
    let back = Tensor::from_dlpack(d).unwrap();
    assert_eq!(back.to_dlpack().unwrap().first_element() as usize, addr, "and so is the import's");
    drop(back);
    // A narrowed, transposed, flipped view: shape, strides and offset come through.
    let view = t.narrow(1, 1, 2).unwrap().transpose(0, 2).unwrap().flip(1).unwrap();
    let d = view.to_dlpack().unwrap();
    assert_eq!(d.shape(), &[4, 2, 2]);
    assert_eq!(d.strides(), &[1, -4, 12]);
    assert_eq!(d.strides().len(), 3);
    let back = Tensor::from_dlpack(d).unwrap();
    assert_eq!(back.shape(), view.shape());
    assert_eq!(back.strides(), view.strides());
    assert_eq!(back.to_vec::<f32>().unwrap(), view.to_vec::<f32>().unwrap());
    // The import is a view of the same memory: a write through it shows in the original.
    back.fill_(-1.0).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap().iter().filter(|&&x| x == -1.0).count(), 16);
    // The export keeps the storage alive after every other view is gone.
    let d = t.to_dlpack().unwrap();
    drop(t);
    drop(back);
    drop(view);
    let again = Tensor::from_dlpack(d).unwrap();
    assert_eq!(again.to_vec::<f32>().unwrap()[..6], [0.0, 1.0, 2.0, 3.0, -1.0, -1.0]);
}

#[test]
fn every_dtype_round_trips() {
    for dtype in DType::ALL {
        let t = Tensor::from_vec((0..6).map(|i| (i % 2) as f64).collect::<Vec<_>>(), &[2, 3])
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
            .t()
            .unwrap();
        let back = Tensor::from_dlpack(t.to_dlpack().unwrap()).unwrap();
        assert_eq!(back.dtype(), dtype);
        let f = |x: &Tensor| x.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(f(&back), f(&t), "{dtype}");
    }
}

static DELETED: AtomicUsize = AtomicUsize::new(0);

/// A foreign producer's record: a managed tensor over a Vec it owns.
#[repr(C)]
struct Foreign {
    managed: DLManagedTensorVersioned,
    data: Vec<f64>,
    shape: [i64; 2],
    strides: [i64; 2],
}

unsafe extern "C" fn foreign_deleter(m: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    drop(unsafe { Box::from_raw(m.cast::<Foreign>()) });
}

/// A [3, 2] f64 view with strides [-2, 1] starting at element 4 of [0, 1, 2, 3, 4, 5].
fn foreign(flags: DlpackFlags, code: DLDataTypeCode) -> DlpackTensor {
    let mut b = Box::new(Foreign {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(foreign_deleter),
            flags,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
                ndim: 2,
                dtype: DLDataType { code, bits: 64, lanes: 1 },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 4 * 8,
            },
        },
        data: vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        shape: [3, 2],
        strides: [-2, 1],
    });
    b.managed.dl_tensor.data = b.data.as_mut_ptr().cast();
    b.managed.dl_tensor.shape = b.shape.as_mut_ptr();
    b.managed.dl_tensor.strides = b.strides.as_mut_ptr();
    let raw = Box::into_raw(b);
    unsafe { DlpackTensor::from_raw(NonNull::new(raw.cast()).unwrap()) }
}

#[test]
fn imports_call_the_producer_deleter_exactly_once() {
    let before = DELETED.load(Ordering::SeqCst);
    let t = Tensor::from_dlpack(foreign(DlpackFlags::empty(), DLDataTypeCode::FLOAT)).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![4.0, 5.0, 2.0, 3.0, 0.0, 1.0]);
    let views = [t.t().unwrap(), t.select(0, 1).unwrap(), t.clone()];
    drop(t);
    assert_eq!(DELETED.load(Ordering::SeqCst), before, "views keep it alive");
    drop(views);
    assert_eq!(DELETED.load(Ordering::SeqCst), before + 1);
    // A failed import (complex dtype) still releases the producer's tensor, once.
    let e = Tensor::from_dlpack(foreign(DlpackFlags::empty(), DLDataTypeCode::COMPLEX)).unwrap_err();
    assert!(e.to_string().contains("dtype"), "{e}");
    assert_eq!(DELETED.load(Ordering::SeqCst), before + 2);
    // Dropping an unconsumed handle releases it too.
    drop(foreign(DlpackFlags::empty(), DLDataTypeCode::FLOAT));
    assert_eq!(DELETED.load(Ordering::SeqCst), before + 3);
}

#[test]
fn read_only_is_honoured_both_ways() {
    let t = Tensor::from_dlpack(foreign(DlpackFlags::READ_ONLY, DLDataTypeCode::FLOAT)).unwrap();
    assert!(t.storage().is_read_only());
    let other = Tensor::ones(&[3, 2], DType::F64, Device::Cpu).unwrap();
    assert!(t.fill_(1.0).is_err());
    assert!(t.copy_(&other).is_err());
    assert!(t.add_(&other).is_err());
    assert!(tensor_ops::add_out(&other, &other, &t).is_err());
    assert!(tensor_ops::sum_out(&other, &[0], false, &t.select(0, 0).unwrap()).is_err());
    assert_eq!(t.add(&other).unwrap().to_vec::<f64>().unwrap(), vec![5.0, 6.0, 3.0, 4.0, 1.0, 2.0]);
    // Re-exported, the flag stays.
    assert!(t.to_dlpack().unwrap().is_read_only());
    let ro = Storage::from_vec(vec![1.0f32, 2.0]);
    ro.set_read_only();
    assert!(Tensor::from_storage(ro, &[2]).unwrap().to_dlpack().unwrap().is_read_only());
}
