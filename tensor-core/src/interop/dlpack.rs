//! DLPack (versioned, ≥ 1.0) export and import through `dlpark`'s ABI types: zero-copy both
//! ways, the producer's deleter called exactly once, the read-only flag honoured.

use crate::{DType, Deleter, Device, Error, Result, Storage, Tensor};
use dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
use dlpark::DlpackFlags;
use std::ptr::NonNull;

/// An owned DLPack managed tensor (`DLManagedTensorVersioned`): dropping it calls its deleter
/// once; [`DlpackTensor::into_raw`] hands it (and the duty to call the deleter) to a consumer.
///
/// ```
/// use tensor_core::{DlpackTensor, Tensor};
/// let t = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
/// let exported: DlpackTensor = t.t().unwrap().to_dlpack().unwrap();
/// assert_eq!((exported.shape(), exported.strides()), (&[3i64, 2][..], &[1i64, 3][..]));
/// let back = Tensor::from_dlpack(exported).unwrap();
/// assert_eq!(back.to_vec::<f32>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);
/// ```
pub struct DlpackTensor {
    ptr: NonNull<DLManagedTensorVersioned>,
}

// SAFETY: a managed tensor is a plain heap record whose deleter may be called from any
// thread (DLPack requires deleters to be thread-safe); this handle owns it uniquely.
unsafe impl Send for DlpackTensor {}

impl DlpackTensor {
    /// Takes ownership of a managed tensor from a producer.
    ///
    /// # Safety
    /// `ptr` is a valid `DLManagedTensorVersioned` whose deleter (if any) has not been
    /// called, owned by no one else; its data stays valid until the deleter runs.
    pub unsafe fn from_raw(ptr: NonNull<DLManagedTensorVersioned>) -> DlpackTensor {
        DlpackTensor { ptr }
    }

    /// Gives the managed tensor away (the receiver must call its deleter once).
    pub fn into_raw(self) -> NonNull<DLManagedTensorVersioned> {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }

    fn managed(&self) -> &DLManagedTensorVersioned {
        // SAFETY: valid until the deleter runs, which only `Drop` or the receiver of
        // `into_raw` does.
        unsafe { self.ptr.as_ref() }
    }

    fn dims(&self, strides: bool) -> &[i64] {
        let t = &self.managed().dl_tensor;
        let p = if strides { t.strides } else { t.shape };
        if p.is_null() || t.ndim <= 0 {
            return &[];
        }
        // SAFETY: DLPack: `shape` (and non-null `strides`) hold `ndim` values, valid as long
        // as the managed tensor.
        unsafe { std::slice::from_raw_parts(p, t.ndim as usize) }
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        self.dims(false)
    }

    /// The strides in elements (empty when the producer gave none: row-major).
    pub fn strides(&self) -> &[i64] {
        self.dims(true)
    }

    /// The address of the first element (the data pointer plus the byte offset; a device
    /// address for CUDA tensors).
    pub fn first_element(&self) -> *const u8 {
        let t = &self.managed().dl_tensor;
        (t.data as *const u8).wrapping_add(t.byte_offset as usize)
    }

    /// True when the producer forbids writes (`DLPACK_FLAG_BITMASK_READ_ONLY`).
    pub fn is_read_only(&self) -> bool {
        self.managed().flags.contains(DlpackFlags::READ_ONLY)
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        if let Some(deleter) = self.managed().deleter {
            // SAFETY: the deleter of a tensor we own, called once.
            unsafe { deleter(self.ptr.as_ptr()) };
        }
    }
}

/// What an exported tensor keeps alive: the view (so its storage) and the shape/strides
/// arrays the DLTensor points at. `managed` is the first field of a `repr(C)` struct, so a
/// pointer to it is a pointer to the whole context.
#[repr(C)]
struct Export {
    managed: DLManagedTensorVersioned,
    _view: Tensor,
    shape: Box<[i64]>,
    strides: Box<[i64]>,
}

unsafe extern "C" fn delete_export(managed: *mut DLManagedTensorVersioned) {
    if !managed.is_null() {
        // SAFETY: `managed` came from `Box::into_raw(Box<Export>)` in `to_dlpack` (it is the
        // first field of the repr(C) `Export`), and DLPack calls the deleter once.
        drop(unsafe { Box::from_raw(managed.cast::<Export>()) });
    }
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (DLDataTypeCode::BOOL, 8),
        DType::U8 => (DLDataTypeCode::UINT, 8),
        DType::I8 => (DLDataTypeCode::INT, 8),
        DType::I16 => (DLDataTypeCode::INT, 16),
        DType::I32 => (DLDataTypeCode::INT, 32),
        DType::I64 => (DLDataTypeCode::INT, 64),
        DType::F16 => (DLDataTypeCode::FLOAT, 16),
        DType::BF16 => (DLDataTypeCode::BFLOAT, 16),
        DType::F32 => (DLDataTypeCode::FLOAT, 32),
        DType::F64 => (DLDataTypeCode::FLOAT, 64),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_of(t: &DLDataType) -> Result<DType> {
    let d = match (t.code, t.bits) {
        (DLDataTypeCode::BOOL, 8) => DType::Bool,
        (DLDataTypeCode::UINT, 8) => DType::U8,
        (DLDataTypeCode::INT, 8) => DType::I8,
        (DLDataTypeCode::INT, 16) => DType::I16,
        (DLDataTypeCode::INT, 32) => DType::I32,
        (DLDataTypeCode::INT, 64) => DType::I64,
        (DLDataTypeCode::FLOAT, 16) => DType::F16,
        (DLDataTypeCode::BFLOAT, 16) => DType::BF16,
        (DLDataTypeCode::FLOAT, 32) => DType::F32,
        (DLDataTypeCode::FLOAT, 64) => DType::F64,
        _ => {
            return Err(Error::DType {
                op: "from_dlpack",
                msg: format!(
                    "DLPack dtype (code {}, {} bits) has no tensor-ops dtype (bool, u8, i8..i64, f16, bf16, f32, f64)",
                    t.code.0, t.bits
                ),
            })
        }
    };
    if t.lanes != 1 {
        return Err(Error::DType {
            op: "from_dlpack",
            msg: format!("DLPack vector dtypes ({} lanes) are not supported", t.lanes),
        });
    }
    Ok(d)
}

impl Tensor {
    /// Exports this view as a DLPack managed tensor without copying: its data pointer, shape,
    /// strides and byte offset are the view's, its device CPU or CUDA, and it keeps the
    /// storage alive until the consumer calls the deleter. A read-only storage is exported
    /// with `DLPACK_FLAG_BITMASK_READ_ONLY`. The consumer reads (and writes) the memory
    /// without this library's storage locks: don't write through other views meanwhile.
    ///
    /// ```
    /// let t = tensor_core::Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    /// let d = t.flip(0).unwrap().to_dlpack().unwrap();
    /// assert_eq!(d.strides(), &[-1]);
    /// ```
    pub fn to_dlpack(&self) -> Result<DlpackTensor> {
        let op = "to_dlpack";
        let storage = self.storage();
        storage.ensure_allocated()?;
        let base = storage.read_for(op)?.as_ptr() as *mut u8;
        let device = match self.device() {
            Device::Cpu => DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
            Device::Cuda(i) => DLDevice { device_type: DLDeviceType::CUDA, device_id: i as i32 },
        };
        let shape: Box<[i64]> = self.shape().iter().map(|&s| s as i64).collect();
        let strides: Box<[i64]> = self.strides().iter().map(|&s| s as i64).collect();
        let flags = if storage.is_read_only() { DlpackFlags::READ_ONLY } else { DlpackFlags::empty() };
        let export = Box::new(Export {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_export),
                flags,
                dl_tensor: DLTensor {
                    data: base.cast(),
                    device,
                    ndim: shape.len() as i32,
                    dtype: dl_dtype(self.dtype()),
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: (self.storage_offset() * self.elem_size()) as u64,
                },
            },
            _view: self.clone(),
            shape,
            strides,
        });
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is the live box just leaked; the boxed slices do not move when the
        // box's pointer is taken, so their addresses stay valid until the deleter frees it.
        unsafe {
            (*raw).managed.dl_tensor.shape = (*raw).shape.as_ptr().cast_mut();
            (*raw).managed.dl_tensor.strides = (*raw).strides.as_ptr().cast_mut();
            (*raw).managed.manager_ctx = raw.cast();
        }
        // SAFETY: `raw` is non-null (from a Box) and `managed` is its first field.
        Ok(DlpackTensor { ptr: unsafe { NonNull::new_unchecked(raw.cast()) } })
    }

    /// Imports a DLPack managed tensor without copying: the tensor is a view of the
    /// producer's memory (shape, strides and byte offset kept; CPU or CUDA), and its storage
    /// calls the producer's deleter exactly once, when the last view drops (at once if the
    /// import fails). A read-only DLPack tensor gives a read-only storage: every write is an
    /// `Err`. Unsupported dtypes (vector lanes, float8, complex), devices, versions or
    /// misaligned data are errors.
    ///
    /// ```
    /// let t = tensor_core::Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    /// let back = tensor_core::Tensor::from_dlpack(t.to_dlpack().unwrap()).unwrap();
    /// assert_eq!(back.to_vec::<u8>().unwrap(), vec![1, 2, 3, 4]);
    /// ```
    pub fn from_dlpack(managed: DlpackTensor) -> Result<Tensor> {
        let op = "from_dlpack";
        let m = managed.managed();
        if m.version.major != 1 {
            return Err(Error::invalid(
                op,
                format!("DLPack version {}.{}; this library reads 1.x", m.version.major, m.version.minor),
            ));
        }
        let t = &m.dl_tensor;
        let dtype = dtype_of(&t.dtype)?;
        let device = match t.device.device_type {
            DLDeviceType::CPU => Device::Cpu,
            DLDeviceType::CUDA if t.device.device_id >= 0 => Device::Cuda(t.device.device_id as u32),
            other => {
                return Err(Error::invalid(op, format!("DLPack device type {} is not CPU (1) or CUDA (2)", other.0)))
            }
        };
        let shape: Vec<usize> = managed
            .shape()
            .iter()
            .map(|&s| {
                usize::try_from(s)
                    .map_err(|_| Error::invalid(op, format!("negative size {s} in shape {:?}", managed.shape())))
            })
            .collect::<Result<_>>()?;
        let strides: Vec<isize> = if managed.strides().is_empty() {
            crate::shape::contiguous_strides(&shape)
        } else {
            managed.strides().iter().map(|&s| s as isize).collect()
        };
        let size = dtype.size();
        if !t.byte_offset.is_multiple_of(size as u64) {
            return Err(Error::invalid(
                op,
                format!("byte offset {} is not a multiple of the {dtype} size {size}", t.byte_offset),
            ));
        }
        // The reachable span, in elements from the data pointer + byte offset.
        let (mut lo, mut hi) = (0isize, 0isize);
        let empty = shape.contains(&0);
        if !empty {
            for (&n, &s) in shape.iter().zip(&strides) {
                let reach = (n as isize - 1).checked_mul(s).ok_or_else(|| Error::invalid(op, "strides overflow"))?;
                if reach < 0 {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
        }
        let first = (t.byte_offset / size as u64) as isize;
        let start_elem = first + lo;
        if start_elem < 0 {
            return Err(Error::invalid(op, "the view reaches below the data pointer"));
        }
        let base = (t.data as *mut u8).wrapping_add(start_elem as usize * size);
        if !empty && (t.data.is_null() || !(base as usize).is_multiple_of(size)) {
            return Err(Error::invalid(op, format!("data pointer {:p} is null or not aligned for {dtype}", t.data)));
        }
        let bytes = if empty { 0 } else { (hi - lo + 1) as usize * size };
        let read_only = managed.is_read_only();
        let owner = SendPtr(managed.into_raw());
        let deleter: Deleter = Box::new(move |_, _| {
            let owner = owner;
            // SAFETY: we own the managed tensor (taken from the DlpackTensor); its deleter
            // runs exactly once, here, when the storage is dropped.
            drop(unsafe { DlpackTensor::from_raw(owner.0) });
        });
        let ptr = NonNull::new(base).unwrap_or(NonNull::dangling());
        // SAFETY: the producer guarantees `bytes` bytes from `base` (the lowest reachable
        // element) stay valid until its deleter runs, which the storage's deleter calls;
        // alignment was checked; a read-only tensor is marked read-only before any view.
        let storage = unsafe { Storage::from_external(ptr, bytes, dtype, device, deleter) };
        if read_only {
            storage.set_read_only();
        }
        let whole = Tensor::from_storage(storage, &[bytes / size])?;
        whole.as_strided(&shape, &strides, (-lo) as usize)
    }
}

/// The managed tensor pointer moved into the storage's deleter.
struct SendPtr(NonNull<DLManagedTensorVersioned>);
// SAFETY: DLPack deleters may run on any thread; the pointer is owned by the deleter alone.
unsafe impl Send for SendPtr {}
// SAFETY: only moved, never shared.
unsafe impl Sync for SendPtr {}

#[cfg(test)]
mod tests {
    use super::*;

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
}
