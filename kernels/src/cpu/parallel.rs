//! The rayon split shared by the CPU engines: work is cut into contiguous index ranges only
//! above a grain, so small calls run inline on the calling thread with no thread cost.

use std::ops::Range;

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
/// use tensor_kernels::cpu::parallel::for_each_chunk;
/// let sum = AtomicUsize::new(0);
/// for_each_chunk(1_000_000, 32 * 1024, |r| {
///     sum.fetch_add(r.map(|i| i % 7).sum::<usize>(), Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), (0..1_000_000usize).map(|i| i % 7).sum());
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
    use rayon::prelude::*;
    (0..chunks).into_par_iter().for_each(|c| f(c * step..((c + 1) * step).min(total)));
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
    use rayon::prelude::*;
    (0..chunks).into_par_iter().for_each(|c| f(c * step..((c + 1) * step).min(rows)));
}
