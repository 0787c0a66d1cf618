//! Which storages the current thread holds locked, so that taking a lock the thread
//! already holds is an [`Error::Locked`] instead of a hang (as `RefCell` reports a second
//! mutable borrow): `let g = t.storage().read()?; t.add_(&one)?` would otherwise wait
//! forever for its own read guard.
//!
//! Guards are `!Send`, so a guard is always released on the thread that took it.

use crate::storage::Access;
use crate::Error;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::mem::ManuallyDrop;

/// One locked storage: its id, the access and how many guards of it this thread holds.
type Entry = (usize, Access, u32);

thread_local! {
    // `ManuallyDrop`: a thread-local without a destructor is a plain TLS access (no
    // registration, no state check) on the hot path. Only a table that once outgrew its 8
    // inline entries (8 guards held at once by one thread) leaks its buffer at thread exit.
    static HELD: RefCell<ManuallyDrop<SmallVec<[Entry; 8]>>> =
        const { RefCell::new(ManuallyDrop::new(SmallVec::new_const())) };
}

/// The access this thread holds on storage `id`, if any.
#[inline]
pub(super) fn held(id: usize) -> Option<Access> {
    HELD.with(|h| {
        let h = h.borrow();
        if h.is_empty() {
            return None;
        }
        h.iter().find(|e| e.0 == id).map(|e| e.1)
    })
}

/// Records one more guard of `access` on `id`.
#[inline]
pub(super) fn acquire(id: usize, access: Access) {
    acquire_many(std::iter::once((id, access)));
}

/// Records that one guard on `id` was dropped.
#[inline]
pub(super) fn release(id: usize) {
    release_many(std::iter::once(id));
}

/// True when this thread holds any guard (the table is not empty): only then can a lock
/// it asks for be one it already holds.
#[inline]
pub(super) fn holds_any() -> bool {
    HELD.with(|h| !h.borrow().is_empty())
}

/// Records one more guard of each `(id, access)` (a lock set's storages, each once).
/// Returns whether the table was empty before (the set is then its only content until
/// it is dropped: see [`release_alone`]).
#[inline]
pub(super) fn acquire_many(entries: impl Iterator<Item = (usize, Access)>) -> bool {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_empty() {
            // The usual case: this thread held nothing, so every entry is new.
            for (id, access) in entries {
                h.push((id, access, 1));
            }
            return true;
        }
        for (id, access) in entries {
            match h.iter_mut().find(|e| e.0 == id) {
                Some(e) => e.2 += 1,
                None => h.push((id, access, 1)),
            }
        }
        false
    })
}

/// Forgets a set of storages (`ids`) recorded into an empty table: when the table still
/// holds just as many entries, each once, it is emptied at once (the usual case: any
/// lock taken meanwhile on this thread — work a rayon join ran here — is released by now);
/// otherwise each of `ids` is released as [`release_many`] does.
#[inline]
pub(super) fn release_alone(ids: impl ExactSizeIterator<Item = usize>) {
    let _ = HELD.try_with(|h| {
        let mut h = h.borrow_mut();
        if h.len() == ids.len() && h.iter().all(|e| e.2 == 1) {
            h.clear();
            return;
        }
        release_in(&mut h, ids);
    });
}

/// Records that one guard on each of `ids` was dropped.
#[inline]
pub(super) fn release_many(ids: impl Iterator<Item = usize>) {
    // `try_with`: a set dropped during thread teardown finds the table gone; nothing to do.
    let _ = HELD.try_with(|h| release_in(&mut h.borrow_mut(), ids));
}

/// One guard fewer on each of `ids` in the table `h`.
#[inline]
fn release_in(h: &mut SmallVec<[Entry; 8]>, ids: impl Iterator<Item = usize>) {
    for id in ids {
        if let Some(i) = h.iter().position(|e| e.0 == id) {
            h[i].2 -= 1;
            if h[i].2 == 0 {
                h.swap_remove(i);
            }
        }
    }
}

/// The error for `op` wanting `want` on a storage this thread already holds as `have`.
pub(super) fn reentrant(op: &'static str, want: Access, have: Access, why: &str) -> Error {
    let name = |a: Access| if a == Access::Read { "read" } else { "write" };
    Error::Locked {
        op,
        msg: format!(
            "needs {} access to a storage this thread already holds locked for {} (a StorageRead/StorageWrite guard is alive); {why}; drop the guard before the call",
            name(want),
            name(have)
        ),
    }
}
