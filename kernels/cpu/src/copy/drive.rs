//! Loop drivers shared by the same-dtype and casting copies: they cut a canonical plan into
//! runs (rows) or transposed planes, split them across rayon above the grain, and call a
//! per-run kernel with element offsets.

use super::walk::Walker;
use crate::parallel::{for_each_chunk, for_each_row_chunk, GRAIN};
use std::ops::Range;
use tensor_core::iter::IterPlan;

/// Destination bytes below which a copy or fill runs on the calling thread, and the least
/// each parallel chunk gets: waking a rayon worker costs several microseconds, about what
/// moving 128 KiB through L2 costs (`docs/performance-log.md`, “From the code comments”).
const MIN_TASK_BYTES: usize = 256 << 10;

/// The parallel grain, in elements of `elem_bytes` bytes, of the copy and fill loops: the
/// shared [`GRAIN`], raised so that a chunk holds at least [`MIN_TASK_BYTES`].
pub(crate) fn grain_for(elem_bytes: usize) -> usize {
    GRAIN.max(MIN_TASK_BYTES / elem_bytes.max(1))
}

/// Calls `run(dst_off, src_off, len)` for every inner run of `plan` (offsets in elements,
/// inner strides `plan.inner_strides()`), in parallel above `grain` elements. A plan with a
/// single run is split inside the run.
pub(crate) fn for_each_run(plan: &IterPlan, grain: usize, run: impl Fn(isize, isize, usize) + Sync) {
    let n = plan.ndim();
    if n == 0 {
        run(0, 0, 1);
        return;
    }
    let inner = plan.shape[n - 1];
    let (di, si) = (plan.strides[0][n - 1], plan.strides[1][n - 1]);
    let rows = plan.outer_rows();
    if rows == 1 {
        for_each_chunk(inner, grain, |r: Range<usize>| {
            run(r.start as isize * di, r.start as isize * si, r.len());
        });
        return;
    }
    let oshape = &plan.shape[..n - 1];
    let (ods, oss) = (&plan.strides[0][..n - 1], &plan.strides[1][..n - 1]);
    for_each_row_chunk(rows, inner, grain, |r: Range<usize>| {
        let mut w = Walker::new(oshape, [ods, oss], r.start);
        for _ in r {
            let [od, os] = w.offsets();
            run(od, os, inner);
            w.advance();
        }
    });
}

/// Calls `plane(dst_off, src_off, drs, scs, rows, cols)` over the transposed planes of a
/// [`super::CopyClass::Transpose`] plan, one call per strip of up to `strip` plane columns
/// (source rows), in parallel above `grain` elements. In each plane
/// `dst[r * drs + c] = src[r + c * scs]` for `r < rows`.
pub(crate) fn for_each_strip(
    plan: &IterPlan,
    k: usize,
    strip: usize,
    grain: usize,
    plane: impl Fn(isize, isize, isize, isize, usize, Range<usize>) + Sync,
) {
    let last = plan.ndim() - 1;
    let (rows, cols) = (plan.shape[k], plan.shape[last]);
    let (drs, scs) = (plan.strides[0][k], plan.strides[1][last]);
    let outer_dims: Vec<usize> = (0..last).filter(|&d| d != k).collect();
    let oshape: Vec<usize> = outer_dims.iter().map(|&d| plan.shape[d]).collect();
    let ods: Vec<isize> = outer_dims.iter().map(|&d| plan.strides[0][d]).collect();
    let oss: Vec<isize> = outer_dims.iter().map(|&d| plan.strides[1][d]).collect();
    let strip = strip.max(1);
    let strips = cols.div_ceil(strip);
    let units = oshape.iter().product::<usize>() * strips;
    for_each_row_chunk(units, strip * rows, grain, |r: Range<usize>| {
        let mut w = Walker::new(&oshape, [&ods, &oss], r.start / strips);
        let mut current = r.start / strips;
        for u in r {
            while current < u / strips {
                w.advance();
                current += 1;
            }
            let [od, os] = w.offsets();
            let s = u % strips;
            plane(od, os, drs, scs, rows, s * strip..((s + 1) * strip).min(cols));
        }
    });
}

/// A raw pointer that may be shared with the rayon workers of one kernel call.
#[derive(Debug)]
pub(crate) struct SharedPtr<T>(*mut T);

impl<T> Clone for SharedPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedPtr<T> {}

// SAFETY: kernels hand disjoint element sets to different workers (every element of the
// destination is reached once; sources are only read), and the caller holds the storage
// locks for the whole call, so sharing the address is sound.
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    /// Wraps an address.
    pub(crate) fn new(p: *mut T) -> Self {
        SharedPtr(p)
    }
    /// The address (a method, so closures capture the whole `Sync` wrapper).
    #[inline(always)]
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}
