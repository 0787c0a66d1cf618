//! The locks of every operand of one call ([`LockSet`]), taken in one deadlock-free order
//! (by storage id), duplicates merged, and recorded once in the thread's held table.

use super::{held, DataPtr, Storage};
use crate::Result;
use smallvec::SmallVec;
use std::sync::{RwLockReadGuard, RwLockWriteGuard};

/// Access wanted on one operand of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
}

/// The locks of every operand of one call, taken in a deadlock-free order.
pub struct LockSet<'a> {
    /// Each locked storage's id and buffer address (null for an empty buffer).
    bases: SmallVec<[(usize, *mut u8); 4]>,
    /// The guards (recorded in the held table by the set, not by themselves). Inline for
    /// the usual ≤ 4 operands of a call: no heap allocation, and no enum to move around.
    reads: SmallVec<[RwLockReadGuard<'a, Option<DataPtr>>; 4]>,
    writes: SmallVec<[RwLockWriteGuard<'a, Option<DataPtr>>; 2]>,
    /// Whether the held table was empty when the set was recorded in it.
    alone: bool,
}

impl Drop for LockSet<'_> {
    fn drop(&mut self) {
        // The table forgets the set first; the guards (fields) unlock right after.
        let ids = self.bases.iter().map(|(id, _)| *id);
        if self.alone {
            held::release_alone(ids);
        } else {
            held::release_many(ids);
        }
    }
}

impl LockSet<'_> {
    /// Base address of the buffer of `storage`, which must be one of the locked ones.
    /// Writable only if it was locked for [`Access::Write`].
    pub fn base(&self, storage: &Storage) -> *mut u8 {
        let id = storage.id();
        self.bases.iter().find(|(b, _)| *b == id).map_or(std::ptr::null_mut(), |(_, p)| *p)
    }
}

/// Locks every storage in `ops` (merging duplicates: write wins) in address order.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{Storage, DType, Device, lock_many, Access};
/// let a = Storage::new_lazy(DType::F32, 4, Device::Cpu).unwrap();
/// let locks = lock_many(&[(&a, Access::Read), (&a, Access::Write)]).unwrap();
/// assert!(!locks.base(&a).is_null());
/// ```
pub fn lock_many<'a>(ops: &[(&'a Storage, Access)]) -> Result<LockSet<'a>> {
    lock_many_for("lock_many", ops)
}

/// [`lock_many`] with `op` named in its errors (e.g. a lock this thread already holds).
///
/// The held table (re-entry detection) is consulted once for the whole set, and only when
/// this thread holds some guard; the set is recorded in it once, after every lock is taken.
#[inline(always)]
pub fn lock_many_for<'a>(op: &'static str, ops: &[(&'a Storage, Access)]) -> Result<LockSet<'a>> {
    let Some(&(first, _)) = ops.first() else { return lock_sorted(op, &[]) };
    // The handful of operands of a call: merged and ordered in a fixed array.
    const INLINE: usize = 4;
    if ops.len() <= INLINE {
        let mut want = [(0, first, Access::Read); INLINE];
        let n = merge_in_order(ops, &mut want);
        return lock_sorted(op, &want[..n]);
    }
    let mut want = vec![(0, first, Access::Read); ops.len()];
    let n = merge_in_order(ops, &mut want);
    lock_sorted(op, &want[..n])
}

/// Writes `ops` into `want` (at least `ops.len()` long) by storage id, ascending, one entry
/// per storage (write wins over read); returns how many entries there are.
fn merge_in_order<'a>(ops: &[(&'a Storage, Access)], want: &mut [(usize, &'a Storage, Access)]) -> usize {
    let mut n = 0;
    for &(s, a) in ops {
        let id = s.id();
        if let Some(w) = want[..n].iter_mut().find(|w| w.0 == id) {
            if a == Access::Write {
                w.2 = Access::Write;
            }
            continue;
        }
        want[n] = (id, s, a);
        let mut j = n;
        while j > 0 && want[j - 1].0 > id {
            want.swap(j - 1, j);
            j -= 1;
        }
        n += 1;
    }
    n
}

/// Locks `want` (distinct storages, ascending by id) in that order.
#[inline(always)]
fn lock_sorted<'a>(op: &'static str, want: &[(usize, &'a Storage, Access)]) -> Result<LockSet<'a>> {
    let holds_any = held::holds_any();
    let mut set = LockSet { bases: SmallVec::new(), reads: SmallVec::new(), writes: SmallVec::new(), alone: false };
    for &(id, s, a) in want {
        let have = if holds_any { held::held(id) } else { None };
        let data = match a {
            Access::Read => {
                let g = s.read_raw(op, have).inspect_err(|_| forget_unrecorded(&mut set))?;
                let p = g.as_ref().map_or(std::ptr::null_mut(), |d| d.as_ptr());
                set.reads.push(g);
                p
            }
            Access::Write => {
                let g = s.write_raw(op, have).inspect_err(|_| forget_unrecorded(&mut set))?;
                let p = g.as_ref().map_or(std::ptr::null_mut(), |d| d.as_ptr());
                set.writes.push(g);
                p
            }
        };
        set.bases.push((id, data));
    }
    set.alone = held::acquire_many(want.iter().map(|&(id, _, a)| (id, a)));
    Ok(set)
}

/// Empties the ids of a set not yet recorded in the held table (a lock failed midway), so
/// its drop releases the guards taken so far without touching the table.
fn forget_unrecorded(set: &mut LockSet<'_>) {
    set.bases.clear();
}
