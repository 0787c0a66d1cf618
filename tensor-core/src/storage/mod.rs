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
//! # Lazy allocation
//! A storage made by [`Storage::new_lazy`] (what `Tensor::empty`, `resize_` and `reserve`
//! produce) has a capacity but no buffer. The buffer is allocated, zero-filled, the first
//! time it is locked, for reading or for writing — i.e. at the first kernel, `to_vec`,
//! `fill_`/`copy_` or any op touching it. Allocation failure then is an `Err`.

mod alloc;

pub use alloc::{allocator_for, set_allocator, Allocator, AllocatorFactory, CpuAllocator, DataPtr, Deleter, CPU_ALIGN};

use crate::{DType, Device, Element, Error, Result};
use smallvec::SmallVec;
use std::ptr::NonNull;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Refcounted bytes on one device, shared by every view made from it.
///
/// ```
/// use tensor_core::{Storage, DType, Device};
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
    /// A storage for `numel` elements whose buffer is allocated at first access.
    pub fn new_lazy(dtype: DType, numel: usize, device: Device) -> Result<Storage> {
        let capacity = numel
            .checked_mul(dtype.size())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::Overflow { op: "Storage::new", shape: vec![numel], dtype })?;
        Ok(Self::from_parts(device, dtype, capacity, None))
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
        Self::from_parts(Device::Cpu, T::DTYPE, bytes, Some(data))
    }

    /// Adopts external memory, freed by `deleter` when the last view is dropped.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `bytes` bytes on `device` until `deleter`
    /// is called, be suitably aligned for `dtype`, hold initialized bytes (0/1 only for
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
        Self::from_parts(device, dtype, bytes, Some(data))
    }

    /// Wraps a block from an allocator.
    pub fn from_data_ptr(data: DataPtr, dtype: DType) -> Storage {
        Self::from_parts(data.device(), dtype, data.len(), Some(data))
    }

    fn from_parts(device: Device, dtype: DType, capacity: usize, data: Option<DataPtr>) -> Storage {
        Storage { inner: Arc::new(StorageInner { device, dtype, capacity, buffer: RwLock::new(data) }) }
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
    /// True once the buffer exists (see the module docs on lazy allocation).
    pub fn is_allocated(&self) -> bool {
        self.inner.buffer.read().unwrap_or_else(|e| e.into_inner()).is_some()
    }
    /// A stable identity used for lock ordering.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Allocates the buffer now if it is still lazy.
    pub fn ensure_allocated(&self) -> Result<()> {
        let mut guard = self.inner.buffer.write().unwrap_or_else(|e| e.into_inner());
        self.fill_lazy(&mut guard)
    }

    fn fill_lazy(&self, slot: &mut Option<DataPtr>) -> Result<()> {
        if slot.is_none() {
            let data = allocator_for(self.inner.device)?.allocate_on(self.inner.device, self.inner.capacity)?;
            if self.inner.device.is_cpu() && self.inner.dtype == DType::Bool {
                // A recycled block may hold any bytes; bool storage must hold only 0/1.
                // SAFETY: the block is exclusively ours and `len` bytes long.
                unsafe { std::ptr::write_bytes(data.as_ptr(), 0, data.len()) };
            }
            if data.len() < self.inner.capacity {
                return Err(Error::OutOfMemory { bytes: self.inner.capacity, device: self.inner.device });
            }
            *slot = Some(data);
        }
        Ok(())
    }

    /// Shared (read) access to the buffer, allocating it first if lazy.
    pub fn read(&self) -> Result<StorageRead<'_>> {
        if !self.is_allocated() {
            self.ensure_allocated()?;
        }
        let guard = self.inner.buffer.read().unwrap_or_else(|e| e.into_inner());
        Ok(StorageRead { guard })
    }

    /// Exclusive (write) access to the buffer, allocating it first if lazy.
    pub fn write(&self) -> Result<StorageWrite<'_>> {
        let mut guard = self.inner.buffer.write().unwrap_or_else(|e| e.into_inner());
        self.fill_lazy(&mut guard)?;
        Ok(StorageWrite { guard })
    }
}

/// A shared lock on a storage's bytes.
pub struct StorageRead<'a> {
    guard: RwLockReadGuard<'a, Option<DataPtr>>,
}

/// An exclusive lock on a storage's bytes.
pub struct StorageWrite<'a> {
    guard: RwLockWriteGuard<'a, Option<DataPtr>>,
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

/// Access wanted on one operand of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
}

enum Guard<'a> {
    Read(StorageRead<'a>),
    Write(StorageWrite<'a>),
}

/// The locks of every operand of one call, taken in a deadlock-free order.
pub struct LockSet<'a> {
    /// Inline for the usual ≤ 4 operands of a call (no heap allocation).
    guards: SmallVec<[(usize, Guard<'a>); 4]>,
}

impl LockSet<'_> {
    /// Base address of the buffer of `storage`, which must be one of the locked ones.
    /// Writable only if it was locked for [`Access::Write`].
    pub fn base(&self, storage: &Storage) -> *mut u8 {
        let id = storage.id();
        self.guards.iter().find(|(g, _)| *g == id).map_or(std::ptr::null_mut(), |(_, g)| match g {
            Guard::Read(r) => r.as_ptr() as *mut u8,
            Guard::Write(w) => w.guard.as_ref().map_or(std::ptr::null_mut(), |d| d.as_ptr()),
        })
    }
}

/// Locks every storage in `ops` (merging duplicates: write wins) in address order.
///
/// ```
/// use tensor_core::{Storage, DType, Device, lock_many, Access};
/// let a = Storage::new_lazy(DType::F32, 4, Device::Cpu).unwrap();
/// let locks = lock_many(&[(&a, Access::Read), (&a, Access::Write)]).unwrap();
/// assert!(!locks.base(&a).is_null());
/// ```
pub fn lock_many<'a>(ops: &[(&'a Storage, Access)]) -> Result<LockSet<'a>> {
    let mut want: SmallVec<[(usize, &'a Storage, Access); 4]> = SmallVec::new();
    for &(s, a) in ops {
        match want.iter_mut().find(|(id, _, _)| *id == s.id()) {
            Some(w) => {
                if a == Access::Write {
                    w.2 = Access::Write
                }
            }
            None => want.push((s.id(), s, a)),
        }
    }
    want.sort_by_key(|w| w.0);
    let mut guards = SmallVec::new();
    for (id, s, a) in want {
        let g = match a {
            Access::Read => Guard::Read(s.read()?),
            Access::Write => Guard::Write(s.write()?),
        };
        guards.push((id, g));
    }
    Ok(LockSet { guards })
}
