//! The DLPack round trips and the hostile headers (run under Miri in CI).

use super::*;
use dlpark::ffi::{DLDataType, DLDataTypeCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn round_trips_views_and_releases_once() {
    let t = Tensor::from_vec((0..12).map(|i| i as f32).collect(), &[3, 4]).unwrap();
    let view = t.narrow(1, 1, 2).unwrap().flip(0).unwrap();
    let d = view.to_dlpack().unwrap();
    assert_eq!((d.shape(), d.strides()), (&[3i64, 2][..], &[-4i64, 1][..]));
    let back = Tensor::from_dlpack(d).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![9., 10., 5., 6., 1., 2.]);
    drop(t);
    drop(view);
    // The import's storage holds the export, which holds the original storage.
    assert_eq!(back.sum_all_naive(), 33.0);
    let raw = back.to_dlpack().unwrap().into_raw();
    // SAFETY: taken back from `into_raw`, not yet released.
    drop(unsafe { DlpackTensor::from_raw(raw) });
}

impl Tensor {
    fn sum_all_naive(&self) -> f32 {
        self.to_vec::<f32>().unwrap().iter().sum()
    }
}

/// A hand-made producer record: a managed tensor over 8-byte-aligned bytes it owns, with
/// a deleter counting its calls in `deleted`.
#[repr(C)]
struct Hostile {
    managed: DLManagedTensorVersioned,
    data: Vec<u64>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn hostile_deleter(m: *mut DLManagedTensorVersioned) {
    // SAFETY: `m` is the first field of a leaked `Box<Hostile>` (`hostile`), released once.
    let b = unsafe { Box::from_raw(m.cast::<Hostile>()) };
    b.deleted.fetch_add(1, Ordering::SeqCst);
}

/// A CPU managed tensor of `code`/`bits` over `bytes` (zero-padded to 8-byte words) with
/// `shape` and `strides` (`None`: null); `edit` then changes the header at will.
fn hostile(
    bytes: &[u8],
    code: DLDataTypeCode,
    bits: u8,
    shape: &[i64],
    strides: Option<&[i64]>,
    edit: impl FnOnce(&mut DLTensor),
) -> (DlpackTensor, Arc<AtomicUsize>) {
    let mut data = vec![0u64; bytes.len().div_ceil(8).max(1)];
    for (i, &b) in bytes.iter().enumerate() {
        data[i / 8] |= (b as u64) << (8 * (i % 8)); // little-endian byte order
    }
    let deleted = Arc::new(AtomicUsize::new(0));
    let mut b = Box::new(Hostile {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(hostile_deleter),
            flags: DlpackFlags::empty(),
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
                ndim: shape.len() as i32,
                dtype: DLDataType { code, bits, lanes: 1 },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        data,
        shape: shape.to_vec(),
        strides: strides.map(<[i64]>::to_vec).unwrap_or_default(),
        deleted: Arc::clone(&deleted),
    });
    b.managed.dl_tensor.data = b.data.as_mut_ptr().cast();
    b.managed.dl_tensor.shape = b.shape.as_mut_ptr();
    if strides.is_some() {
        b.managed.dl_tensor.strides = b.strides.as_mut_ptr();
    }
    edit(&mut b.managed.dl_tensor);
    let raw = Box::into_raw(b);
    // SAFETY: a live record whose deleter has not run, owned by nobody else; the
    // `Err` cases below are refused before any of the (hostile) memory is read.
    (unsafe { DlpackTensor::from_raw(NonNull::new(raw.cast()).unwrap()) }, deleted)
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Imports a hostile header, expecting an `Err` whose message holds every `needle`, and
/// the producer's deleter run exactly once.
fn refused(what: &str, (d, deleted): (DlpackTensor, Arc<AtomicUsize>), needles: &[&str]) -> Error {
    let e = Tensor::from_dlpack(d).expect_err(what);
    let msg = e.to_string();
    assert!(msg.starts_with("from_dlpack: "), "{what}: {msg}");
    for n in needles {
        assert!(msg.contains(n), "{what}: {msg:?} lacks {n:?}");
    }
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "{what}: the deleter runs once");
    e
}

#[test]
fn dlpack_bool_bytes_other_than_0_and_1_are_refused() {
    let bool8 = |bytes: &[u8], shape: &[i64], strides: Option<&[i64]>| {
        hostile(bytes, DLDataTypeCode::BOOL, 8, shape, strides, |_| {})
    };
    // The bytes: the first bad element is [0], byte 2.
    let e = refused("[2, 0, 255, 1]", bool8(&[2, 0, 255, 1], &[4], None), &["[0]", "byte 2", "u8", "ne(0)"]);
    assert!(matches!(e, Error::DType { op: "from_dlpack", .. }), "{e:?}");
    // Deeper, through a layout: [2, 3] row-major, element [1, 1] holds 3.
    refused("[2, 3]", bool8(&[0, 1, 1, 0, 3, 1], &[2, 3], None), &["[1, 1]", "flat index 4", "byte 3"]);
    // Transposed: logical order decides which bad element is named first.
    refused("transposed", bool8(&[0, 9, 7, 0], &[2, 2], Some(&[1, 2])), &["[0, 1]", "byte 7"]);
    // A byte between the elements (reachable by `as_strided` on the import).
    refused("gap", bool8(&[1, 7, 0], &[2], Some(&[2])), &["between", "holds 7"]);
    // Valid bytes import zero-copy, and the deleter waits for the last view.
    let (d, deleted) = bool8(&[1, 0, 0, 1, 1, 0], &[2, 3], None);
    let addr = d.first_element();
    let t = Tensor::from_dlpack(d).unwrap();
    assert_eq!(t.to_vec::<bool>().unwrap(), vec![true, false, false, true, true, false]);
    assert_eq!(t.storage().read().unwrap().as_ptr(), addr, "zero-copy");
    assert_eq!(deleted.load(Ordering::SeqCst), 0);
    drop(t);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn dlpack_import_of_our_own_export_shares_the_storage() {
    let n = 64;
    let orig = Tensor::from_vec((0..=n).map(|i| i as f32).collect(), &[n + 1]).unwrap();
    let alias = Tensor::from_dlpack(orig.narrow(0, 0, n).unwrap().to_dlpack().unwrap()).unwrap();
    assert!(alias.shares_storage(&orig));
    assert_eq!((alias.shape(), alias.strides(), alias.storage_offset()), (&[n][..], &[1][..], 0));
    // An overlapping copy through the alias is seen as one: the shift by one is exact
    // (with two storages, values written early were read again).
    orig.narrow(0, 1, n).unwrap().copy_(&alias).unwrap();
    let shifted: Vec<f32> = std::iter::once(0.0).chain((0..n).map(|i| i as f32)).collect();
    assert_eq!(orig.to_vec::<f32>().unwrap(), shifted);
    // A write through the alias while `orig`'s storage is read-locked is refused.
    let (seen, write) = orig
        .with_ndarray_view::<f32, _>(|v| {
            let write = alias.fill_(7.0);
            (v[[1]], write)
        })
        .unwrap();
    assert_eq!(seen, 0.0);
    assert!(matches!(write, Err(Error::Locked { .. })), "{write:?}");
    assert_eq!(orig.to_vec::<f32>().unwrap(), shifted);
    // A view with an offset and negative strides comes back as the same view.
    let m = Tensor::from_vec((0..12i32).collect(), &[3, 4]).unwrap();
    let v = m.narrow(1, 1, 3).unwrap().flip(0).unwrap().t().unwrap();
    let back = Tensor::from_dlpack(v.to_dlpack().unwrap()).unwrap();
    assert!(back.is_same_view(&v));
    assert_eq!(back.to_vec::<i32>().unwrap(), v.to_vec::<i32>().unwrap());
    // A read-only storage comes back read-only.
    let ro = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    ro.storage().set_read_only();
    let back = Tensor::from_dlpack(ro.to_dlpack().unwrap()).unwrap();
    assert!(back.shares_storage(&ro) && back.storage().is_read_only());
    assert!(matches!(back.fill_(0u8), Err(Error::ReadOnly { .. })));
}

#[test]
fn dlpack_own_export_with_a_changed_header_is_still_checked() {
    let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap();
    let export_use = t.storage().use_count();
    // Strides that reach past the storage: as_strided refuses it.
    let d = t.to_dlpack().unwrap();
    let raw = d.into_raw();
    // SAFETY: our own live export, not shared: its strides array holds 1 value.
    unsafe { *(*raw.as_ptr()).dl_tensor.strides = 2 };
    // SAFETY: taken back from `into_raw`, not yet released.
    let e = Tensor::from_dlpack(unsafe { DlpackTensor::from_raw(raw) }).unwrap_err();
    assert!(e.to_string().starts_with("from_dlpack: ") && e.to_string().contains("outside the storage"), "{e}");
    assert_eq!(t.storage().use_count(), export_use, "the export was released");
    // A byte offset past the storage.
    let d = t.to_dlpack().unwrap();
    let raw = d.into_raw();
    // SAFETY: as above.
    unsafe { (*raw.as_ptr()).dl_tensor.byte_offset = 8 };
    // SAFETY: as above.
    let e = Tensor::from_dlpack(unsafe { DlpackTensor::from_raw(raw) }).unwrap_err();
    assert!(e.to_string().contains("outside the storage"), "{e}");
    // Marked read-only after exporting a writable storage.
    let d = t.to_dlpack().unwrap();
    let raw = d.into_raw();
    // SAFETY: as above.
    unsafe { (*raw.as_ptr()).flags = DlpackFlags::READ_ONLY };
    // SAFETY: as above.
    let e = Tensor::from_dlpack(unsafe { DlpackTensor::from_raw(raw) }).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(!t.storage().is_read_only());
    assert_eq!(t.storage().use_count(), export_use);
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn dlpack_hostile_headers_are_errors_and_released_once() {
    let data = f64_bytes(&[0., 1., 2., 3., 4., 5.]);
    let f64h = |shape: &[i64], strides: Option<&[i64]>, edit: &dyn Fn(&mut DLTensor)| {
        hostile(&data, DLDataTypeCode::FLOAT, 64, shape, strides, edit)
    };
    let none = &|_: &mut DLTensor| {};
    refused("strides [i64::MAX; 2]", f64h(&[2, 2], Some(&[i64::MAX, i64::MAX]), none), &["isize::MAX"]);
    refused("strides [2^62, -2^62]", f64h(&[2, 2], Some(&[1 << 62, -(1 << 62)]), none), &["isize::MAX"]);
    refused("strides [2^62] x 3", f64h(&[3], Some(&[1 << 62]), none), &["isize::MAX"]);
    refused(
        "byte offset 2^63",
        f64h(&[2], None, &|t| t.byte_offset = 1 << 63),
        &["byte offset 9223372036854775808", "isize::MAX"],
    );
    let e = refused(
        "byte offset u64::MAX",
        f64h(&[2], None, &|t| t.byte_offset = u64::MAX),
        &["byte offset 18446744073709551615", "isize::MAX"],
    );
    assert!(!e.to_string().contains("multiple"), "{e}");
    // An offset that fits isize but spans more than isize::MAX bytes with the view.
    refused(
        "byte offset isize::MAX - 7",
        f64h(&[2], None, &|t| t.byte_offset = (isize::MAX as u64) - 7),
        &["isize::MAX bytes"],
    );
    refused("ndim -1", f64h(&[2], None, &|t| t.ndim = -1), &["ndim is -1"]);
    refused("null shape", f64h(&[2, 3], None, &|t| t.shape = std::ptr::null_mut()), &["ndim is 2", "null"]);
    refused("negative size", f64h(&[2, -3], None, none), &["-3"]);
    refused("below the data pointer", f64h(&[3], Some(&[-1]), none), &["below the data pointer"]);
    refused("misaligned", f64h(&[2], None, &|t| t.byte_offset = 4), &["multiple"]);
    refused(
        "address wrap",
        f64h(&[4], None, &|t| t.data = std::ptr::without_provenance_mut(usize::MAX - 15)),
        &["wraps"],
    );
    refused("null data", f64h(&[1], None, &|t| t.data = std::ptr::null_mut()), &["null"]);
    // Null strides still mean row-major, and a valid header imports without copying.
    let (d, deleted) = f64h(&[2, 3], None, none);
    let t = Tensor::from_dlpack(d).unwrap();
    assert_eq!(t.strides(), &[3, 1]);
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![0., 1., 2., 3., 4., 5.]);
    drop(t);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    // Negative strides with a byte offset: the last row first.
    let (d, deleted) = f64h(&[3, 2], Some(&[-2, 1]), &|t| t.byte_offset = 32);
    let t = Tensor::from_dlpack(d).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![4., 5., 2., 3., 0., 1.]);
    drop(t);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}
