//! COO steps: scatter into dense, the coalesce steps (sort, segments, unique indices,
//! segment sums) and the CSR row-pointer conversions.

use super::{elems, elems_mut, input, output, Shared, SparseElem};
use crate::copy::stream::StreamLine;
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

/// `sparse_coo_to_dense`: zeros, then `out[indices[:, j]] += values[j]` for every entry.
/// The output's contents on entry are unspecified (the core passes it uninitialised).
///
/// A coalesced tensor's positions increase with the entry number, so workers build the
/// output a 64-byte line at a time (zeros, and the entries landing in the line) and write
/// each line once, streamed past the cache for a large output: no memset pass, and no
/// read-for-ownership of the lines. Otherwise (duplicates, or a tiny tensor) the output is
/// zeroed and the entries are added in order.
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
    let coalesced = call.params.first().is_some_and(|p| p.to::<bool>());
    if coalesced && row > 0 && dense.len() >= 2 * GRAIN {
        let scattered = if sd == 2 {
            // The common matrix case, without the loop over dims.
            let (rows, cols) = (idx[..nnz].as_ref(), &idx[nnz..]);
            let (r, c) = (sizes[0] as u64, sizes[1] as u64);
            let matrix = |j: usize| {
                let (i, k) = (rows[j] as u64, cols[j] as u64);
                (i < r && k < c).then_some(i as usize * c as usize + k as usize)
            };
            line_scatter(dense, values, row, nnz, &matrix)
        } else {
            line_scatter(dense, values, row, nnz, &position)
        };
        if scattered {
            return Ok(());
        }
    }
    zero(dense);
    for j in 0..nnz {
        let p = position(j).ok_or_else(|| {
            Error::out_of_bounds(op, format!("entry {j} has an index outside the sparse sizes {sizes:?}"))
        })?;
        for (o, &v) in dense[p * row..(p + 1) * row].iter_mut().zip(&values[j * row..(j + 1) * row]) {
            *o = o.add(v);
        }
    }
    Ok(())
}

/// Zeros `dense`, in parallel.
fn zero<T: SparseElem>(dense: &mut [T]) {
    let base = Shared(dense.as_mut_ptr());
    for_each_chunk(dense.len(), GRAIN, |range| {
        // SAFETY: the chunks are disjoint ranges of `dense`.
        unsafe { std::slice::from_raw_parts_mut(base.at(range.start), range.len()) }.fill(T::ZERO);
    });
}

/// Output lines built per batch: 4 KiB, so the staging buffer stays in L1 and its scalar
/// writes have left the store buffer before the lines are loaded to be streamed out.
const BATCH_LINES: usize = 64;

/// The coalesced scatter: the output's 64-byte lines are split among workers; each finds its
/// first entry by binary search (positions increase with the entry number), then per batch
/// of lines zeros a staging buffer, adds the entries (or parts of entries) landing in it
/// and writes the lines out (non-temporal stores for a large output). `false` (the output
/// then unspecified) when an entry is out of range or out of order: the caller takes the
/// ordered path, which names the entry. Every write lands in the worker's own lines.
fn line_scatter<T: SparseElem>(
    dense: &mut [T],
    values: &[T],
    row: usize,
    nnz: usize,
    position: &(impl Fn(usize) -> Option<usize> + Sync),
) -> bool {
    let (total, size) = (dense.len(), std::mem::size_of::<T>());
    let per_line = 64 / size;
    // Lines follow the 64-byte boundaries of memory: element `e` is in line
    // `(e + shift) / per_line`; the first and last lines may be partial.
    let head = ((64 - (dense.as_ptr() as usize & 63)) & 63) / size;
    let shift = (per_line - head % per_line) % per_line;
    let lines = (total + shift).div_ceil(per_line);
    let bounds = |l: usize| ((l * per_line).saturating_sub(shift), ((l + 1) * per_line - shift).min(total));
    let stream = total * size >= crate::copy::stream::NT_THRESHOLD;
    let base = Shared(dense.as_mut_ptr());
    let failed = AtomicBool::new(false);
    // Where entry `j` ends, in elements; an out-of-range entry sorts last.
    let end_of = |j: usize| position(j).map_or(usize::MAX, |p| p * row + row);
    // Entry `j` covers elements `s..e` (found once per entry; `None` past the last).
    let span = |j: usize| (j < nnz).then(|| position(j).map(|p| (p * row, p * row + row)));
    for_each_chunk(lines, GRAIN / per_line, |range| {
        let first = bounds(range.start).0;
        let (mut lo, mut hi) = (0usize, nnz);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if end_of(mid) <= first {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (mut j, mut done) = (lo, 0usize);
        let mut cur = span(j);
        // The staging buffer, its first element on a 64-byte boundary.
        let mut storage = vec![T::ZERO; (BATCH_LINES + 1) * per_line];
        let skip = storage.as_ptr().align_offset(64).min(per_line);
        let buf = &mut storage[skip..skip + BATCH_LINES * per_line];
        let mut l = range.start;
        'batches: while l < range.end {
            let last = (l + BATCH_LINES).min(range.end);
            let (start, end) = (bounds(l).0, bounds(last - 1).1);
            // Element `start` sits at the offset of its line's boundary in the buffer.
            let lead = (start + shift) % per_line;
            let staged = &mut buf[lead..lead + end - start];
            staged.fill(T::ZERO);
            if row == 1 {
                // One element per entry: the tight loop (the entry's position is found once,
                // except for the one that ends the batch).
                while j < nnz {
                    let Some(p) = position(j) else {
                        failed.store(true, AtomicOrdering::Relaxed);
                        break 'batches;
                    };
                    if p >= end {
                        break;
                    }
                    if p < done.max(start) {
                        failed.store(true, AtomicOrdering::Relaxed);
                        break 'batches;
                    }
                    staged[p - start] = T::ZERO.add(values[j]);
                    (done, j) = (p + 1, j + 1);
                }
            } else {
                loop {
                    let (s, e) = match cur {
                        None => break,
                        Some(None) => {
                            failed.store(true, AtomicOrdering::Relaxed);
                            break 'batches;
                        }
                        Some(Some(se)) => se,
                    };
                    if s >= end {
                        break;
                    }
                    if s < done {
                        failed.store(true, AtomicOrdering::Relaxed);
                        break 'batches;
                    }
                    let (from, to) = (s.max(start), e.min(end));
                    let src = &values[j * row + from - s..j * row + to - s];
                    for (o, &v) in staged[from - start..to - start].iter_mut().zip(src) {
                        *o = o.add(v);
                    }
                    if e > end {
                        break; // the entry goes on in the next batch
                    }
                    (done, j) = (e, j + 1);
                    cur = span(j);
                }
            }
            for k in l..last {
                let (a, b) = bounds(k);
                let (dst, src) = (base.at(a), staged[a - start..].as_ptr());
                if stream && b - a == per_line {
                    // SAFETY: a full line starts on a 64-byte boundary (`shift`), lies inside
                    // `dense` (`b <= total`) and belongs to this worker alone; its staged copy
                    // is 64 bytes at a 64-byte boundary of the buffer (`lead`); SSE2 is
                    // baseline.
                    unsafe { crate::copy::stream::Sse2Lines::stream_line(dst.cast(), src.cast()) };
                } else {
                    // SAFETY: `b - a` elements inside `dense` (`b <= total`), this worker's
                    // alone, from the staged line.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst, b - a) };
                }
            }
            l = last;
        }
        crate::copy::stream::store_fence();
    });
    !failed.into_inner()
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
