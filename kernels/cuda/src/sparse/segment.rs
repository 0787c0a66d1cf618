//! Per-segment steps beyond the sum on the device: each segment's max or min with the
//! implicit zeros (`sparse_segment_extreme`, behind `amax`/`amin`) and softmax within each
//! segment (`sparse_segment_softmax`). Segments are `coalesce`'s (the sorted permutation and
//! each sorted entry's segment); a thread per (segment start, dense element) walks its
//! segment in sorted order, so the results are the CPU's bit for bit (softmax: the same f64
//! operations in the same order).

use tensor_core::{DType, Error, Result};

use super::exec::{args, run_checked, strided, upload_i64s, Exec};
use super::Operand;
use crate::sparse_codegen::SparseKernel;

/// `(nnz, row)` of `[nnz, *inner]` values, after checking the permutation and segments hold
/// `nnz` I64s.
fn entries(op: &'static str, vals: &Operand<'_>, perm: &Operand<'_>, seg: &Operand<'_>) -> Result<(usize, usize)> {
    let nnz = vals.shape.first().copied().unwrap_or(0);
    let row: usize = vals.shape.iter().skip(1).product();
    if perm.numel() != nnz || seg.numel() != nnz {
        return Err(Error::shape(op, format!("the permutation and the segments must hold {nnz} entries")));
    }
    for t in [perm, seg] {
        if t.dtype != DType::I64 {
            return Err(Error::DTypeMismatch { op, expected: DType::I64, got: t.dtype });
        }
    }
    Ok((nnz, row))
}

/// The error of a permutation or segments not from `coalesce`'s steps (as the CPU rows').
fn bad_segments(op: &'static str, nnz: usize) -> Error {
    Error::invalid(op, format!("the permutation must hold {nnz} indices in 0..{nnz}, and the segments count 0, 1, ..."))
}

/// `sparse_segment_extreme`: each segment's max (`kind` 0) or min over its entries in sorted
/// order, and over one zero when it has fewer than `group` entries. A segment number outside
/// the output's rows or a permutation entry outside `0..nnz` is an `Err`.
///
/// # Safety
/// The operands address memory of `e` holding what their shapes and dtypes say; `out` is
/// disjoint from the inputs.
pub(super) unsafe fn extreme(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [vals, perm, seg]: [&Operand<'_>; 3],
    kind: i64,
    group: i64,
) -> Result<()> {
    let (nnz, row) = entries(op, vals, perm, seg)?;
    let nseg = out.shape.first().copied().unwrap_or(0);
    if vals.dtype != out.dtype || out.shape.get(1..) != vals.shape.get(1..) {
        return Err(Error::shape(op, format!("values {:?} and output {:?} disagree", vals.shape, out.shape)));
    }
    let flag = upload_i64s(e, &[0])?;
    let p = [nnz as i64, nseg as i64, row as i64, kind, group];
    let a = args(&[out.addr, vals.addr, perm.addr, seg.addr, flag.addr], nnz * row, &p);
    let steps = strided(e, SparseKernel::SegmentExtreme(out.dtype), a);
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, || bad_segments(op, nnz)) }
}

/// `sparse_segment_softmax`: softmax (or `log` softmax) of each segment's entries, element
/// by element of the inner dims, in f64, written in the entries' own order. A permutation
/// entry outside `0..nnz` is an `Err`; the permutation is trusted to repeat no entry (it is
/// `coalesce`'s sort's).
///
/// # Safety
/// As [`extreme`].
pub(super) unsafe fn softmax(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [vals, perm, seg]: [&Operand<'_>; 3],
    log: bool,
) -> Result<()> {
    if !vals.dtype.is_float() {
        return Err(Error::invalid(op, format!("needs float values, got {}", vals.dtype)));
    }
    let (nnz, row) = entries(op, vals, perm, seg)?;
    if out.shape != vals.shape || out.dtype != vals.dtype {
        return Err(Error::shape(op, format!("values {:?} and output {:?} differ", vals.shape, out.shape)));
    }
    let flag = upload_i64s(e, &[0])?;
    let a =
        args(&[out.addr, vals.addr, perm.addr, seg.addr, flag.addr], nnz * row, &[nnz as i64, row as i64, log as i64]);
    let steps = strided(e, SparseKernel::SegmentSoftmax(out.dtype), a);
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, || bad_segments(op, nnz)) }
}
