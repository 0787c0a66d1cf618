//! DLPack (versioned, ≥ 1.0) export and import through `dlpark`'s ABI types: zero-copy both
//! ways, the producer's deleter called exactly once, the read-only flag honoured.
//!
//! Importing this library's own export gives back a view of the very storage that was
//! exported (so storage locks and overlap checks see one storage, not two aliases). Every
//! other header is checked before its memory is adopted: `ndim`, null pointers, sizes,
//! strides and byte offset with checked arithmetic, the address range (no wrap, no object
//! larger than `isize::MAX`), alignment, and for CPU `bool` tensors the bytes themselves.

use crate::iter::StridedOffsets;
use crate::{shape, DType, Deleter, Device, Error, Result, Storage, Tensor};
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

/// A DLPack header's description of a tensor, checked (everything but the memory itself).
struct Header {
    dtype: DType,
    device: Device,
    shape: Vec<usize>,
    strides: Vec<isize>,
    /// Bytes from `data` to the first element: at most `isize::MAX`, a multiple of the
    /// element size.
    byte_offset: usize,
    data: *mut u8,
}

/// Reads and checks `managed`'s header for [`Tensor::from_dlpack`] (`op`).
fn parse_header(op: &'static str, managed: &DlpackTensor) -> Result<Header> {
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
            return Err(Error::invalid(
                op,
                format!(
                    "DLPack device type {} (id {}) is not CPU (1) or CUDA (2) with an id ≥ 0",
                    other.0, t.device.device_id
                ),
            ))
        }
    };
    let (dims, given_strides) = managed.checked_dims(op)?;
    let shape: Vec<usize> = dims
        .iter()
        .map(|&s| {
            usize::try_from(s)
                .map_err(|_| Error::shape(op, format!("negative size {s} in shape {dims:?}; sizes must be ≥ 0")))
        })
        .collect::<Result<_>>()?;
    // Element count and byte size fit isize (so row-major strides do too).
    shape::checked_numel(op, &shape, dtype)?;
    let strides: Vec<isize> = match given_strides {
        None => shape::contiguous_strides(&shape),
        Some(given) => given
            .iter()
            .map(|&s| {
                isize::try_from(s).map_err(|_| {
                    Error::invalid(op, format!("stride {s} in strides {given:?} does not fit isize on this platform"))
                })
            })
            .collect::<Result<_>>()?,
    };
    let byte_offset = usize::try_from(t.byte_offset).ok().filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
        Error::out_of_bounds(
            op,
            format!(
                "byte offset {} is larger than any object can be (at most isize::MAX = {} bytes)",
                t.byte_offset,
                isize::MAX
            ),
        )
    })?;
    let size = dtype.size();
    if !byte_offset.is_multiple_of(size) {
        return Err(Error::invalid(
            op,
            format!("byte offset {byte_offset} is not a multiple of the {dtype} size {size}"),
        ));
    }
    Ok(Header { dtype, device, shape, strides, byte_offset, data: t.data.cast() })
}

/// The lowest and highest element offsets (relative to the first element) a layout reaches,
/// with checked arithmetic; `None` for an empty tensor.
fn checked_span(op: &'static str, shape: &[usize], strides: &[isize]) -> Result<Option<(isize, isize)>> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let overflow = || {
        Error::out_of_bounds(
            op,
            format!("strides {strides:?} over shape {shape:?} reach further than isize::MAX elements"),
        )
    };
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&n, &s) in shape.iter().zip(strides) {
        // n ≤ isize::MAX (checked_numel), so n - 1 fits.
        let reach = (n as isize - 1).checked_mul(s).ok_or_else(overflow)?;
        if reach < 0 {
            lo = lo.checked_add(reach).ok_or_else(overflow)?;
        } else {
            hi = hi.checked_add(reach).ok_or_else(overflow)?;
        }
    }
    // The element count of the span must be countable too.
    hi.checked_sub(lo).and_then(|d| d.checked_add(1)).ok_or_else(overflow)?;
    Ok(Some((lo, hi)))
}

/// The row-major index of flat position `k` in `shape`.
fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in index.iter_mut().zip(shape).rev() {
        *i = k % n;
        k /= n;
    }
    index
}

/// Refuses a CPU `bool` import whose bytes are not all 0/1: `base` is the lowest reachable
/// byte, `bytes` the span's length, `first` the first element's offset from `base`.
fn check_bool_bytes(op: &'static str, base: *const u8, bytes: usize, h: &Header, first: usize) -> Result<()> {
    // SAFETY: `from_raw`'s contract: every byte from the lowest to the highest element
    // (`base..base + bytes`, computed with checked arithmetic) is readable and initialized;
    // they are read as `u8`, valid for any value.
    let span = unsafe { std::slice::from_raw_parts(base, bytes) };
    let Some(bad) = span.iter().position(|&b| b > 1) else {
        return Ok(());
    };
    let hint = "bool bytes must be 0 or 1 (other values are not a valid bool); import the data as u8 \
                (DLPack kDLUInt, 8 bits) and compare it with `ne(0)` to get a bool tensor";
    // The first invalid element in logical order, if the bad byte is an element at all.
    for (k, off) in StridedOffsets::new(&h.shape, &h.strides).enumerate() {
        // Inside the span by construction (`first + off` lies in `0..bytes`).
        let b = span[(first as isize + off) as usize];
        if b > 1 {
            return Err(Error::DType {
                op,
                msg: format!(
                    "bool element {:?} (flat index {k}) of shape {:?} holds the byte {b}; {hint}",
                    unravel(k, &h.shape),
                    h.shape
                ),
            });
        }
    }
    Err(Error::DType {
        op,
        msg: format!(
            "the bool view's elements are 0/1, but byte {bad} of the {bytes} bytes it spans (between its \
             elements, which `as_strided` on the import could reach) holds {}; {hint}",
            span[bad]
        ),
    })
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
    /// let t = tensor_core::Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    /// let back = tensor_core::Tensor::from_dlpack(t.to_dlpack().unwrap()).unwrap();
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
mod tests {
    use super::*;
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
        // The issue's bytes: the first bad element is [0], byte 2.
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
}
