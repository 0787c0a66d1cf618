//! Splitting STREAM loops over the worker threads exactly as tensor-ops splits its kernels
//! (`tensor_kernels_cpu::parallel`: rayon's pool plus the calling thread, the same grain
//! and chunks), so a same-run ratio compares the kernels, not two threading schemes.

use std::ops::Range;
use tensor_kernels_cpu::parallel::{for_each_chunk, GRAIN};

/// Worker threads used for the STREAM loops: rayon's pool size (`RAYON_NUM_THREADS`, else
/// one per logical CPU), which is what the kernels' split uses.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Calls `f(range, &mut dst[range])` on disjoint ranges covering `dst`, in parallel above
/// the kernels' grain.
pub fn split_mut(dst: &mut [f32], f: impl Fn(Range<usize>, &mut [f32]) + Sync) {
    split_mut_grain(dst, GRAIN, f)
}

/// [`split_mut`] with chunks of about `grain` elements (the dim-0 read loop splits its
/// columns into one block per thread).
pub fn split_mut_grain(dst: &mut [f32], grain: usize, f: impl Fn(Range<usize>, &mut [f32]) + Sync) {
    let (ptr, len) = (SyncPtr(dst.as_mut_ptr()), dst.len());
    for_each_chunk(len, grain, |r| {
        // SAFETY: `for_each_chunk` hands out disjoint ranges within `0..len`, so each
        // sub-slice is in bounds and borrowed by one thread only, while `dst` stays
        // mutably borrowed by this call.
        let d = unsafe { std::slice::from_raw_parts_mut(ptr.get().add(r.start), r.len()) };
        f(r, d)
    });
}

/// A pointer the split's threads may share (each uses its own disjoint range).
#[derive(Clone, Copy)]
struct SyncPtr(*mut f32);

// SAFETY: only dereferenced in `split_mut`, on disjoint ranges.
unsafe impl Sync for SyncPtr {}

impl SyncPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::split_mut;

    #[test]
    fn split_writes_every_element_once() {
        for n in [0, 1, 100, 1 << 20, (1 << 20) + 37] {
            let mut v = vec![0.0f32; n];
            split_mut(&mut v, |r, d| {
                assert_eq!(r.len(), d.len());
                d.iter_mut().for_each(|x| *x += 1.0)
            });
            assert!(v.iter().all(|&x| x == 1.0));
        }
    }
}
