//! The parallel split shared by the CPU engines: work is cut into contiguous index ranges
//! only above a grain, so small calls run inline on the calling thread with no thread cost.
//!
//! Above the grain the **calling thread works too**: it posts helper tasks to rayon's pool
//! and draws chunks from a shared counter alongside them, then spins (briefly, then
//! yields) until the helpers that joined have finished. A helper that starts after the
//! chunks ran out leaves without touching the work. Measured faster than handing every
//! chunk to rayon (`par_iter`, the caller blocked until a worker wakes it), and as fast as
//! a dedicated spinning pool (`docs/performance-log.md`, “From the code comments”).

use std::any::Any;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Default grain in elements: below this many elements a call runs on the calling thread.
/// Above it, each chunk holds at least this many (≈ 128 KiB of f32, enough to amortise a
/// rayon task while still splitting a DRAM-sized copy evenly across cores).
pub const GRAIN: usize = 32 * 1024;

/// Chunks per thread above the grain: a few, so a thread that finishes early can steal.
const CHUNKS_PER_THREAD: usize = 4;

/// Calls `f` on disjoint ranges covering `0..total`, in parallel when `total > grain` and
/// rayon has more than one thread; otherwise calls `f(0..total)` once, inline. Chunk
/// boundaries are multiples of 64 (so per-chunk loops keep cache-line-sized steps aligned
/// for any element size) and every chunk but the last holds at least `grain` items.
/// Nothing is called when `total == 0`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use tensor_kernels_cpu::parallel::for_each_chunk;
/// let sum = AtomicUsize::new(0);
/// for_each_chunk(1_000_000, 32 * 1024, |r| {
///     sum.fetch_add(r.map(|i| i % 7).sum::<usize>(), Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), (0..1_000_000usize).map(|i| i % 7).sum::<usize>());
/// ```
pub fn for_each_chunk(total: usize, grain: usize, f: impl Fn(Range<usize>) + Sync) {
    if total == 0 {
        return;
    }
    let grain = grain.max(1);
    let threads = rayon::current_num_threads();
    if total <= grain || threads <= 1 {
        f(0..total);
        return;
    }
    let chunks = total.div_ceil(grain).min(threads * CHUNKS_PER_THREAD);
    let step = total.div_ceil(chunks).next_multiple_of(64).max(grain.min(total));
    let chunks = total.div_ceil(step);
    if chunks <= 1 {
        f(0..total);
        return;
    }
    for_each_index(chunks, &|c| f(c * step..((c + 1) * step).min(total)));
}

/// Like [`for_each_chunk`] for work measured in rows of `row_len` elements each: splits
/// `0..rows` so that every chunk covers at least `grain` elements.
pub fn for_each_row_chunk(rows: usize, row_len: usize, grain: usize, f: impl Fn(Range<usize>) + Sync) {
    let row_grain = grain.div_ceil(row_len.max(1)).max(1);
    if rows <= row_grain || rows < 2 {
        if rows > 0 {
            f(0..rows);
        }
        return;
    }
    let threads = rayon::current_num_threads();
    if threads <= 1 {
        f(0..rows);
        return;
    }
    let chunks = rows.div_ceil(row_grain).min(threads * CHUNKS_PER_THREAD);
    let step = rows.div_ceil(chunks);
    let chunks = rows.div_ceil(step);
    for_each_index(chunks, &|c| f(c * step..((c + 1) * step).min(rows)));
}

/// Calls `f(i)` once for every `i` in `0..n`, spread over the calling thread and up to
/// `rayon::current_num_threads() - 1` rayon tasks that draw indices from one counter. The
/// call returns when every `f(i)` has returned; a panic in any of them is resumed on the
/// calling thread once all have stopped. Runs inline when there is one index or one thread.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use tensor_kernels_cpu::parallel::for_each_index;
/// let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
/// for_each_index(100, &|i| {
///     hits[i].fetch_add(1, Ordering::Relaxed);
/// });
/// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
/// ```
pub fn for_each_index(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let helpers = rayon::current_num_threads().saturating_sub(1).min(n.saturating_sub(1));
    if helpers == 0 {
        (0..n).for_each(f);
        return;
    }
    // SAFETY: the lifetime is erased only for the helpers, which dereference the pointer
    // only after entering (`Shared::help`: incrementing `state` while it is not CLOSED)
    // and before leaving (decrementing it); `Join` (below, also run on unwinding) sets
    // CLOSED and waits for every entered helper to leave before this frame, and so `f`,
    // goes away.
    let job: *const (dyn Fn(usize) + Sync + 'static) =
        unsafe { std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), _>(f as *const _) };
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        n,
        state: AtomicUsize::new(0),
        job: JobPtr(job),
        panic: Mutex::new(None),
    });
    for _ in 0..helpers {
        let s = Arc::clone(&shared);
        rayon::spawn(move || s.help());
    }
    let join = Join(&shared);
    shared.drain(f);
    drop(join);
    let payload = shared.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(p) = payload {
        resume_unwind(p);
    }
}

/// Set in [`Shared::state`] once the caller stops admitting helpers.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// A type-erased pointer to the caller's closure.
struct JobPtr(*const (dyn Fn(usize) + Sync + 'static));

// SAFETY: the closure is `Sync`, and it is only called through this pointer while the
// caller keeps it alive (see `for_each_index`).
unsafe impl Send for JobPtr {}
// SAFETY: as above.
unsafe impl Sync for JobPtr {}

/// What the caller and its helpers share; outlives the call when a helper starts late.
struct Shared {
    /// Next index to hand out.
    next: AtomicUsize,
    /// Indices in all.
    n: usize,
    /// Helpers inside the job, plus [`CLOSED`].
    state: AtomicUsize,
    /// The caller's closure; valid while `state` is not closed or a helper is inside.
    job: JobPtr,
    /// The first panic of a helper, resumed by the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Shared {
    /// Calls `f` on indices from the counter until they run out.
    fn drain(&self, f: &(dyn Fn(usize) + Sync)) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            f(i);
        }
    }

    /// A helper task: joins unless the caller has closed the job, then drains.
    fn help(&self) {
        let before = self.state.fetch_add(1, Ordering::Acquire);
        if before & CLOSED == 0 {
            // SAFETY: entered before the caller closed: the caller waits for this helper's
            // `fetch_sub` below before the closure goes away.
            let job = unsafe { &*self.job.0 };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| self.drain(job))) {
                self.next.store(self.n, Ordering::Relaxed);
                self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(p);
            }
        }
        self.state.fetch_sub(1, Ordering::Release);
    }
}

/// Closes a job to late helpers and waits for the entered ones, also when unwinding.
struct Join<'a>(&'a Shared);

impl Drop for Join<'_> {
    fn drop(&mut self) {
        let shared = self.0;
        // Stop handing out indices (a no-op when they ran out) so a panic exits quickly.
        shared.next.store(shared.n, Ordering::Relaxed);
        shared.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while shared.state.load(Ordering::Acquire) & !CLOSED != 0 {
            if spins < 1 << 14 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}
