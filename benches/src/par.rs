//! Splitting STREAM loops over the worker threads exactly as tensor-ops splits its kernels
//! (`tensor_kernels::cpu::parallel`: rayon's pool plus the calling thread, the same grain
//! and chunks), so a same-run ratio compares the kernels, not two threading schemes.

use std::ops::Range;
use tensor_kernels::cpu::parallel::{for_each_chunk, GRAIN};

/// Worker threads used for the STREAM loops: rayon's pool size (`RAYON_NUM_THREADS`, else
/// one per logical CPU), which is what the kernels' split uses.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Calls `f` on disjoint ranges covering `0..n`, in parallel above the kernels' grain.
pub fn split(n: usize, f: impl Fn(Range<usize>) + Sync) {
    for_each_chunk(n, GRAIN, f);
}

/// A mutable slice that the disjoint ranges of [`split`] may each borrow on their own thread.
pub struct Disjoint<'a> {
    ptr: *mut f32,
    len: usize,
    _slice: std::marker::PhantomData<&'a mut [f32]>,
}

// SAFETY: `Disjoint` only hands out `&mut` sub-slices through `range`, whose contract
// requires callers to use ranges no other thread uses at the same time.
unsafe impl Sync for Disjoint<'_> {}

impl<'a> Disjoint<'a> {
    /// Wraps `slice` for the duration of a split.
    pub fn new(slice: &'a mut [f32]) -> Disjoint<'a> {
        Disjoint { ptr: slice.as_mut_ptr(), len: slice.len(), _slice: std::marker::PhantomData }
    }

    /// The elements `r` (panics when out of bounds).
    ///
    /// # Safety
    /// No other live borrow from this `Disjoint` overlaps `r` (the ranges of one `split`
    /// are disjoint).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn range(&self, r: Range<usize>) -> &mut [f32] {
        assert!(r.start <= r.end && r.end <= self.len, "range {r:?} outside 0..{}", self.len);
        // SAFETY: in bounds (checked); exclusive per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::{split, Disjoint};

    #[test]
    fn split_writes_every_element_once() {
        for n in [0, 1, 100, 1 << 20, (1 << 20) + 37] {
            let mut v = vec![0u8; n].into_iter().map(f32::from).collect::<Vec<f32>>();
            let d = Disjoint::new(&mut v);
            // SAFETY: split's ranges are disjoint.
            split(n, |r| unsafe { d.range(r) }.iter_mut().for_each(|x| *x += 1.0));
            assert!(v.iter().all(|&x| x == 1.0));
        }
    }
}
