//! `to_sparse` steps: count the nonzero positions, then gather their indices and values.

use super::{elems, elems_mut, input, output, Shared};
use crate::parallel::for_each_chunk;
use tensor_core::registry::{PreparedCall, RawTensor};
use tensor_core::{Element, Error, Result};

/// Positions per parallel chunk.
const GRAIN: usize = 32 * 1024;

/// The sparse sizes and the dense row length of `dense` split after `sd` dims.
fn split<'a>(op: &'static str, dense: &RawTensor<'a>, sd: usize) -> Result<(&'a [usize], usize)> {
    if sd == 0 || sd > dense.shape.len() {
        return Err(Error::invalid(op, format!("sparse_dims must be in 1..={}, got {sd}", dense.shape.len())));
    }
    Ok((&dense.shape[..sd], dense.shape[sd..].iter().product()))
}

/// `dense_to_sparse_count`: inclusive counts of positions whose dense row has a nonzero.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn count<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (dn, out) = (input(call, 0)?, output(call)?);
    let sd = call.params.first().map_or(0, |p| p.to::<i64>().max(0) as usize);
    let (sizes, row) = split(op, dn, sd)?;
    // SAFETY: the ComponentFn contract.
    let (dense, counts) = unsafe { (elems::<T>(op, dn)?, elems_mut::<i64>(op, out)?) };
    if counts.len() != sizes.iter().product::<usize>() {
        return Err(Error::shape(op, format!("counts must have one slot per position of {sizes:?}")));
    }
    let base = Shared(counts.as_mut_ptr());
    for_each_chunk(counts.len(), GRAIN.div_ceil(row.max(1)), |range| {
        for p in range {
            let nonzero = dense[p * row..(p + 1) * row].iter().any(|&v| v != T::ZERO);
            // SAFETY: `p` is inside the output, and in this chunk only.
            unsafe { *base.at(p) = nonzero as i64 };
        }
    });
    let mut total = 0i64;
    for c in counts.iter_mut() {
        total += *c;
        *c = total;
    }
    Ok(())
}

/// Calls `f(p, k)` for each nonzero position `p` (its entry number `k`), in parallel.
fn for_each_nonzero(counts: &[i64], row: usize, f: impl Fn(usize, usize) + Sync) {
    for_each_chunk(counts.len(), GRAIN.div_ceil(row.max(1)), |range| {
        for p in range {
            let before = if p == 0 { 0 } else { counts[p - 1] };
            if counts[p] != before {
                f(p, before as usize);
            }
        }
    });
}

/// `Err` unless `counts` rises by 0 or 1 per position from 0 to `nnz`.
fn check_counts(op: &'static str, counts: &[i64], nnz: usize) -> Result<()> {
    let mut prev = 0i64;
    for &c in counts {
        if c != prev && c != prev + 1 {
            return Err(Error::invalid(op, "counts must rise by 0 or 1 per position"));
        }
        prev = c;
    }
    if prev as usize != nnz {
        return Err(Error::invalid(op, format!("the counts end at {prev}, the output holds {nnz} entries")));
    }
    Ok(())
}

/// `dense_to_sparse_indices`: the multi-index (row-major) of each nonzero position.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn indices<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (cn, dn, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    let (sd, nnz) = (out.shape[0], out.shape[1]);
    let (sizes, row) = split(op, dn, sd)?;
    super::checked_len::<T>(op, dn)?; // (the dense input is only measured here)
                                      // SAFETY: the ComponentFn contract.
    let (counts, idx) = unsafe { (elems::<i64>(op, cn)?, elems_mut::<i64>(op, out)?) };
    if counts.len() != sizes.iter().product::<usize>() {
        return Err(Error::shape(op, format!("counts must have one slot per position of {sizes:?}")));
    }
    check_counts(op, counts, nnz)?;
    let base = Shared(idx.as_mut_ptr());
    for_each_nonzero(counts, row, |p, k| {
        let mut rest = p;
        for d in (0..sd).rev() {
            // SAFETY: `k < nnz` (the counts end at nnz: checked) and `d < sd`, so the slot is
            // inside the `[sd, nnz]` output; entry `k` belongs to position `p` alone.
            unsafe { *base.at(d * nnz + k) = (rest % sizes[d]) as i64 };
            rest /= sizes[d];
        }
    });
    Ok(())
}

/// `dense_to_sparse_values`: the dense row at each nonzero position.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn values<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (cn, dn, out) = (input(call, 0)?, input(call, 1)?, output(call)?);
    // SAFETY: the ComponentFn contract.
    let (counts, dense, vals) = unsafe { (elems::<i64>(op, cn)?, elems::<T>(op, dn)?, elems_mut::<T>(op, out)?) };
    let nnz = out.shape[0];
    let row: usize = out.shape[1..].iter().product();
    if counts.len() * row != dense.len() {
        return Err(Error::shape(op, "counts and the dense tensor disagree on the positions"));
    }
    check_counts(op, counts, nnz)?;
    let base = Shared(vals.as_mut_ptr());
    for_each_nonzero(counts, row, |p, k| {
        // SAFETY: `k < nnz` (checked counts), so row `k` is inside the `[nnz, row]` output,
        // and only position `p` writes it.
        let dst = unsafe { std::slice::from_raw_parts_mut(base.at(k * row), row) };
        dst.copy_from_slice(&dense[p * row..(p + 1) * row]);
    });
    Ok(())
}
