//! COO steps: scatter into dense, the coalesce steps (sort, segments, unique indices,
//! segment sums) and the CSR row-pointer conversions.

use super::{elems, elems_mut, input, output, Shared, SparseElem};
use crate::parallel::{for_each_chunk, for_each_index};
use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use tensor_core::registry::PreparedCall;
use tensor_core::{Error, Result};

/// Elements per parallel chunk (as the map engine's split).
pub(super) const GRAIN: usize = 32 * 1024;

/// How many sorted entries ahead the gathers through `perm` are prefetched (the
/// permutation is random, so the hardware prefetchers cannot follow it; the loops would
/// otherwise wait on one miss at a time).
const AHEAD: usize = 16;

/// Asks for the index column `perm[j]` of `idx` (`[sd, nnz]`) and, when `row > 0`, its
/// values row (a hint: any address is allowed).
#[inline(always)]
fn prefetch_entry<T>(idx: &[i64], sd: usize, nnz: usize, perm: &[i64], j: usize, values: &[T], row: usize) {
    if let Some(&p) = perm.get(j) {
        for d in 0..sd {
            crate::map::prefetch(idx.as_ptr().wrapping_add(d * nnz).wrapping_add(p as usize));
        }
        if row > 0 {
            crate::map::prefetch(values.as_ptr().wrapping_add((p as usize).wrapping_mul(row)));
        }
    }
}

/// Row-major order of index columns `a` and `b` of `idx` (`[sd, nnz]`).
fn cmp_columns(idx: &[i64], sd: usize, nnz: usize, a: usize, b: usize) -> Ordering {
    (0..sd).map(|d| idx[d * nnz + a].cmp(&idx[d * nnz + b])).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
}

/// `sparse_coo_to_dense`: `out[indices[:, j]] += values[j]` for every entry.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn to_dense<T: SparseElem>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (ind, val, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (idx, values, dense) = unsafe { (elems::<i64>(op, ind)?, elems::<T>(op, val)?, elems_mut::<T>(op, out)?) };
    let (sd, nnz) = (ind.shape[0], ind.shape[1]);
    let sizes = &out.shape[..sd];
    let row: usize = out.shape[sd..].iter().product();
    // Row-major strides of the sparse dims, in rows of `row` elements.
    let mut steps = vec![1usize; sd];
    for d in (0..sd.saturating_sub(1)).rev() {
        steps[d] = steps[d + 1] * sizes[d + 1];
    }
    let position = |j: usize| -> Option<usize> {
        (0..sd).try_fold(0usize, |acc, d| {
            let i = idx[d * nnz + j];
            (i >= 0 && (i as u64) < sizes[d] as u64).then(|| acc + i as usize * steps[d])
        })
    };
    let bad = |j: usize| Error::out_of_bounds(op, format!("entry {j} has an index outside the sparse sizes {sizes:?}"));
    let coalesced = call.params.first().is_some_and(|p| p.to::<bool>());
    if !coalesced || nnz * row < 2 * GRAIN {
        for j in 0..nnz {
            let p = position(j).ok_or_else(|| bad(j))?;
            for (o, &v) in dense[p * row..(p + 1) * row].iter_mut().zip(&values[j * row..(j + 1) * row]) {
                *o = o.add(v);
            }
        }
        return Ok(());
    }
    // Coalesced: every entry has its own position, so entries scatter in parallel.
    let base = Shared(dense.as_mut_ptr());
    let failed = AtomicBool::new(false);
    for_each_chunk(nnz, GRAIN.div_ceil(row.max(1)), |range| {
        for j in range {
            // The writes land on random lines: ask for the line AHEAD entries on now.
            if j + AHEAD < nnz
                && let Some(q) = position(j + AHEAD)
            {
                crate::map::prefetch(base.at(q * row));
            }
            let Some(p) = position(j) else {
                failed.store(true, AtomicOrdering::Relaxed);
                return;
            };
            // SAFETY: `p < prod(sizes)` (checked by `position`), so the row lies inside the
            // output; the indices are unique (coalesced), so no other worker writes it.
            let dst = unsafe { std::slice::from_raw_parts_mut(base.at(p * row), row) };
            for (o, &v) in dst.iter_mut().zip(&values[j * row..(j + 1) * row]) {
                *o = o.add(v);
            }
        }
    });
    if failed.into_inner() {
        return Err(Error::out_of_bounds(op, format!("an entry has an index outside the sparse sizes {sizes:?}")));
    }
    Ok(())
}

/// `sparse_coo_sort`: the stable row-major permutation of the index columns.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn sort(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (ind, out) = (input(call, 0)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (idx, perm) = unsafe { (elems::<i64>(op, ind)?, elems_mut::<i64>(op, out)?) };
    let (sd, nnz) = (ind.shape[0], ind.shape[1]);
    // Index columns that pack into 64 bits beside the entry number: a radix sort.
    if let Some(p) = super::radix::sorted_perm(idx, sd, nnz) {
        perm.copy_from_slice(&p);
        return Ok(());
    }
    for_each_chunk(nnz, GRAIN, {
        let base = Shared(perm.as_mut_ptr());
        move |range| {
            for j in range {
                // SAFETY: `j < nnz`, the output's length; chunks are disjoint.
                unsafe { *base.at(j) = j as i64 };
            }
        }
    });
    if sd == 1 {
        super::sort::stable_sort_by(perm, &|&a, &b| idx[a as usize].cmp(&idx[b as usize]));
    } else {
        super::sort::stable_sort_by(perm, &|&a, &b| cmp_columns(idx, sd, nnz, a as usize, b as usize));
    }
    Ok(())
}

/// `sparse_coo_segments`: 0 for the first sorted entry, +1 at each new index column.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn segments(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (ind, per, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (idx, perm, seg) = unsafe { (elems::<i64>(op, ind)?, elems::<i64>(op, per)?, elems_mut::<i64>(op, out)?) };
    let (sd, nnz) = (ind.shape[0], ind.shape[1]);
    check_perm(op, perm, nnz)?;
    // In parallel: each chunk marks where a new index column starts (1, else 0) and counts
    // them; then each chunk turns its marks into running counts from its offset.
    let chunks = (rayon::current_num_threads() * 4).min(nnz / GRAIN).max(1);
    let step = nnz.div_ceil(chunks);
    let mut starts = vec![0i64; chunks];
    let (base, counts) = (Shared(seg.as_mut_ptr()), Shared(starts.as_mut_ptr()));
    for_each_index(chunks, &|c| {
        let mut count = 0;
        for j in (c * step).min(nnz)..((c + 1) * step).min(nnz) {
            prefetch_entry::<i64>(idx, sd, nnz, perm, j + AHEAD, &[], 0);
            let new = j > 0 && cmp_columns(idx, sd, nnz, perm[j - 1] as usize, perm[j] as usize).is_ne();
            count += new as i64;
            // SAFETY: `j < nnz`, the output's length, in this chunk's range only.
            unsafe { *base.at(j) = new as i64 };
        }
        // SAFETY: chunk `c < chunks` writes only its own count.
        unsafe { *counts.at(c) = count };
    });
    let mut at = 0;
    for s in starts.iter_mut() {
        (*s, at) = (at, at + *s);
    }
    let starts = &starts;
    for_each_index(chunks, &|c| {
        let mut s = starts[c];
        for j in (c * step).min(nnz)..((c + 1) * step).min(nnz) {
            // SAFETY: as above, `j` is in this chunk's range of the output.
            unsafe {
                s += *base.at(j);
                *base.at(j) = s;
            }
        }
    });
    Ok(())
}

/// `Err` unless `perm` has `nnz` entries, each in `0..nnz`.
pub(super) fn check_perm(op: &'static str, perm: &[i64], nnz: usize) -> Result<()> {
    if perm.len() != nnz || perm.iter().any(|&p| p < 0 || p as usize >= nnz) {
        return Err(Error::invalid(op, format!("the permutation must hold {nnz} indices in 0..{nnz}")));
    }
    Ok(())
}

/// `Err` unless `seg` (one per sorted entry) starts at 0 and steps by 0 or 1 up to `n - 1`.
pub(super) fn check_segments(op: &'static str, seg: &[i64], n: usize) -> Result<()> {
    let steps_ok = seg.first().is_none_or(|&s| s == 0) && seg.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1);
    if !steps_ok || seg.last().is_some_and(|&s| s as usize + 1 != n) {
        return Err(Error::invalid(op, format!("the segments must count 0, 1, ... up to {}", n.saturating_sub(1))));
    }
    Ok(())
}

/// `sparse_coo_unique_indices`: each segment's index column (from its first entry).
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn unique_indices(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (ind, per, sg, out) = (input(call, 0)?, input(call, 1)?, input(call, 2)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (idx, perm, seg, uniq) =
        unsafe { (elems::<i64>(op, ind)?, elems::<i64>(op, per)?, elems::<i64>(op, sg)?, elems_mut::<i64>(op, out)?) };
    let (sd, nnz, n) = (ind.shape[0], ind.shape[1], out.shape[1]);
    check_perm(op, perm, nnz)?;
    check_segments(op, seg, n)?;
    let base = Shared(uniq.as_mut_ptr());
    for_each_chunk(nnz, GRAIN, |range| {
        for j in range {
            prefetch_entry::<i64>(idx, sd, nnz, perm, j + AHEAD, &[], 0);
            if j == 0 || seg[j] != seg[j - 1] {
                let (k, src) = (seg[j] as usize, perm[j] as usize);
                for d in 0..sd {
                    // SAFETY: `k < n` (the segments were checked to count up to n - 1),
                    // so `d * n + k` is inside the `[sd, n]` output; entry `j` is the
                    // first of segment `k`, the only one that writes its column.
                    unsafe { *base.at(d * n + k) = idx[d * nnz + src] };
                }
            }
        }
    });
    Ok(())
}

/// `sparse_coo_segment_sum`: `out[seg[j]] += values[perm[j]]` in sorted order, in parallel
/// over output segments.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn segment_sum<T: SparseElem>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (val, per, sg, out) = (input(call, 0)?, input(call, 1)?, input(call, 2)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (values, perm, seg, sums) =
        unsafe { (elems::<T>(op, val)?, elems::<i64>(op, per)?, elems::<i64>(op, sg)?, elems_mut::<T>(op, out)?) };
    let (nnz, n) = (val.shape[0], out.shape[0]);
    let row: usize = val.shape[1..].iter().product();
    check_perm(op, perm, nnz)?;
    check_segments(op, seg, n)?;
    let base = Shared(sums.as_mut_ptr());
    for_each_chunk(n, GRAIN.div_ceil(row.max(1)), |segs| {
        let lo = seg.partition_point(|&s| (s as usize) < segs.start);
        let hi = seg.partition_point(|&s| (s as usize) < segs.end);
        for j in lo..hi {
            prefetch_entry(&[], 0, 0, perm, j + AHEAD, values, row);
            let (k, src) = (seg[j] as usize, perm[j] as usize);
            // SAFETY: `k` is in this chunk's segments (`segs`, inside `0..n`: checked), so
            // its row is inside the output and written by this worker only.
            let dst = unsafe { std::slice::from_raw_parts_mut(base.at(k * row), row) };
            for (o, &v) in dst.iter_mut().zip(&values[src * row..(src + 1) * row]) {
                *o = o.add(v);
            }
        }
    });
    Ok(())
}

/// `sparse_rows_to_crow`: `crow[r]` = the number of entries in rows before `r` (the rows
/// are sorted).
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn rows_to_crow(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (rw, out) = (input(call, 0)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (rows, crow) = unsafe { (elems::<i64>(op, rw)?, elems_mut::<i64>(op, out)?) };
    if rows.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::invalid(op, "the row indices must be sorted (coalesce first)"));
    }
    for (r, c) in crow.iter_mut().enumerate() {
        *c = rows.partition_point(|&x| x < r as i64) as i64;
    }
    Ok(())
}

/// `sparse_crow_to_rows`: the row of each CSR entry.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn crow_to_rows(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (cr, out) = (input(call, 0)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (crow, rows) = unsafe { (elems::<i64>(op, cr)?, elems_mut::<i64>(op, out)?) };
    let nnz = rows.len() as i64;
    let valid = crow.first() == Some(&0) && crow.last() == Some(&nnz) && crow.windows(2).all(|w| w[0] <= w[1]);
    if !valid {
        return Err(Error::invalid(op, format!("crow_indices must rise from 0 to nnz = {nnz}")));
    }
    for (r, w) in crow.windows(2).enumerate() {
        rows[w[0] as usize..w[1] as usize].fill(r as i64);
    }
    Ok(())
}
