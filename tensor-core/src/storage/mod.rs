//! Refcounted storage shared by tensor views.
//!
//! # Concurrency scheme
//! Every storage owns one `RwLock` around its buffer. Kernels read inputs under a shared
//! lock and write outputs under an exclusive one; [`lock_many`] takes the locks of all
//! operands of a call in a global order (by storage address) and merges duplicates (an
//! operand that is both read and written is locked once, exclusively), so two threads
//! running `a.add_(&b)` and `b.add_(&a)` can neither race nor deadlock. Safe code can only
//! reach the bytes through these guards, so there is no data race whatever views exist on
//! whatever threads. Writes through one view are visible through every view of the same
//! storage because they all address the same buffer.
//!
//!
//! Taking a lock the calling thread already holds (a guard kept alive across an op on a
//! view of the same storage) is an [`Error::Locked`], never a hang.
//!
//! # Lazy allocation
//! A storage made by [`Storage::new_lazy`] (what `resize_` produces) or
//! [`Storage::new_lazy_uninit`] (what `Tensor::empty` and new op outputs use) has a capacity
//! but no buffer. The buffer is allocated the first time it is locked, for reading or for
//! writing — i.e. at the first kernel, `to_vec`, `fill_`/`copy_` or any op touching it.
//! Allocation failure then is an `Err`. A `new_lazy` buffer is zero-filled (on every
//! device); a `new_lazy_uninit` buffer holds unspecified but initialized bytes (zeros, or
//! a recycled block's), except that `Bool` storage always starts zeroed.
//!
//! # Bool bytes
//! A `Bool` element is one byte that must be 0 or 1 for Rust's `bool`. CPU `Bool` storage
//! is zeroed when allocated, [`Storage::from_data_ptr`] normalises a block's bytes to 0/1,
//! kernels write only 0/1, and reads into `bool` values (`to_vec`, `item`) test `!= 0`
//! anyway: safe code cannot produce an invalid `bool`.

mod alloc;
mod held;
mod lock_set;

pub use alloc::{allocator_for, set_allocator, Allocator, AllocatorFactory, CpuAllocator, DataPtr, Deleter, CPU_ALIGN};
pub use lock_set::{lock_many, lock_many_for, Access, LockSet};

use crate::{DType, Device, Element, Error, Result};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// Refcounted bytes on one device, shared by every view made from it.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{Storage, DType, Device};
/// let s = Storage::new_lazy(DType::F32, 16, Device::Cpu).unwrap();
/// assert!(!s.is_allocated());
/// assert_eq!(s.capacity_bytes(), 64);
/// let s2 = s.clone();
/// assert_eq!(s.use_count(), 2);
/// drop(s2);
/// assert!(s.is_unique());
/// ```
#[derive(Clone)]
pub struct Storage {
    inner: Arc<StorageInner>,
}

struct StorageInner {
    device: Device,
    dtype: DType,
    capacity: usize,
    /// Whether a lazily allocated buffer must be zero-filled.
    zeroed: bool,
    /// Set once (never cleared): every write access is refused.
    read_only: AtomicBool,
    /// The stand-in storage of a tensor of this non-strided layout: it holds no data and
    /// every access (allocation, lock) is an `Error::Layout`.
    no_data: Option<crate::Layout>,
    /// Set (Release) once `buffer` holds memory; read without the lock.
    allocated: AtomicBool,
    buffer: RwLock<Option<DataPtr>>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("device", &self.inner.device)
            .field("dtype", &self.inner.dtype)
            .field("capacity_bytes", &self.inner.capacity)
            .field("allocated", &self.is_allocated())
            .field("use_count", &self.use_count())
            .finish()
    }
}

impl Storage {
    /// A storage for `numel` elements whose buffer is allocated, zero-filled, at first access.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::{Storage, DType, Device, Tensor};
    /// let s = Storage::new_lazy(DType::I32, 3, Device::Cpu).unwrap();
    /// assert!(!s.is_allocated());
    /// let t = Tensor::from_storage(s, &[3]).unwrap();
    /// assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 0, 0]);
    /// ```
    pub fn new_lazy(dtype: DType, numel: usize, device: Device) -> Result<Storage> {
        Ok(Self::from_parts(device, dtype, Self::capacity_for(dtype, numel)?, None, true))
    }

    /// A storage for `numel` elements whose buffer is allocated at first access with
    /// unspecified contents: initialized bytes (zeros, or what a recycled block held), never
    /// undefined memory; `Bool` storage is zeroed all the same. For outputs that a kernel
    /// overwrites, where zeroing would cost a pass over memory.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::{Storage, DType, Device};
    /// let s = Storage::new_lazy_uninit(DType::F32, 1 << 20, Device::Cpu).unwrap();
    /// assert!(!s.is_allocated());
    /// ```
    pub fn new_lazy_uninit(dtype: DType, numel: usize, device: Device) -> Result<Storage> {
        Ok(Self::from_parts(device, dtype, Self::capacity_for(dtype, numel)?, None, false))
    }

    fn capacity_for(dtype: DType, numel: usize) -> Result<usize> {
        numel.checked_mul(dtype.size()).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| Error::Overflow {
            op: "Storage::new",
            shape: vec![numel],
            dtype,
        })
    }

    /// A storage allocated now (errors now rather than at first use).
    pub fn new_allocated(dtype: DType, numel: usize, device: Device) -> Result<Storage> {
        let s = Self::new_lazy(dtype, numel, device)?;
        s.ensure_allocated()?;
        Ok(s)
    }

    /// Adopts a vector without copying; the vector is freed when the last view goes.
    pub fn from_vec<T: Element>(v: Vec<T>) -> Storage {
        let mut v = std::mem::ManuallyDrop::new(v);
        let (ptr, len, cap) = (v.as_mut_ptr(), v.len(), v.capacity());
        let bytes = len * std::mem::size_of::<T>();
        let deleter: Deleter = Box::new(move |p, _| {
            // SAFETY: p, len and cap are exactly those of the vector taken apart above,
            // rebuilt once to free it.
            drop(unsafe { Vec::from_raw_parts(p.as_ptr() as *mut T, len, cap) });
        });
        let nn = NonNull::new(ptr as *mut u8).unwrap_or(NonNull::dangling());
        // SAFETY: the vector's buffer is valid, initialized, owned only by this DataPtr.
        let data = unsafe { DataPtr::new(nn, bytes, Device::Cpu, deleter) };
        Self::from_parts(Device::Cpu, T::DTYPE, bytes, Some(data), false)
    }

    /// Adopts external memory, freed by `deleter` when the last view is dropped.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `bytes` bytes on `device` until `deleter` is called,
    /// and for writes too unless the caller marks the storage read-only
    /// ([`Storage::set_read_only`]) before any view of it is used, be suitably aligned for `dtype`, hold initialized bytes (0/1 only for
    /// `Bool`), and not be accessed by anything else while a view of this storage exists.
    pub unsafe fn from_external(
        ptr: NonNull<u8>,
        bytes: usize,
        dtype: DType,
        device: Device,
        deleter: Deleter,
    ) -> Storage {
        // SAFETY: forwarded from this function's own contract.
        let data = unsafe { DataPtr::new(ptr, bytes, device, deleter) };
        Self::from_parts(device, dtype, bytes, Some(data), false)
    }

    /// Wraps a block from an allocator. For a CPU `Bool` storage the block's bytes are
    /// normalised to 0/1 (`!= 0` is true), since a recycled block may hold any bytes.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::{Allocator, CpuAllocator, DType, Storage, Tensor};
    /// let block = CpuAllocator.allocate(4).unwrap();
    /// let t = Tensor::from_storage(Storage::from_data_ptr(block, DType::Bool), &[4]).unwrap();
    /// assert_eq!(t.to_vec::<bool>().unwrap(), vec![false; 4]);
    /// ```
    pub fn from_data_ptr(data: DataPtr, dtype: DType) -> Storage {
        if dtype == DType::Bool && data.device().is_cpu() && !data.is_empty() {
            // SAFETY: a DataPtr owns `len` initialized bytes (its constructor's contract)
            // and we hold it by value: nothing else can access them now.
            let bytes = unsafe { std::slice::from_raw_parts_mut(data.as_ptr(), data.len()) };
            for b in bytes {
                *b = (*b != 0) as u8;
            }
        }
        Self::from_parts(data.device(), dtype, data.len(), Some(data), false)
    }

    /// The data-less storage behind a tensor of the non-strided `layout` (the dtype and
    /// device of its values): allocating or locking it is an `Error::Layout`.
    pub(crate) fn no_data(dtype: DType, device: Device, layout: crate::Layout) -> Storage {
        let mut s = Self::from_parts(device, dtype, 0, None, true);
        if let Some(inner) = Arc::get_mut(&mut s.inner) {
            inner.no_data = Some(layout);
        }
        s
    }

    fn from_parts(device: Device, dtype: DType, capacity: usize, data: Option<DataPtr>, zeroed: bool) -> Storage {
        let allocated = AtomicBool::new(data.is_some());
        Storage {
            inner: Arc::new(StorageInner {
                device,
                dtype,
                capacity,
                zeroed,
                read_only: AtomicBool::new(false),
                no_data: None,
                allocated,
                buffer: RwLock::new(data),
            }),
        }
    }

    /// The device of the bytes.
    pub fn device(&self) -> Device {
        self.inner.device
    }
    /// The dtype the buffer was allocated for.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }
    /// Capacity in bytes.
    pub fn capacity_bytes(&self) -> usize {
        self.inner.capacity
    }
    /// Capacity in elements of [`Storage::dtype`].
    pub fn capacity_elems(&self) -> usize {
        self.inner.capacity / self.inner.dtype.size()
    }
    /// How many handles (tensor views) share this storage.
    pub fn use_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
    /// True when only one handle exists.
    pub fn is_unique(&self) -> bool {
        self.use_count() == 1
    }
    /// True when both handles name the same storage.
    pub fn same(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
    /// Marks the storage read-only, for good: from now on every write through any view
    /// (`copy_`, `fill_`, in-place ops, `_out` into it, growth ops, [`Storage::write`]) is an
    /// [`Error::ReadOnly`] naming the op; reads and ops that make new tensors work as usual.
    /// For memory that must not change (a mapped file, a DLPack tensor flagged read-only).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, Error};
    /// let t = Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap();
    /// t.storage().set_read_only();
    /// assert!(matches!(t.fill_(0.0), Err(Error::ReadOnly { op: "fill_" })));
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 2.]);
    /// ```
    pub fn set_read_only(&self) {
        self.inner.read_only.store(true, Ordering::Release);
    }
    /// True when writes are refused (see [`Storage::set_read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only.load(Ordering::Acquire)
    }
    /// True once the buffer exists (see the module docs on lazy allocation).
    pub fn is_allocated(&self) -> bool {
        self.inner.allocated.load(Ordering::Acquire)
    }
    /// A stable identity used for lock ordering.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Allocates the buffer now if it is still lazy.
    pub fn ensure_allocated(&self) -> Result<()> {
        if self.is_allocated() {
            return Ok(());
        }
        // Allocation is not a write of the data: a read-only lazy storage gets its zeroed
        // buffer too.
        self.allocate_for("Storage::ensure_allocated")
    }

    /// [`Storage::ensure_allocated`] with `op` named in its errors.
    fn allocate_for(&self, op: &'static str) -> Result<()> {
        let mut guard = self.inner.buffer.write().unwrap_or_else(|e| e.into_inner());
        self.fill_lazy(op, &mut guard)
    }

    fn fill_lazy(&self, op: &'static str, slot: &mut Option<DataPtr>) -> Result<()> {
        if slot.is_some() {
            return Ok(());
        }
        let inner = &self.inner;
        if let Some(layout) = inner.no_data {
            return Err(Error::not_strided(op, layout));
        }
        *slot = Some(allocate_buffer(op, inner.device, inner.dtype, inner.capacity, inner.zeroed)?);
        self.inner.allocated.store(true, Ordering::Release);
        Ok(())
    }

    /// A storage for `numel` elements with its buffer allocated now (contents as
    /// [`Storage::new_lazy_uninit`]'s), and the buffer's base address.
    ///
    /// For a new op output: while the caller holds the only handle, nothing else can lock
    /// the storage, so the caller may write through the address without taking its lock
    /// (the call path's dense way does, for its fresh output).
    pub(crate) fn new_uninit_now(dtype: DType, numel: usize, device: Device) -> Result<(Storage, *mut u8)> {
        let capacity = Self::capacity_for(dtype, numel)?;
        let data = allocate_buffer("Storage::new", device, dtype, capacity, false)?;
        let base = data.as_ptr();
        Ok((Self::from_parts(device, dtype, capacity, Some(data), false), base))
    }

    /// Shared (read) access to the buffer, allocating it first if lazy.
    ///
    /// Taking it while this thread holds a write guard of the same storage is an
    /// [`Error::Locked`]; a second read guard on one thread is fine unless a writer is
    /// already waiting for the first (then it would deadlock, and is an error too).
    pub fn read(&self) -> Result<StorageRead<'_>> {
        self.read_for("Storage::read")
    }

    /// [`Storage::read`] with `op` named in its errors.
    pub fn read_for(&self, op: &'static str) -> Result<StorageRead<'_>> {
        let id = self.id();
        let guard = self.read_raw(op, held::held(id))?;
        held::acquire(id, Access::Read);
        Ok(StorageRead { guard, id })
    }

    /// The read lock, given what this thread already holds on this storage (`have`),
    /// allocating a lazy buffer first. Records nothing in the held table.
    #[inline(always)]
    fn read_raw(&self, op: &'static str, have: Option<Access>) -> Result<RwLockReadGuard<'_, Option<DataPtr>>> {
        match have {
            Some(Access::Write) => {
                Err(held::reentrant(op, Access::Read, Access::Write, "waiting for it would never return"))
            }
            Some(Access::Read) => match self.inner.buffer.try_read() {
                Ok(g) => Ok(g),
                Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
                Err(TryLockError::WouldBlock) => Err(held::reentrant(
                    op,
                    Access::Read,
                    Access::Read,
                    "a writer on another thread is waiting for that guard, so a second read would deadlock",
                )),
            },
            None => {
                if !self.is_allocated() {
                    self.allocate_for(op)?;
                }
                Ok(self.inner.buffer.read().unwrap_or_else(|e| e.into_inner()))
            }
        }
    }

    /// Exclusive (write) access to the buffer, allocating it first if lazy. Taking it while
    /// this thread holds any guard of the same storage is an [`Error::Locked`].
    pub fn write(&self) -> Result<StorageWrite<'_>> {
        self.write_for("Storage::write")
    }

    /// [`Storage::write`] with `op` named in its errors.
    pub fn write_for(&self, op: &'static str) -> Result<StorageWrite<'_>> {
        let id = self.id();
        let guard = self.write_raw(op, held::held(id))?;
        held::acquire(id, Access::Write);
        Ok(StorageWrite { guard, id })
    }

    /// The write lock, given what this thread already holds on this storage (`have`),
    /// allocating a lazy buffer. Records nothing in the held table.
    #[inline(always)]
    fn write_raw(&self, op: &'static str, have: Option<Access>) -> Result<RwLockWriteGuard<'_, Option<DataPtr>>> {
        if self.is_read_only() {
            return Err(Error::ReadOnly { op });
        }
        if let Some(have) = have {
            return Err(held::reentrant(op, Access::Write, have, "waiting for it would never return"));
        }
        let mut guard = self.inner.buffer.write().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            self.fill_lazy(op, &mut guard)?;
        }
        Ok(guard)
    }
}

/// A buffer of `bytes` bytes for `dtype` on `device` from the device's allocator: zeroed
/// when `zeroed` (and always for CPU `Bool`, whose bytes must be 0 or 1), else
/// initialized but unspecified. Too little memory is an `Err`.
fn allocate_buffer(op: &'static str, device: Device, dtype: DType, bytes: usize, zeroed: bool) -> Result<DataPtr> {
    let what = || format!("a storage of {} {dtype} elements", bytes / dtype.size().max(1));
    let data = alloc::with_allocator(device, |a| {
        if zeroed {
            a.allocate_on(device, bytes)
        } else {
            a.allocate_uninit_on(device, bytes)
        }
    })?
    .map_err(|e| e.allocating(op, what))?;
    if data.len() < bytes {
        return Err(Error::out_of_memory(op, bytes, device, what()));
    }
    if device.is_cpu() && dtype == DType::Bool {
        // Bool storage must hold only 0/1 whatever the allocator (a safe impl) returned:
        // zero it ourselves. (`allocate` promises zeroed bytes for the other dtypes.)
        // SAFETY: the block is exclusively ours and at least `bytes` long.
        unsafe { std::ptr::write_bytes(data.as_ptr(), 0, bytes) };
    } else if !device.is_cpu() && zeroed {
        zero_device_bytes(device, &data, bytes)?;
    }
    Ok(data)
}

/// Zero-fills `bytes` bytes of a device block through the device's runtime, in chunks.
fn zero_device_bytes(device: Device, data: &DataPtr, bytes: usize) -> Result<()> {
    const CHUNK: usize = 1 << 20;
    let rt = crate::runtime_for(device)?;
    let mut zeros: Vec<u8> = Vec::new();
    zeros.try_reserve_exact(CHUNK.min(bytes)).map_err(|_| {
        Error::out_of_memory("zero a device buffer", CHUNK.min(bytes), Device::Cpu, "a staging buffer of zeros")
    })?;
    zeros.resize(CHUNK.min(bytes), 0);
    let mut done = 0;
    while done < bytes {
        let n = CHUNK.min(bytes - done);
        // SAFETY: the block is exclusively ours (not yet in the storage) and `bytes` long
        // on `device`; `done + n <= bytes`.
        unsafe { rt.copy_from_host(device, &zeros[..n], data.as_ptr().wrapping_add(done))? };
        done += n;
    }
    Ok(())
}

/// A shared lock on a storage's bytes.
pub struct StorageRead<'a> {
    guard: RwLockReadGuard<'a, Option<DataPtr>>,
    id: usize,
}

/// An exclusive lock on a storage's bytes.
pub struct StorageWrite<'a> {
    guard: RwLockWriteGuard<'a, Option<DataPtr>>,
    id: usize,
}

impl Drop for StorageRead<'_> {
    fn drop(&mut self) {
        held::release(self.id);
    }
}

impl Drop for StorageWrite<'_> {
    fn drop(&mut self) {
        held::release(self.id);
    }
}

impl StorageRead<'_> {
    /// Base address of the buffer (a device address for CUDA storage).
    pub fn as_ptr(&self) -> *const u8 {
        self.guard.as_ref().map_or(std::ptr::null(), |d| d.as_ptr())
    }
}

impl StorageWrite<'_> {
    /// Base address of the buffer (a device address for CUDA storage).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.guard.as_ref().map_or(std::ptr::null_mut(), |d| d.as_ptr())
    }
}
