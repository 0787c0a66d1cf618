//! Pattern lookups and row gathers: where index columns sit in a coalesced pattern
//! (`sparse_coo_lookup`, a parallel binary search), and rows of a component picked by
//! position with zeros where absent (`sparse_gather_rows`). Together they align the values
//! of sparse operands on one pattern (the binary ops of `call::sparse`).

use super::coo::GRAIN;
use super::{elems, elems_mut, input, output, Shared};
use crate::parallel::for_each_chunk;
use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use tensor_core::registry::PreparedCall;
use tensor_core::{Element, Error, Result};

/// `sparse_coo_lookup`: each query column's one-based column number in the sorted, unique
/// `table`, 0 when absent.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn lookup(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (tab, qry, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (table, queries, found) =
        unsafe { (elems::<i64>(op, tab)?, elems::<i64>(op, qry)?, elems_mut::<i64>(op, out)?) };
    let (sd, m, n) = (tab.shape[0], tab.shape[1], qry.shape[1]);
    if qry.shape[0] != sd || found.len() != n {
        return Err(Error::shape(
            op,
            format!("table {:?}, queries {:?}, output {:?} disagree", tab.shape, qry.shape, out.shape),
        ));
    }
    // Row-major order of table column `t` against query column `q`.
    let cmp = |t: usize, q: usize| {
        (0..sd).map(|d| table[d * m + t].cmp(&queries[d * n + q])).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    };
    let base = Shared(found.as_mut_ptr());
    for_each_chunk(n, GRAIN / 8, |range| {
        for q in range {
            // Binary search over the sorted table (a `partition_point` on column numbers).
            let (mut lo, mut hi) = (0usize, m);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if cmp(mid, q) == Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let hit = if lo < m && cmp(lo, q) == Ordering::Equal { lo as i64 + 1 } else { 0 };
            // SAFETY: `q < n`, the output's length; chunks are disjoint.
            unsafe { *base.at(q) = hit };
        }
    });
    Ok(())
}

/// `sparse_gather_rows`: `out[j] = source[positions[j] - base]`, zeros where
/// `positions[j] < base`.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn gather_rows<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (src, pos, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (source, positions, rows) = unsafe { (elems::<T>(op, src)?, elems::<i64>(op, pos)?, elems_mut::<T>(op, out)?) };
    let m = src.shape.first().copied().unwrap_or(0);
    let row: usize = src.shape[1..].iter().product();
    let n = positions.len();
    if out.shape.first() != Some(&n) || out.shape[1..] != src.shape[1..] {
        return Err(Error::shape(
            op,
            format!("source {:?}, positions [{n}], output {:?} disagree", src.shape, out.shape),
        ));
    }
    let base = call.params.first().map_or(0, |p| p.to::<i64>());
    let (dst, failed) = (Shared(rows.as_mut_ptr()), AtomicBool::new(false));
    for_each_chunk(n, GRAIN.div_ceil(row.max(1)), |range| {
        for j in range {
            // SAFETY: row `j < n` lies inside the output; chunks are disjoint.
            let out_row = unsafe { std::slice::from_raw_parts_mut(dst.at(j * row), row) };
            let p = positions[j].wrapping_sub(base);
            if positions[j] < base {
                out_row.fill(T::default());
            } else if (p as u64) < m as u64 {
                let p = p as usize;
                out_row.copy_from_slice(&source[p * row..(p + 1) * row]);
            } else {
                failed.store(true, AtomicOrdering::Relaxed);
                return;
            }
        }
    });
    if failed.into_inner() {
        return Err(Error::out_of_bounds(op, format!("a position is past the {m} rows of the source (base {base})")));
    }
    Ok(())
}

/// `sparse_dense_gather`: the dense slice at each index column.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn dense_gather<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (den, ind, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (dense, idx, rows) = unsafe { (elems::<T>(op, den)?, elems::<i64>(op, ind)?, elems_mut::<T>(op, out)?) };
    let (sd, n) = (ind.shape[0], ind.shape[1]);
    if den.shape.len() < sd || out.shape.first() != Some(&n) || out.shape[1..] != den.shape[sd..] {
        return Err(Error::shape(
            op,
            format!("dense {:?}, indices {:?}, output {:?} disagree", den.shape, ind.shape, out.shape),
        ));
    }
    let sizes = &den.shape[..sd];
    let row: usize = den.shape[sd..].iter().product();
    let (dst, failed) = (Shared(rows.as_mut_ptr()), AtomicBool::new(false));
    for_each_chunk(n, GRAIN.div_ceil(row.max(1)), |range| {
        for j in range {
            let mut p = 0usize;
            for (d, &size) in sizes.iter().enumerate() {
                let i = idx[d * n + j];
                if i < 0 || i as u64 >= size as u64 {
                    failed.store(true, AtomicOrdering::Relaxed);
                    return;
                }
                p = p * size + i as usize;
            }
            // SAFETY: row `j < n` lies inside the output; chunks are disjoint.
            let out_row = unsafe { std::slice::from_raw_parts_mut(dst.at(j * row), row) };
            out_row.copy_from_slice(&dense[p * row..(p + 1) * row]);
        }
    });
    if failed.into_inner() {
        return Err(Error::out_of_bounds(op, format!("an index is outside the sparse sizes {sizes:?}")));
    }
    Ok(())
}
