//! Allocators: where storage bytes come from, and how they go back.

use crate::{Device, DeviceKind, Error, Result};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

/// Alignment of every CPU allocation made by the library (one cache line, AVX-512 width).
pub const CPU_ALIGN: usize = 64;

/// How a [`DataPtr`] gives its memory back; runs exactly once, on drop.
pub type Deleter = Box<dyn FnOnce(NonNull<u8>, usize) + Send + Sync>;

/// An owned block of device memory with the function that frees it.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{CpuAllocator, Allocator};
/// let block = CpuAllocator.allocate(128).unwrap();
/// assert_eq!(block.len(), 128);
/// assert_eq!(block.as_ptr() as usize % 64, 0);
/// ```
pub struct DataPtr {
    ptr: NonNull<u8>,
    len: usize,
    device: Device,
    deleter: Option<Deleter>,
}

// SAFETY: a DataPtr is a uniquely owned allocation (like Box<[u8]>); access to the bytes is
// governed by the lock in `Storage`, and the deleter is itself Send + Sync.
unsafe impl Send for DataPtr {}
// SAFETY: &DataPtr only exposes the address and length; no bytes are read through it.
unsafe impl Sync for DataPtr {}

impl DataPtr {
    /// Wraps memory that `deleter` frees.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes on `device` until `deleter`
    /// runs, must not be accessed by anything else meanwhile, and for CPU memory must hold
    /// initialized bytes (any value is fine except that `bool` tensors need 0 or 1). For
    /// CPU memory `ptr` must also be aligned for every dtype it will back (8 bytes covers
    /// all of them), since element reads and writes through it are aligned.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize, device: Device, deleter: Deleter) -> Self {
        DataPtr { ptr, len, device, deleter: Some(deleter) }
    }
    /// Start address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when zero bytes long.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device the memory lives on.
    pub fn device(&self) -> Device {
        self.device
    }
}

impl Drop for DataPtr {
    fn drop(&mut self) {
        if let Some(d) = self.deleter.take() {
            d(self.ptr, self.len);
        }
    }
}

impl std::fmt::Debug for DataPtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataPtr({:p}, {} bytes, {})", self.ptr, self.len, self.device)
    }
}

/// A source of memory for one device kind. Must be fallible: failure is
/// [`Error::OutOfMemory`], never an abort.
pub trait Allocator: Send + Sync + std::fmt::Debug {
    /// The device allocations land on.
    fn device(&self) -> Device;
    /// Allocates `bytes` bytes, zero-initialized on the CPU (device memory may hold any
    /// bytes).
    fn allocate(&self, bytes: usize) -> Result<DataPtr>;
    /// Allocates `bytes` bytes on `device` (a device of this allocator's kind), as
    /// [`Allocator::allocate`]. Allocators serving several devices (one per GPU ordinal)
    /// override this; the default ignores the ordinal.
    fn allocate_on(&self, device: Device, bytes: usize) -> Result<DataPtr> {
        let _ = device;
        self.allocate(bytes)
    }
    /// Allocates `bytes` bytes on `device` whose contents do not matter to the caller
    /// (an output its kernel overwrites): on the CPU they must still be *initialized*
    /// bytes (any values: a recycled block's are fine), never fresh uninitialized memory.
    /// The default is [`Allocator::allocate_on`].
    fn allocate_uninit_on(&self, device: Device, bytes: usize) -> Result<DataPtr> {
        self.allocate_on(device, bytes)
    }
}

/// The default CPU allocator: 64-byte aligned, zeroed, fallible.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuAllocator;

impl Allocator for CpuAllocator {
    fn device(&self) -> Device {
        Device::Cpu
    }
    fn allocate(&self, bytes: usize) -> Result<DataPtr> {
        raw_cpu_alloc(bytes)
    }
}

/// Allocates zeroed, 64-byte aligned host memory; size overflow or failure is an error.
pub(crate) fn raw_cpu_alloc(bytes: usize) -> Result<DataPtr> {
    let oom = Error::out_of_memory("allocate", bytes, Device::Cpu, "");
    if bytes == 0 {
        let ptr = NonNull::<u8>::dangling();
        let aligned = NonNull::new(std::ptr::without_provenance_mut::<u8>(CPU_ALIGN)).unwrap_or(ptr);
        // SAFETY: a zero-length block needs no memory; the deleter does nothing.
        return Ok(unsafe { DataPtr::new(aligned, 0, Device::Cpu, Box::new(|_, _| {})) });
    }
    let layout = std::alloc::Layout::from_size_align(bytes, CPU_ALIGN).map_err(|_| oom.clone())?;
    // SAFETY: layout has non-zero size (checked above).
    let raw = unsafe { std::alloc::alloc_zeroed(layout) };
    let ptr = NonNull::new(raw).ok_or(oom)?;
    let deleter: Deleter = Box::new(move |p, _| {
        // SAFETY: p came from alloc_zeroed with this exact layout and is freed once.
        unsafe { std::alloc::dealloc(p.as_ptr(), layout) }
    });
    // SAFETY: freshly allocated, zeroed, exclusively owned, freed by the matching deleter.
    Ok(unsafe { DataPtr::new(ptr, bytes, Device::Cpu, deleter) })
}

/// An allocator a backend offers for a device kind, found through `inventory` at first use
/// (so linking a backend is enough to get its allocator; no start-up call). The highest
/// `priority` whose `make` succeeds wins.
pub struct AllocatorFactory {
    /// The device kind it allocates on.
    pub device: DeviceKind,
    /// Larger wins.
    pub priority: i32,
    /// Builds the allocator (a device backend initialises its driver here; an error is
    /// remembered and returned by every allocation on that device kind).
    pub make: fn() -> Result<Arc<dyn Allocator>>,
}

inventory::collect!(AllocatorFactory);

/// Explicitly installed allocators, per device kind, override the registered ones.
static OVERRIDES: [RwLock<Option<Arc<dyn Allocator>>>; DeviceKind::ALL.len()] =
    [const { RwLock::new(None) }; DeviceKind::ALL.len()];

/// Set (for good) once an override is installed for the kind: until then an allocation
/// skips the override lock.
static OVERRIDDEN: [AtomicBool; DeviceKind::ALL.len()] = [const { AtomicBool::new(false) }; DeviceKind::ALL.len()];

fn registered(kind: DeviceKind) -> Result<Arc<dyn Allocator>> {
    registered_ref(kind).clone()
}

/// The registered allocator of `kind` (made at the first call), by reference.
fn registered_ref(kind: DeviceKind) -> &'static Result<Arc<dyn Allocator>> {
    static REGISTERED: [OnceLock<Result<Arc<dyn Allocator>>>; DeviceKind::ALL.len()] =
        [const { OnceLock::new() }; DeviceKind::ALL.len()];
    REGISTERED[kind.index()].get_or_init(|| {
        let mut factories: Vec<&AllocatorFactory> =
            inventory::iter::<AllocatorFactory>.into_iter().filter(|f| f.device == kind).collect();
        factories.sort_by_key(|f| std::cmp::Reverse(f.priority));
        let mut last_err = None;
        for f in factories {
            match (f.make)() {
                Ok(a) => return Ok(a),
                Err(e) => last_err = Some(e),
            }
        }
        match kind {
            // The host always has the plain allocator.
            DeviceKind::Cpu => Ok(Arc::new(CpuAllocator) as Arc<dyn Allocator>),
            _ => Err(last_err.unwrap_or_else(|| crate::runtime::no_backend(kind))),
        }
    })
}

/// Installs the allocator used for new storage on devices of `device`'s kind, overriding
/// the registered one.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{set_allocator, allocator_for, CpuAllocator, Device};
/// set_allocator(Device::Cpu, std::sync::Arc::new(CpuAllocator));
/// assert!(allocator_for(Device::Cpu).is_ok());
/// ```
pub fn set_allocator(device: Device, alloc: Arc<dyn Allocator>) {
    *OVERRIDES[device.kind().index()].write().unwrap_or_else(|e| e.into_inner()) = Some(alloc);
    OVERRIDDEN[device.kind().index()].store(true, Ordering::Release);
}

/// Calls `f` with the allocator [`allocator_for`] returns, without cloning its handle
/// (what lazy allocation uses: no lock or reference count when no override is installed).
pub(crate) fn with_allocator<R>(device: Device, f: impl FnOnce(&dyn Allocator) -> R) -> Result<R> {
    let kind = device.kind();
    if OVERRIDDEN[kind.index()].load(Ordering::Acquire) {
        return Ok(f(&*allocator_for(device)?));
    }
    match registered_ref(kind) {
        Ok(a) => Ok(f(&**a)),
        Err(e) => Err(e.clone()),
    }
}

/// The allocator for `device`: an installed override, else the best registered one, else
/// (CPU) the plain [`CpuAllocator`]; a device kind without a working backend is an error.
pub fn allocator_for(device: Device) -> Result<Arc<dyn Allocator>> {
    if let Some(a) = OVERRIDES[device.kind().index()].read().unwrap_or_else(|e| e.into_inner()).clone() {
        return Ok(a);
    }
    registered(device.kind())
}
