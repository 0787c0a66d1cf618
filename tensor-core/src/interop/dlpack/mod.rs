//! DLPack (versioned, ≥ 1.0) export and import through `dlpark`'s ABI types: zero-copy both
//! ways, the producer's deleter called exactly once, the read-only flag honoured.
//!
//! Importing this library's own export gives back a view of the very storage that was
//! exported (so storage locks and overlap checks see one storage, not two aliases). Every
//! other header is checked before its memory is adopted: `ndim`, null pointers, sizes,
//! strides and byte offset with checked arithmetic, the address range (no wrap, no object
//! larger than `isize::MAX`), alignment, and for CPU `bool` tensors the bytes themselves.

mod header;

use crate::{DType, Deleter, Device, Error, Result, Storage, Tensor};
use dlpark::ffi::{DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use dlpark::DlpackFlags;
use header::{check_bool_bytes, checked_span, dl_dtype, parse_header, Header};
use std::ptr::NonNull;

/// An owned DLPack managed tensor (`DLManagedTensorVersioned`): dropping it calls its deleter
/// once; [`DlpackTensor::into_raw`] hands it (and the duty to call the deleter) to a consumer.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{DlpackTensor, Tensor};
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
    /// called, owned by no one else; its data stays valid until the deleter runs. When
    /// `ndim > 0`, a non-null `shape` (and a non-null `strides`) points at `ndim` values.
    /// Every byte from the lowest to the highest element the header describes is readable
    /// and initialized (for CUDA, on the device). A `manager_ctx` copied from one of this
    /// library's exports ([`Tensor::to_dlpack`]) is only ever on that export (it marks it).
    ///
    /// `bool` data (DLPack `kDLBool`, 8 bits) must hold only the bytes 0 and 1, and the
    /// producer must not write any other value there while the tensor (or any view of it)
    /// is shared with this library. [`Tensor::from_dlpack`] checks every byte of a CPU
    /// `bool` tensor and refuses other values; CUDA bytes cannot be checked from the host
    /// (reads into `bool`, such as `to_vec`, normalise them with `!= 0`).
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

    /// The header's shape and strides (`None`: null, i.e. row-major), refusing a negative
    /// `ndim` and a null `shape` with `ndim > 0`.
    fn checked_dims(&self, op: &'static str) -> Result<(&[i64], Option<&[i64]>)> {
        let t = &self.managed().dl_tensor;
        let ndim = usize::try_from(t.ndim)
            .map_err(|_| Error::invalid(op, format!("ndim is {}; a DLPack tensor has 0 or more dims", t.ndim)))?;
        if ndim == 0 {
            return Ok((&[], None));
        }
        if t.shape.is_null() {
            return Err(Error::invalid(
                op,
                format!("ndim is {ndim} but the shape pointer is null; a tensor with dims must give its shape"),
            ));
        }
        // SAFETY: DLPack (and `from_raw`'s contract): a non-null `shape`, and a non-null
        // `strides`, hold `ndim` values, valid as long as the managed tensor.
        let shape = unsafe { std::slice::from_raw_parts(t.shape, ndim) };
        // SAFETY: as above.
        let strides = (!t.strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(t.strides, ndim) });
        Ok((shape, strides))
    }

    /// The shape (empty for a 0-dim tensor, and for an invalid header: a negative `ndim`,
    /// or a null shape pointer, which [`Tensor::from_dlpack`] refuses).
    pub fn shape(&self) -> &[i64] {
        self.checked_dims("DlpackTensor::shape").map(|(s, _)| s).unwrap_or(&[])
    }

    /// The strides in elements (empty when the producer gave none: row-major; and for an
    /// invalid header, as [`DlpackTensor::shape`]).
    pub fn strides(&self) -> &[i64] {
        self.checked_dims("DlpackTensor::strides").ok().and_then(|(_, s)| s).unwrap_or(&[])
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

    /// The export record when this managed tensor is one [`Tensor::to_dlpack`] made: its
    /// `manager_ctx` is [`EXPORT_TAG`]'s address. (Not the deleter's address: function
    /// pointer comparisons are unreliable — codegen may merge or duplicate functions, and
    /// Miri gives each use of a function pointer its own address.)
    fn own_export(&self) -> Option<&Export> {
        let is_ours = std::ptr::eq(self.managed().manager_ctx.cast_const().cast::<u8>(), &EXPORT_TAG);
        // SAFETY: only `to_dlpack` sets `manager_ctx` to the private `EXPORT_TAG`, on a
        // leaked `Box<Export>` whose first field is this managed tensor (`from_raw`'s
        // contract excludes forgeries); the box lives until the deleter runs, which needs
        // `self`.
        is_ours.then(|| unsafe { &*self.ptr.as_ptr().cast::<Export>() })
    }
}

/// The `manager_ctx` of every export this library makes: its address marks a managed
/// tensor as a `Box<Export>` (a static's address is unique and stable).
static EXPORT_TAG: u8 = 0;

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
/// pointer to it is a pointer to the whole context; its `manager_ctx` is [`EXPORT_TAG`].
#[repr(C)]
struct Export {
    managed: DLManagedTensorVersioned,
    /// The exported view; its storage is what an import of this export shares.
    view: Tensor,
    /// The storage's base address the header's `data` was set to (a storage's buffer never
    /// moves once allocated).
    base: usize,
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

impl Tensor {
    /// Exports this view as a DLPack managed tensor without copying: its data pointer, shape,
    /// strides and byte offset are the view's, its device CPU or CUDA, and it keeps the
    /// storage alive until the consumer calls the deleter. A read-only storage is exported
    /// with `DLPACK_FLAG_BITMASK_READ_ONLY`. The consumer reads (and writes) the memory
    /// without this library's storage locks: don't write through other views meanwhile.
    /// [`Tensor::from_dlpack`] of the export gives back a view of this same storage.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    /// let d = t.flip(0).unwrap().to_dlpack().unwrap();
    /// assert_eq!(d.strides(), &[-1]);
    /// ```
    pub fn to_dlpack(&self) -> Result<DlpackTensor> {
        let op = "to_dlpack";
        if self.dtype().is_quantized() {
            return Err(Error::DType {
                op,
                msg: format!(
                    "DLPack has no quantized dtype, so a {} tensor cannot be exported without losing its quantizer; export int_repr() (and pass q_scale()/q_zero_point() alongside) or dequantize() first",
                    self.dtype()
                ),
            });
        }
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
                manager_ctx: std::ptr::from_ref(&EXPORT_TAG).cast_mut().cast(),
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
            view: self.clone(),
            base: base as usize,
            shape,
            strides,
        });
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is the live box just leaked; the boxed slices do not move when the
        // box's pointer is taken, so their addresses stay valid until the deleter frees it
        // (mutable pointers: DLPack's `int64_t*` fields, which a consumer may write).
        unsafe {
            (*raw).managed.dl_tensor.shape = (*raw).shape.as_mut_ptr();
            (*raw).managed.dl_tensor.strides = (*raw).strides.as_mut_ptr();
        }
        // SAFETY: `raw` is non-null (from a Box) and `managed` is its first field.
        Ok(DlpackTensor { ptr: unsafe { NonNull::new_unchecked(raw.cast()) } })
    }

    /// Imports a DLPack managed tensor without copying: the tensor is a view of the
    /// producer's memory (shape, strides and byte offset kept; CPU or CUDA), and its storage
    /// calls the producer's deleter exactly once, when the last view drops (at once if the
    /// import fails). A read-only DLPack tensor gives a read-only storage: every write is an
    /// `Err`. Unsupported dtypes (vector lanes, float8, complex), devices, versions or
    /// misaligned data are errors, and so is every inconsistent header: a negative `ndim`,
    /// a null shape with `ndim > 0`, negative sizes, or sizes, strides and byte offset whose
    /// reach overflows, goes below the data pointer, wraps the address space or exceeds
    /// `isize::MAX` bytes. Null strides mean row-major.
    ///
    /// This library's own export ([`Tensor::to_dlpack`]) comes back as a view of the same
    /// storage, so it shares storage locks and overlap checks with the exported tensor (its
    /// header's shape, strides and offset are still bounds-checked against that storage; a
    /// header marked read-only after the export of a writable storage is an `Err`).
    ///
    /// `bool` bytes must be 0 or 1: a CPU `bool` tensor whose spanned bytes hold any other
    /// value is refused (an [`Error::DType`] naming the byte and the element; import such
    /// data as `u8` and compare with `ne(0)`). A CUDA `bool` tensor cannot be checked from the
    /// host: reads into `bool` (`to_vec`) normalise its bytes with `!= 0`, but device kernels
    /// see the bytes as given, so the producer must supply 0/1. The producer must not write
    /// other values while the tensor is shared (see [`DlpackTensor::from_raw`]).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    /// let back = tensor_ops::Tensor::from_dlpack(t.to_dlpack().unwrap()).unwrap();
    /// assert_eq!(back.to_vec::<u8>().unwrap(), vec![1, 2, 3, 4]);
    /// assert!(back.shares_storage(&t));
    /// ```
    pub fn from_dlpack(managed: DlpackTensor) -> Result<Tensor> {
        let op = "from_dlpack";
        // On any `Err` below, `managed` is dropped: the producer's deleter runs once.
        let h = parse_header(op, &managed)?;
        if let Some(export) = managed.own_export() {
            let view = import_own_export(op, &managed, export, &h)?;
            // Runs `delete_export`: drops the export's view, not the storage `view` holds.
            drop(managed);
            return Ok(view);
        }
        let size = h.dtype.size();
        let first = (h.byte_offset / size) as isize; // byte_offset ≤ isize::MAX
        let (base, bytes, view_offset) = match checked_span(op, &h.shape, &h.strides)? {
            None => (h.data, 0, 0),
            Some((lo, hi)) => {
                let below = || {
                    Error::out_of_bounds(
                        op,
                        format!(
                            "strides {:?} over shape {:?} reach {} elements before the first one, which is element {first} from the data pointer (byte offset {}): the view reaches below the data pointer",
                            h.strides,
                            h.shape,
                            lo.unsigned_abs(),
                            h.byte_offset
                        ),
                    )
                };
                let start = first.checked_add(lo).filter(|&s| s >= 0).ok_or_else(below)? as usize;
                // `checked_span` made `hi - lo + 1` fit isize.
                let count = (hi - lo + 1) as usize;
                let too_big = || {
                    Error::out_of_bounds(
                        op,
                        format!(
                            "shape {:?}, strides {:?} and byte offset {} of {} span more than isize::MAX bytes from the data pointer",
                            h.shape, h.strides, h.byte_offset, h.dtype
                        ),
                    )
                };
                let bytes = count.checked_mul(size).ok_or_else(too_big)?;
                let start_bytes = start.checked_mul(size).ok_or_else(too_big)?;
                start_bytes.checked_add(bytes).filter(|&e| e <= isize::MAX as usize).ok_or_else(too_big)?;
                if h.data.is_null() {
                    return Err(Error::invalid(
                        op,
                        format!("the data pointer is null for a non-empty {:?} tensor", h.shape),
                    ));
                }
                let end = (h.data as usize).checked_add(start_bytes).and_then(|a| a.checked_add(bytes));
                if end.is_none() {
                    return Err(Error::out_of_bounds(
                        op,
                        format!(
                            "data pointer {:p} + {start_bytes} + {bytes} bytes wraps around the address space",
                            h.data
                        ),
                    ));
                }
                let base = h.data.wrapping_add(start_bytes);
                if !(base as usize).is_multiple_of(size) {
                    return Err(Error::invalid(
                        op,
                        format!(
                            "data pointer {:p} + byte offset is not aligned for {} ({size} bytes)",
                            h.data, h.dtype
                        ),
                    ));
                }
                (base, bytes, lo.unsigned_abs())
            }
        };
        if h.dtype == DType::Bool && h.device == Device::Cpu && bytes > 0 {
            check_bool_bytes(op, base, bytes, &h, view_offset)?;
        }
        let read_only = managed.is_read_only();
        let owner = SendPtr(managed.into_raw());
        let deleter: Deleter = Box::new(move |_, _| {
            let owner = owner;
            // SAFETY: we own the managed tensor (taken from the DlpackTensor); its deleter
            // runs exactly once, here, when the storage is dropped.
            drop(unsafe { DlpackTensor::from_raw(owner.0) });
        });
        let ptr = NonNull::new(base).unwrap_or(NonNull::dangling());
        // SAFETY: the producer guarantees the `bytes` bytes from `base` (the lowest reachable
        // element; range checked not to wrap nor exceed isize::MAX) are valid and
        // initialized until its deleter runs, which the storage's deleter calls; alignment
        // was checked; CPU bool bytes were checked to be 0/1 (CUDA bytes are never read as a
        // Rust bool on the host: reads normalise them); a read-only tensor is marked
        // read-only before any view.
        let storage = unsafe { Storage::from_external(ptr, bytes, h.dtype, h.device, deleter) };
        if read_only {
            storage.set_read_only();
        }
        let whole = Tensor::from_storage(storage, &[bytes / size])?;
        whole.as_strided(&h.shape, &h.strides, view_offset).map_err(|e| e.renamed(op))
    }
}

/// The view `h` describes over the storage of `export` (this library's own export, held by
/// `managed`), bounds-checked by `as_strided`.
fn import_own_export(op: &'static str, managed: &DlpackTensor, export: &Export, h: &Header) -> Result<Tensor> {
    let storage = export.view.storage();
    if h.dtype != storage.dtype() {
        return Err(Error::DType {
            op,
            msg: format!(
                "this library's export of a {} storage has its header changed to {}; import it with its own dtype",
                storage.dtype(),
                h.dtype
            ),
        });
    }
    if h.device != storage.device() {
        return Err(Error::invalid(
            op,
            format!(
                "this library's export of a storage on {} has its header changed to device {}",
                storage.device(),
                h.device
            ),
        ));
    }
    if managed.is_read_only() && !storage.is_read_only() {
        return Err(Error::invalid(
            op,
            "this library's export of a writable storage was marked read-only after the export; \
             the import would be a view of that same writable storage, so import it unmarked, or copy it",
        ));
    }
    let size = h.dtype.size();
    let position = (h.data as usize).checked_add(h.byte_offset).and_then(|a| a.checked_sub(export.base));
    let offset = match position {
        Some(p) if p.is_multiple_of(size) => p / size,
        _ => {
            return Err(Error::out_of_bounds(
                op,
                format!(
                    "data pointer {:p} + byte offset {} is not an element of the exported storage at {:#x} ({} bytes)",
                    h.data,
                    h.byte_offset,
                    export.base,
                    storage.capacity_bytes()
                ),
            ))
        }
    };
    export.view.as_strided(&h.shape, &h.strides, offset).map_err(|e| e.renamed(op))
}

/// The managed tensor pointer moved into the storage's deleter.
struct SendPtr(NonNull<DLManagedTensorVersioned>);
// SAFETY: DLPack deleters may run on any thread; the pointer is owned by the deleter alone.
unsafe impl Send for SendPtr {}
// SAFETY: only moved, never shared.
unsafe impl Sync for SendPtr {}

#[cfg(test)]
mod tests;
