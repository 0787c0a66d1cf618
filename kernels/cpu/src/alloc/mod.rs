//! A caching CPU allocator: freed blocks go into a bounded, size-bucketed cache and are
//! handed out again, so a new output tensor of a size seen before costs no page faults
//! (measured here: a fresh 256 MiB buffer costs ~6× a memcpy of it in page faults).
//!
//! - Sizes are rounded up to classes (64-byte steps up to 1 KiB, then four steps per power
//!   of two, so at most 25% slack); a request is served from its class's bucket.
//! - Blocks of at least 2 MiB are mapped 2 MiB-aligned with `madvise(MADV_HUGEPAGE)` on
//!   Linux (transparent huge pages: fewer, cheaper faults and TLB misses).
//! - The cache holds at most [`CachingAllocator::cap`] bytes (default [`default_cap`]: the
//!   smaller of 1 GiB and a quarter of physical memory); releasing a block that does not
//!   fit evicts the largest cached blocks first, or frees the block if it exceeds the cap.
//! - The process-wide cache ([`global`]) also parks, per thread, one freed block of each
//!   size class up to 1 KiB (`thread_slots`): a small op's output is then allocated and
//!   freed without the cache's lock. Those blocks are not in [`CacheStats::bytes_cached`]
//!   and [`empty_cache`] frees only the calling thread's.
//! - Turn it off with the environment variable `TENSOR_OPS_CPU_CACHE=0` (read when the
//!   global allocator is first used) or [`set_enabled`]; empty it with [`empty_cache`].
//! - [`Allocator::allocate`] returns zeroed memory (a recycled block is zeroed first);
//!   [`Allocator::allocate_uninit_on`], which new op outputs use (their kernel overwrites
//!   every byte), hands a recycled block over as it is: initialized bytes of a previous
//!   tensor, never undefined memory. Fresh blocks are zeroed by the OS either way.
//! - Allocation failure is [`Error::OutOfMemory`] (after emptying the cache and retrying),
//!   never an abort.

mod thread_slots;

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tensor_core::{Allocator, DataPtr, Device, Error, Result, CPU_ALIGN};

/// Blocks at least this large are mapped directly, 2 MiB-aligned, with huge pages advised.
const HUGE: usize = 2 << 20;

/// The size class (bytes actually allocated) serving a request of `bytes` (> 0).
///
/// ```
/// use tensor_kernels_cpu::alloc::size_class;
/// assert_eq!(size_class(1), 64);
/// assert_eq!(size_class(1000), 1024);
/// assert_eq!(size_class(5000), 5120);
/// assert_eq!(size_class(256 << 20), 256 << 20);
/// ```
pub fn size_class(bytes: usize) -> usize {
    if bytes <= 1024 {
        return bytes.max(1).next_multiple_of(CPU_ALIGN);
    }
    let top = usize::BITS - 1 - bytes.leading_zeros();
    let step = 1usize << (top - 2);
    bytes.next_multiple_of(step)
}

/// The default cap: the smaller of 1 GiB and a quarter of physical memory.
pub fn default_cap() -> usize {
    let gib = 1usize << 30;
    physical_memory().map_or(gib, |m| gib.min(m / 4))
}

#[cfg(unix)]
fn physical_memory() -> Option<usize> {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    (pages > 0 && page > 0).then(|| (pages as usize).saturating_mul(page as usize))
}
#[cfg(not(unix))]
fn physical_memory() -> Option<usize> {
    None
}

/// Counters of one caching allocator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests served from the cache.
    pub hits: u64,
    /// Requests that allocated fresh memory.
    pub misses: u64,
    /// Bytes currently held in the cache (by size class).
    pub bytes_cached: usize,
    /// Blocks currently held in the cache.
    pub blocks_cached: usize,
    /// Cached blocks freed to make room under the cap.
    pub evictions: u64,
}

/// A raw block of `class` bytes from [`raw_alloc`].
struct Block(NonNull<u8>);

// SAFETY: a cached block is exclusively owned by the cache (nobody else holds its address).
unsafe impl Send for Block {}

#[derive(Default)]
struct State {
    free: BTreeMap<usize, Vec<Block>>,
    bytes: usize,
    blocks: usize,
    cap: usize,
    enabled: bool,
}

struct Inner {
    state: Mutex<State>,
    /// Mirrors `State::enabled` for the lock-free per-thread slots (global cache only).
    slots_on: AtomicBool,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a cached block of `class`, if any.
    fn take(&self, class: usize) -> Option<Block> {
        let mut st = self.lock();
        if !st.enabled {
            return None;
        }
        // An emptied list stays (keeping its capacity), so the next give_back of this class
        // does not allocate; eviction drops empty lists.
        let b = st.free.get_mut(&class)?.pop()?;
        st.bytes -= class;
        st.blocks -= 1;
        Some(b)
    }

    /// Returns a block to the cache, or frees it.
    fn give_back(&self, block: Block, class: usize) {
        let mut evicted = Vec::new();
        {
            let mut st = self.lock();
            if st.enabled && class <= st.cap {
                let st = &mut *st;
                while st.bytes + class > st.cap {
                    let Some(mut last) = st.free.last_entry() else { break };
                    let c = *last.key();
                    if let Some(b) = last.get_mut().pop() {
                        evicted.push((b, c));
                        st.bytes -= c;
                        st.blocks -= 1;
                    }
                    if last.get().is_empty() {
                        last.remove();
                    }
                }
                st.free.entry(class).or_default().push(block);
                st.bytes += class;
                st.blocks += 1;
            } else {
                evicted.push((block, class));
            }
        }
        self.evictions.fetch_add(evicted.len() as u64, Ordering::Relaxed);
        for (b, c) in evicted {
            // SAFETY: the block came from raw_alloc(c) and is no longer referenced.
            unsafe { raw_free(b, c) };
        }
    }

    /// Frees every cached block.
    fn empty(&self) {
        let free = {
            let mut st = self.lock();
            st.bytes = 0;
            st.blocks = 0;
            std::mem::take(&mut st.free)
        };
        for (c, list) in free {
            for b in list {
                // SAFETY: cached blocks came from raw_alloc(c) and are unreferenced.
                unsafe { raw_free(b, c) };
            }
        }
    }
}

/// Allocates `class` zeroed bytes, 64-byte aligned (2 MiB-aligned huge-page mappings for
/// large classes on Linux).
fn raw_alloc(class: usize) -> Option<Block> {
    #[cfg(target_os = "linux")]
    if class >= HUGE {
        return huge::map(class);
    }
    let layout = std::alloc::Layout::from_size_align(class, CPU_ALIGN).ok()?;
    // SAFETY: class > 0.
    NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).map(Block)
}

/// Frees a block from [`raw_alloc`].
///
/// # Safety
/// `b` came from `raw_alloc(class)` and is not used afterwards.
unsafe fn raw_free(b: Block, class: usize) {
    #[cfg(target_os = "linux")]
    if class >= HUGE {
        // SAFETY: forwarded.
        unsafe { huge::unmap(b, class) };
        return;
    }
    if let Ok(layout) = std::alloc::Layout::from_size_align(class, CPU_ALIGN) {
        // SAFETY: allocated by alloc_zeroed with this layout (caller).
        unsafe { std::alloc::dealloc(b.0.as_ptr(), layout) };
    }
}

#[cfg(target_os = "linux")]
mod huge {
    use super::{Block, HUGE};
    use std::ptr::NonNull;

    /// Length of the mapping backing a class.
    fn map_len(class: usize) -> usize {
        class.next_multiple_of(HUGE)
    }

    /// Maps `class` bytes 2 MiB-aligned and advises huge pages.
    pub(super) fn map(class: usize) -> Option<Block> {
        let len = map_len(class);
        let over = len.checked_add(HUGE)?;
        // SAFETY: an anonymous private mapping with no address hint has no preconditions.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                over,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let start = p as usize;
        let aligned = start.next_multiple_of(HUGE);
        let (head, tail) = (aligned - start, over - (aligned - start) - len);
        // SAFETY: head and tail are unused parts of the mapping just made; failure only
        // leaves them mapped (harmless), so the results are ignored. madvise is advice.
        unsafe {
            if head > 0 {
                libc::munmap(p, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        NonNull::new(aligned as *mut u8).map(Block)
    }

    /// Unmaps a block from [`map`].
    ///
    /// # Safety
    /// `b` came from `map(class)` and is not used afterwards.
    pub(super) unsafe fn unmap(b: Block, class: usize) {
        // SAFETY: exactly the mapping made by `map` (caller).
        unsafe { libc::munmap(b.0.as_ptr() as *mut libc::c_void, map_len(class)) };
    }
}

/// A bounded, size-bucketed cache of freed CPU blocks implementing [`Allocator`].
///
/// ```
/// use tensor_core::Allocator;
/// use tensor_kernels_cpu::alloc::CachingAllocator;
/// let a = CachingAllocator::new(64 << 20);
/// drop(a.allocate(1 << 20).unwrap());
/// let b = a.allocate(1 << 20).unwrap(); // served from the cache
/// assert_eq!(a.stats().hits, 1);
/// assert_eq!(b.len(), 1 << 20);
/// ```
#[derive(Clone)]
pub struct CachingAllocator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CachingAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CachingAllocator({:?}, cap {} bytes)", self.stats(), self.cap())
    }
}

impl CachingAllocator {
    /// An enabled cache holding at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let state = State { cap, enabled: true, ..State::default() };
        CachingAllocator {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                slots_on: AtomicBool::new(true),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                evictions: AtomicU64::new(0),
            }),
        }
    }

    /// True for [`global`] and its clones.
    fn is_global(&self) -> bool {
        GLOBAL.get().is_some_and(|g| Arc::ptr_eq(&g.inner, &self.inner))
    }

    /// The cap in bytes.
    pub fn cap(&self) -> usize {
        self.inner.lock().cap
    }

    /// Sets the cap, evicting cached blocks when it shrinks below the cached bytes.
    pub fn set_cap(&self, cap: usize) {
        self.inner.lock().cap = cap;
        if self.stats().bytes_cached > cap {
            self.inner.empty();
        }
    }

    /// Whether freed blocks are cached.
    pub fn is_enabled(&self) -> bool {
        self.inner.lock().enabled
    }

    /// Turns caching on or off; turning it off frees every cached block.
    pub fn set_enabled(&self, on: bool) {
        self.inner.lock().enabled = on;
        self.inner.slots_on.store(on, Ordering::Relaxed);
        if !on {
            self.empty();
        }
    }

    /// Frees every cached block (blocks in use are unaffected). For the global cache, of the
    /// per-thread slots only the calling thread's are emptied.
    pub fn empty(&self) {
        if self.is_global() {
            thread_slots::flush();
        }
        self.inner.empty();
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        let st = self.inner.lock();
        CacheStats {
            hits: self.inner.hits.load(Ordering::Relaxed),
            misses: self.inner.misses.load(Ordering::Relaxed),
            bytes_cached: st.bytes,
            blocks_cached: st.blocks,
            evictions: self.inner.evictions.load(Ordering::Relaxed),
        }
    }
}

impl Allocator for CachingAllocator {
    fn device(&self) -> Device {
        Device::Cpu
    }

    /// `bytes` zeroed bytes, 64-byte aligned (a recycled block is zeroed first).
    fn allocate(&self, bytes: usize) -> Result<DataPtr> {
        self.block(bytes, true)
    }

    /// `bytes` bytes, 64-byte aligned: zeroed when fresh, the previous contents when
    /// recycled from the cache (what a new output that its kernel overwrites wants).
    fn allocate_uninit_on(&self, _device: Device, bytes: usize) -> Result<DataPtr> {
        self.block(bytes, false)
    }
}

impl CachingAllocator {
    /// A block of at least `bytes` bytes, from the cache when one of its class is there;
    /// a recycled block is zeroed when `zeroed`.
    fn block(&self, bytes: usize, zeroed: bool) -> Result<DataPtr> {
        if bytes == 0 {
            let p = NonNull::new(CPU_ALIGN as *mut u8).unwrap_or(NonNull::dangling());
            // SAFETY: a zero-length block needs no memory; the deleter does nothing.
            return Ok(unsafe { DataPtr::new(p, 0, Device::Cpu, Box::new(|_, _| {})) });
        }
        let oom = || Error::out_of_memory("allocate", bytes, Device::Cpu, "");
        if bytes > isize::MAX as usize - HUGE {
            return Err(oom());
        }
        let class = size_class(bytes);
        let global = self.is_global();
        let parked =
            if global && self.inner.slots_on.load(Ordering::Relaxed) { thread_slots::take(class) } else { None };
        let block = match parked.or_else(|| self.inner.take(class)) {
            Some(b) => {
                self.inner.hits.fetch_add(1, Ordering::Relaxed);
                if zeroed {
                    // SAFETY: the block is `class >= bytes` bytes and exclusively ours.
                    unsafe { std::ptr::write_bytes(b.0.as_ptr(), 0, bytes) };
                }
                b
            }
            None => {
                self.inner.misses.fetch_add(1, Ordering::Relaxed);
                match raw_alloc(class) {
                    Some(b) => b,
                    None => {
                        self.inner.empty();
                        raw_alloc(class).ok_or_else(oom)?
                    }
                }
            }
        };
        let ptr = block.0;
        // The process-wide cache's blocks go back through `global()`: a deleter that
        // captures nothing is a `Box` without a heap allocation (and no reference count).
        let deleter: tensor_core::Deleter = if global {
            Box::new(|p: NonNull<u8>, len: usize| give_back_global(Block(p), size_class(len)))
        } else {
            let inner = Arc::clone(&self.inner);
            Box::new(move |p: NonNull<u8>, _len: usize| inner.give_back(Block(p), class))
        };
        // SAFETY: the block is `class >= bytes` bytes, 64-byte aligned, exclusively ours,
        // initialized (zeroed when fresh or asked for; else a previous tensor's bytes), and
        // the deleter returns it to the cache exactly once.
        Ok(unsafe { DataPtr::new(ptr, bytes, Device::Cpu, deleter) })
    }
}

/// Returns a block of the global cache: into the calling thread's slot of its class when
/// that is free, else to the shared cache.
fn give_back_global(block: Block, class: usize) {
    let inner = &global().inner;
    let block = if inner.slots_on.load(Ordering::Relaxed) { thread_slots::put(block, class) } else { Some(block) };
    if let Some(b) = block {
        inner.give_back(b, class);
    }
}

/// The process-wide cache behind [`global`].
static GLOBAL: OnceLock<CachingAllocator> = OnceLock::new();

/// The process-wide caching allocator (enabled unless `TENSOR_OPS_CPU_CACHE=0`, cap
/// [`default_cap`]).
pub fn global() -> &'static CachingAllocator {
    GLOBAL.get_or_init(|| {
        let a = CachingAllocator::new(default_cap());
        if std::env::var("TENSOR_OPS_CPU_CACHE").is_ok_and(|v| v.trim() == "0") {
            a.set_enabled(false);
        }
        a
    })
}

fn make_global() -> tensor_core::Result<Arc<dyn Allocator>> {
    crate::register::ensure_linked();
    Ok(Arc::new(global().clone()))
}

// The core finds this at the first CPU allocation: linking tensor-kernels-cpu is enough.
tensor_core::inventory::submit! {
    tensor_core::AllocatorFactory { device: tensor_core::DeviceKind::Cpu, priority: 10, make: make_global }
}

/// Installs [`global`] as the allocator of new CPU storage (and makes sure the copy/fill
/// registry rows are linked). Idempotent.
pub fn install() {
    crate::register::ensure_linked();
    tensor_core::set_allocator(Device::Cpu, Arc::new(global().clone()));
}

/// Frees every block cached by the global allocator.
pub fn empty_cache() {
    global().empty();
}

/// Turns the global cache on or off (off also empties it).
pub fn set_enabled(on: bool) {
    global().set_enabled(on);
}

/// The global allocator's counters.
pub fn stats() -> CacheStats {
    global().stats()
}
