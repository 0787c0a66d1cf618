//! COO steps on the device: scatter into dense (`sparse_coo_to_dense`) and the coalesce steps
//! after the sort (`sparse_coo_segments`, `sparse_coo_unique_indices`,
//! `sparse_coo_segment_sum`).

use tensor_core::{Error, Result};

use super::exec::{args, run_checked, strided, upload_i64s, Exec};
use super::{scan, sort, Operand};
use crate::sparse_codegen::SparseKernel;

/// `sparse_coo_to_dense`: zeros `out` (its contents on entry are unspecified), then adds each
/// entry of `idx` (`[sd, nnz]`) / `vals` (`[nnz, *dense]`) into it. Distinct positions (`coalesced`) scatter a thread per element;
/// duplicates of integer and bool dtypes add atomically (their sums do not depend on the
/// order); duplicates of float dtypes are summed over the stable sorted order, each run in
/// entry order, as the CPU sums them. An index outside the sizes is `Error::out_of_bounds`.
///
/// # Safety
/// The operands address memory of `e` holding what their shapes and dtypes say; `out` is
/// disjoint from the inputs.
pub(super) unsafe fn to_dense(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    idx: &Operand<'_>,
    vals: &Operand<'_>,
    coalesced: bool,
) -> Result<()> {
    let (sd, nnz) = idx.matrix(op)?;
    if out.shape.len() < sd || vals.dtype != out.dtype {
        return Err(Error::shape(op, "the dense output does not match the indices and values"));
    }
    let sizes = &out.shape[..sd];
    let row: usize = out.shape[sd..].iter().product();
    if vals.numel() != nnz * row {
        return Err(Error::shape(op, format!("values must hold {nnz} rows of {row} elements")));
    }
    let mut steps = strided(e, SparseKernel::Zero(out.dtype.size()), args(&[out.addr], out.numel(), &[]));
    if nnz * row == 0 {
        // SAFETY: `out` holds `numel` elements of its dtype (the caller's contract).
        return unsafe { e.run(&steps) };
    }
    let meta: Vec<i64> = std::iter::once(0).chain(sizes.iter().map(|&s| s as i64)).collect();
    let meta = upload_i64s(e, &meta)?;
    let p = [sd as i64, nnz as i64, row as i64];
    let ptrs = [out.addr, idx.addr, vals.addr, meta.at(1), meta.at(0)];
    let mut perm = None;
    let kernel = if coalesced {
        SparseKernel::ScatterUnique(out.dtype)
    } else if out.dtype.is_float() {
        let sorted = e.scratch(8 * nnz)?;
        // SAFETY: `idx` holds `[sd, nnz]` (the caller's contract); `sorted` holds nnz i64s.
        unsafe { sort::sort_columns(e, idx.addr, sd, nnz, sorted.addr)? };
        perm = Some(sorted);
        SparseKernel::ScatterRuns(out.dtype)
    } else {
        SparseKernel::ScatterAtomic(out.dtype)
    };
    let mut a = args(&ptrs, nnz * row, &p);
    a.ptr[5] = perm.as_ref().map_or(0, |s| s.addr);
    steps.extend(strided(e, kernel, a));
    let bad = || Error::out_of_bounds(op, format!("an entry has an index outside the sparse sizes {sizes:?}"));
    // SAFETY: the caller's contract; `meta` holds the flag and the sizes, `perm` the order.
    unsafe { run_checked(e, &steps, meta.at(0), bad) }
}

/// `sparse_coo_segments`: 0 for the first sorted entry, +1 at each new index column (flags,
/// then an inclusive scan in place). `perm` is trusted to be the sort's permutation.
///
/// # Safety
/// As [`to_dense`].
pub(super) unsafe fn segments(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    idx: &Operand<'_>,
    perm: &Operand<'_>,
) -> Result<()> {
    let (sd, nnz) = idx.matrix(op)?;
    if out.numel() != nnz || perm.numel() != nnz {
        return Err(Error::shape(op, format!("the permutation and the segments must hold {nnz} entries")));
    }
    let mut steps = strided(e, SparseKernel::SegmentFlags, args(&[out.addr, idx.addr, perm.addr], nnz, &[sd as i64]));
    let scratch = e.scratch(scan::scratch_bytes(nnz))?;
    scan::plan_scan(out.addr, out.addr, nnz, false, scratch.addr, &mut steps);
    // SAFETY: the caller's contract; `scratch` holds what the scan needs.
    unsafe { e.run(&steps) }
}

/// `sparse_coo_unique_indices`: each segment's index column, from its first sorted entry.
///
/// # Safety
/// As [`to_dense`].
pub(super) unsafe fn unique_indices(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [idx, perm, seg]: [&Operand<'_>; 3],
) -> Result<()> {
    let (sd, nnz) = idx.matrix(op)?;
    let (osd, nseg) = out.matrix(op)?;
    if osd != sd || perm.numel() != nnz || seg.numel() != nnz {
        return Err(Error::shape(op, format!("expected [{sd}, segments] from {nnz} sorted entries")));
    }
    let flag = upload_i64s(e, &[0])?;
    let a = args(&[out.addr, idx.addr, perm.addr, seg.addr, flag.addr], nnz, &[sd as i64, nseg as i64]);
    let steps = strided(e, SparseKernel::UniqueIndices, a);
    let bad = || Error::invalid(op, format!("the segments must count 0, 1, ... up to {}", nseg.saturating_sub(1)));
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, bad) }
}

/// `sparse_coo_segment_sum`: each segment's values added in sorted order into the zeroed
/// `out` (`[segments, *dense]`).
///
/// # Safety
/// As [`to_dense`].
pub(super) unsafe fn segment_sum(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [vals, perm, seg]: [&Operand<'_>; 3],
) -> Result<()> {
    let nnz = vals.shape.first().copied().unwrap_or(0);
    let nseg = out.shape.first().copied().unwrap_or(0);
    let row: usize = vals.shape.iter().skip(1).product();
    if vals.dtype != out.dtype || out.numel() != nseg * row || perm.numel() != nnz || seg.numel() != nnz {
        return Err(Error::shape(op, "values, permutation, segments and output disagree"));
    }
    let flag = upload_i64s(e, &[0])?;
    let p = [nnz as i64, nseg as i64, row as i64];
    let a = args(&[out.addr, vals.addr, perm.addr, seg.addr, flag.addr], nnz * row, &p);
    let steps = strided(e, SparseKernel::SegmentSum(out.dtype), a);
    let bad = || Error::invalid(op, format!("the segments must count 0, 1, ... up to {}", nseg.saturating_sub(1)));
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, bad) }
}
