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

#[test]
fn importing_our_own_export_is_the_same_storage_for_overlap_checks() {
    // Long enough for the kernel to work in chunks (a shift by one element smears across
    // chunk borders when the overlap is not seen).
    let n = 1000;
    let vals: Vec<f32> = (0..=n).map(|i| i as f32 + 1.0).collect();
    let ten = Tensor::from_vec(vec![10.0f32], &[1]).unwrap();
    // The reference: the same overlapping op on a plain tensor (no DLPack).
    let plain = Tensor::from_vec(vals.clone(), &[n + 1]).unwrap();
    tensor_ops::mul_out(&plain.narrow(0, 0, n).unwrap(), &ten, &plain.narrow(0, 1, n).unwrap()).unwrap();
    let want = plain.to_vec::<f32>().unwrap();
    let shifted: Vec<f32> = std::iter::once(1.0).chain((0..n).map(|i| 10.0 * vals[i])).collect();
    assert_eq!(want, shifted);
    // The input is an import of the original's export: it must be seen as the same storage.
    let orig = Tensor::from_vec(vals, &[n + 1]).unwrap();
    let alias = Tensor::from_dlpack(orig.narrow(0, 0, n).unwrap().to_dlpack().unwrap()).unwrap();
    assert!(alias.shares_storage(&orig));
    assert!(alias.may_overlap(&orig.narrow(0, 1, n).unwrap()));
    tensor_ops::mul_out(&alias, &ten, &orig.narrow(0, 1, n).unwrap()).unwrap();
    let got = orig.to_vec::<f32>().unwrap();
    let diff = got.iter().zip(&want).position(|(g, w)| g != w).map(|i| (i, got[i], want[i]));
    assert_eq!(diff, None, "(index, got, want) of the first wrong element");
    // A write through the alias while a view of the original is borrowed is refused.
    let write = orig.with_ndarray_view::<f32, _>(|_| alias.fill_(0.0)).unwrap();
    assert!(matches!(write, Err(Error::Locked { .. })), "{write:?}");
    assert_eq!(orig.to_vec::<f32>().unwrap(), want);
}

#[test]
fn bool_imports_hold_only_0_and_1() {
    /// A CPU bool managed tensor over `bytes`, released by a no-op deleter (the test owns
    /// the bytes and outlives the import).
    fn bools(bytes: &mut [u8], shape: &mut [i64; 1]) -> DlpackTensor {
        unsafe extern "C" fn free(m: *mut DLManagedTensorVersioned) {
            drop(unsafe { Box::from_raw(m) });
        }
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(free),
            flags: DlpackFlags::empty(),
            dl_tensor: DLTensor {
                data: bytes.as_mut_ptr().cast(),
                device: DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
                ndim: 1,
                dtype: DLDataType { code: DLDataTypeCode::BOOL, bits: 8, lanes: 1 },
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        });
        unsafe { DlpackTensor::from_raw(NonNull::new(Box::into_raw(m)).unwrap()) }
    }
    // The bytes: refused (they read as sum 258 and eq(true) = [F, F, F, T] before).
    let (mut bad, mut shape) = ([2u8, 0, 255, 1], [4i64]);
    let e = Tensor::from_dlpack(bools(&mut bad, &mut shape)).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::DType { op: "from_dlpack", .. }), "{e:?}");
    assert!(msg.contains("[0]") && msg.contains("byte 2") && msg.contains("ne(0)"), "{msg}");
    // Valid bytes: zero-copy, and ops see exactly the bools.
    let mut good = [1u8, 0, 0, 1];
    let addr = good.as_ptr() as usize;
    let t = Tensor::from_dlpack(bools(&mut good, &mut shape)).unwrap();
    assert_eq!(t.to_dlpack().unwrap().first_element() as usize, addr);
    let sum = t.sum_all().unwrap().to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(sum, vec![2]);
    let trues = Tensor::ones(&[4], DType::Bool, Device::Cpu).unwrap();
    assert_eq!(t.eq(&trues).unwrap().to_vec::<bool>().unwrap(), vec![true, false, false, true]);
}
