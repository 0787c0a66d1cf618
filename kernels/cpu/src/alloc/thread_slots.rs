//! Per-thread slots of the process-wide cache for small blocks: each thread parks at most one
//! freed block per small size class (≤ [`SLOT_MAX`] bytes, so ≤ 17 KiB a thread) and takes it
//! back without the cache's lock — the allocation and the free of a small op's output then
//! cost no atomic operation on the cache. Blocks parked here are not in the cache's counts
//! (`bytes_cached`), `empty` reaches only the calling thread's slots, and a thread's slots
//! are freed when it exits.

use super::{raw_free, Block};
use std::cell::RefCell;
use tensor_core::CPU_ALIGN;

/// Size classes up to this many bytes (the 64-byte steps) have a slot per thread.
pub(super) const SLOT_MAX: usize = 1024;

/// One slot per size class `64, 128, ..., SLOT_MAX`.
struct Slots([Option<Block>; SLOT_MAX / CPU_ALIGN]);

impl Drop for Slots {
    fn drop(&mut self) {
        for (i, slot) in self.0.iter_mut().enumerate() {
            if let Some(b) = slot.take() {
                // SAFETY: a parked block came from `raw_alloc` of its slot's class and
                // nothing else references it.
                unsafe { raw_free(b, class_of(i)) };
            }
        }
    }
}

thread_local! {
    static SLOTS: RefCell<Slots> = const { RefCell::new(Slots([const { None }; SLOT_MAX / CPU_ALIGN])) };
}

/// The slot of `class` (a size class: a multiple of 64 from 64 up), if it has one.
fn slot_of(class: usize) -> Option<usize> {
    (CPU_ALIGN..=SLOT_MAX).contains(&class).then(|| class / CPU_ALIGN - 1)
}

/// The class of slot `i`.
fn class_of(i: usize) -> usize {
    (i + 1) * CPU_ALIGN
}

/// This thread's parked block of `class`, if it has one.
pub(super) fn take(class: usize) -> Option<Block> {
    let i = slot_of(class)?;
    SLOTS.try_with(|s| s.borrow_mut().0[i].take()).ok().flatten()
}

/// Parks `block` (of `class`) in this thread's slot; returns it when the slot is taken, the
/// class has none, or the thread is exiting.
pub(super) fn put(block: Block, class: usize) -> Option<Block> {
    let mut block = Some(block);
    if let Some(i) = slot_of(class) {
        let _ = SLOTS.try_with(|s| {
            let slot = &mut s.borrow_mut().0[i];
            if slot.is_none() {
                *slot = block.take();
            }
        });
    }
    block
}

/// Frees this thread's parked blocks.
pub(super) fn flush() {
    let _ = SLOTS.try_with(|s| {
        let parked = std::mem::replace(&mut *s.borrow_mut(), Slots([const { None }; SLOT_MAX / CPU_ALIGN]));
        drop(parked);
    });
}
