//! The CUDA caching allocator: stream-ordered, size-bucketed, per device.
//!
//! - Every device has exactly one stream (see [`super::runtime`]) and all work on device
//!   memory is queued on it. A freed block goes back to the cache of that stream and is
//!   handed out again only to later allocations, whose work is queued after every use of
//!   the block's previous owner: reuse is safe in stream order without a host sync (as
//!   PyTorch's caching allocator and OneFlow's release on the producer stream).
//! - Fresh blocks come from the driver's stream-ordered pool (`cuMemAllocAsync` on the
//!   device's stream) when the device supports it, else from `cuMemAlloc`.
//! - Sizes are rounded up to classes (512-byte steps up to 1 MiB, then four steps per power
//!   of two: at most 25% slack); a request is served from its class's bucket.
//! - When the driver is out of memory the cache is emptied (blocks freed in stream order)
//!   and the allocation retried once; then it is [`Error::OutOfMemory`].
//! - Blocks are not zeroed (neither fresh nor reused ones), as in PyTorch.
//!
//! `tensor_core::Allocator::allocate` carries no device ordinal, so the registered
//! allocator allocates on the calling thread's current device: `cuda:0` unless changed with
//! [`set_current_device`].

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::{result as drv, sys};
use tensor_core::{Allocator, DataPtr, Device, Error, Result};

use super::runtime::{self, CudaDevice};

/// Alignment of every block (the driver gives at least 256 bytes).
pub const ALIGN: usize = 256;

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(0) };
}

/// Sets the device the registered allocator allocates on, for the calling thread.
pub fn set_current_device(ordinal: u32) {
    CURRENT.with(|c| c.set(ordinal));
}

/// The calling thread's current device ordinal (0 unless [`set_current_device`] changed it).
pub fn current_device() -> u32 {
    CURRENT.with(Cell::get)
}

/// The size class serving a request of `bytes` (> 0).
///
/// ```
/// use tensor_kernels_cuda::alloc::size_class;
/// assert_eq!(size_class(1), 512);
/// assert_eq!(size_class(1 << 20), 1 << 20);
/// assert_eq!(size_class((1 << 20) + 1), 5 << 18);
/// ```
pub fn size_class(bytes: usize) -> usize {
    const SMALL: usize = 1 << 20;
    if bytes <= SMALL {
        return bytes.max(1).next_multiple_of(512);
    }
    let top = usize::BITS - 1 - bytes.leading_zeros();
    bytes.next_multiple_of(1usize << (top - 2))
}

/// Allocation counters of one device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in blocks held by live tensors.
    pub allocated: usize,
    /// Bytes in free blocks kept for reuse.
    pub cached: usize,
}

/// Counters of device `ordinal`'s allocator.
pub fn memory_stats(ordinal: u32) -> Result<MemoryStats> {
    let dev = runtime::device(ordinal)?;
    let c = dev.cache.lock().unwrap_or_else(|e| e.into_inner());
    Ok(MemoryStats { allocated: c.allocated_bytes, cached: c.cached_bytes })
}

/// Gives every cached free block of device `ordinal` back to the driver (in stream order).
pub fn empty_cache(ordinal: u32) -> Result<()> {
    release_cached(&*runtime::device(ordinal)?)
}

fn release_cached(dev: &CudaDevice) -> Result<()> {
    let blocks: Vec<u64> = {
        let mut c = dev.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.cached_bytes = 0;
        c.free.drain().flat_map(|(_, v)| v).collect()
    };
    if blocks.is_empty() {
        return Ok(());
    }
    dev.bind()?;
    if !dev.async_alloc {
        // cuMemFree is not stream-ordered: let the stream finish with the blocks first.
        dev.synchronize()?;
    }
    let mut first_err = None;
    for b in blocks {
        // SAFETY: `b` came from the matching allocation call below and sits in the cache,
        // so no tensor owns it; it is freed exactly once (drained from the cache above).
        let r = unsafe {
            if dev.async_alloc {
                drv::free_async(b, dev.cu_stream())
            } else {
                drv::memory_free(b)
            }
        };
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    }
    match first_err {
        Some(e) => Err(Error::Cuda(format!("freeing cached blocks on cuda:{}: {e:?}", dev.ordinal))),
        None => Ok(()),
    }
}

fn raw_alloc(dev: &CudaDevice, bytes: usize) -> std::result::Result<u64, drv::DriverError> {
    // SAFETY: the context is bound by the caller; the stream belongs to it. The memory is
    // uninitialised, which device memory may be (it is only ever read as raw bytes).
    unsafe {
        if dev.async_alloc {
            drv::malloc_async(dev.cu_stream(), bytes)
        } else {
            drv::malloc_sync(bytes)
        }
    }
}

/// A block of `class` bytes on `dev`: from the cache, else from the driver.
fn take_block(dev: &CudaDevice, class: usize, requested: usize) -> Result<u64> {
    {
        let mut c = dev.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ptr) = c.free.get_mut(&class).and_then(Vec::pop) {
            c.cached_bytes -= class;
            c.allocated_bytes += class;
            return Ok(ptr);
        }
    }
    dev.bind()?;
    let oom = || Error::out_of_memory("allocate", requested, Device::Cuda(dev.ordinal), "");
    let ptr = match raw_alloc(dev, class) {
        Ok(p) => p,
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
            release_cached(dev)?;
            raw_alloc(dev, class).map_err(|_| oom())?
        }
        Err(e) => return Err(Error::Cuda(format!("allocating {class} bytes on cuda:{}: {e:?}", dev.ordinal))),
    };
    dev.cache.lock().unwrap_or_else(|e| e.into_inner()).allocated_bytes += class;
    Ok(ptr)
}

/// The caching allocator for CUDA devices (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaAllocator;

impl CudaAllocator {
    /// Allocates `bytes` on device `ordinal`.
    pub fn allocate_on(ordinal: u32, bytes: usize) -> Result<DataPtr> {
        let device = Device::Cuda(ordinal);
        if bytes == 0 {
            let ptr = NonNull::new(std::ptr::without_provenance_mut::<u8>(ALIGN)).unwrap_or(NonNull::dangling());
            // SAFETY: a zero-length block is never accessed; the deleter does nothing.
            return Ok(unsafe { DataPtr::new(ptr, 0, device, Box::new(|_, _| {})) });
        }
        let dev = runtime::device(ordinal)?;
        let class = size_class(bytes);
        let addr = take_block(&dev, class, bytes)?;
        let ptr = NonNull::new(addr as usize as *mut u8)
            .ok_or_else(|| Error::Cuda(format!("the driver returned a null block on cuda:{ordinal}")))?;
        let deleter = Box::new(move |p: NonNull<u8>, _len: usize| {
            // Back to the cache of the device's stream: reused only by later work on it.
            let mut c = dev.cache.lock().unwrap_or_else(|e| e.into_inner());
            c.allocated_bytes -= class;
            c.cached_bytes += class;
            c.free.entry(class).or_default().push(p.as_ptr() as usize as u64);
        });
        // SAFETY: `addr` is a device block of `class >= bytes` bytes owned by nothing else
        // until the deleter returns it to the cache; device memory needs no initialisation.
        Ok(unsafe { DataPtr::new(ptr, bytes, device, deleter) })
    }
}

impl Allocator for CudaAllocator {
    fn device(&self) -> Device {
        Device::Cuda(current_device())
    }
    fn allocate(&self, bytes: usize) -> Result<DataPtr> {
        CudaAllocator::allocate_on(current_device(), bytes)
    }
    fn allocate_on(&self, device: Device, bytes: usize) -> Result<DataPtr> {
        match device {
            Device::Cuda(ordinal) => CudaAllocator::allocate_on(ordinal, bytes),
            Device::Cpu => Err(tensor_core::Error::invalid("CudaAllocator", "asked to allocate on the CPU")),
        }
    }
}

/// The `AllocatorFactory::make` of the CUDA allocator: initialises the driver and the
/// current device; no driver or device is an [`Error::Cuda`].
pub fn make_allocator() -> Result<Arc<dyn Allocator>> {
    runtime::device(current_device())?;
    Ok(Arc::new(CudaAllocator))
}
