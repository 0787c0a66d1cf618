//! A parallel stable sort of a permutation: chunks sorted on the crate's parallel helpers,
//! then merged pairwise, each round's merges in parallel (never `rayon::join`, which could
//! run a user's task needing the locks this call holds).

use super::Shared;
use crate::parallel::for_each_index;
use std::cmp::Ordering;

/// Below this many entries (or on one thread) the sort is the standard library's.
const PARALLEL_MIN: usize = 1 << 15;

/// Sorts `v` stably by `cmp`.
pub(super) fn stable_sort_by(v: &mut [i64], cmp: &(dyn Fn(&i64, &i64) -> Ordering + Sync)) {
    let n = v.len();
    let threads = rayon::current_num_threads();
    if n < PARALLEL_MIN || threads <= 1 {
        v.sort_by(cmp);
        return;
    }
    let chunks = (threads * 2).min(n / (PARALLEL_MIN / 4)).max(2);
    let step = n.div_ceil(chunks);
    let base = Shared(v.as_mut_ptr());
    for_each_index(chunks, &|c| {
        let (lo, hi) = ((c * step).min(n), ((c + 1) * step).min(n));
        // SAFETY: chunk `c` covers `lo..hi` of `v`, disjoint from every other chunk's, and
        // `v` outlives `for_each_index`.
        let part = unsafe { std::slice::from_raw_parts_mut(base.at(lo), hi - lo) };
        part.sort_by(cmp);
    });
    let mut buf = vec![0i64; n];
    let other = Shared(buf.as_mut_ptr());
    let (mut width, mut in_v) = (step, true);
    while width < n {
        let (src, dst) = if in_v { (base, other) } else { (other, base) };
        for_each_index(n.div_ceil(2 * width), &|k| {
            let lo = k * 2 * width;
            let (mid, hi) = ((lo + width).min(n), (lo + 2 * width).min(n));
            // SAFETY: pair `k` reads `lo..hi` of the source and writes `lo..hi` of the other
            // buffer (both `n` long): disjoint from every other pair's range, and the source
            // is not written during the round.
            let (a, b, out) = unsafe {
                (
                    std::slice::from_raw_parts(src.at(lo), mid - lo),
                    std::slice::from_raw_parts(src.at(mid), hi - mid),
                    std::slice::from_raw_parts_mut(dst.at(lo), hi - lo),
                )
            };
            merge(a, b, out, cmp);
        });
        in_v = !in_v;
        width *= 2;
    }
    if !in_v {
        v.copy_from_slice(&buf);
    }
}

/// Merges sorted `a` and `b` into `out` (`a`'s element first on ties: stable).
fn merge(a: &[i64], b: &[i64], out: &mut [i64], cmp: &(dyn Fn(&i64, &i64) -> Ordering + Sync)) {
    let (mut i, mut j) = (0, 0);
    for o in out.iter_mut() {
        let take_a = j == b.len() || (i < a.len() && cmp(&a[i], &b[j]) != Ordering::Greater);
        if take_a {
            *o = a[i];
            i += 1;
        } else {
            *o = b[j];
            j += 1;
        }
    }
}
