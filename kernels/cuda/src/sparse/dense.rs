//! `to_sparse` steps (`dense_to_sparse_count`, `_indices`, `_values`) and the CSR row
//! pointers (`sparse_rows_to_crow`, `sparse_crow_to_rows`) on the device.

use tensor_core::{Error, Result};

use super::exec::{args, run_checked, strided, strided_over, upload_i64s, Exec};
use super::{scan, Operand};
use crate::sparse_codegen::SparseKernel;

/// The sparse sizes and dense row length of `dense` split after `sd` dims.
fn split<'a>(op: &'static str, dense: &Operand<'a>, sd: usize) -> Result<(&'a [usize], usize)> {
    if sd == 0 || sd > dense.shape.len() {
        return Err(Error::invalid(op, format!("sparse_dims must be in 1..={}, got {sd}", dense.shape.len())));
    }
    Ok((&dense.shape[..sd], dense.shape[sd..].iter().product()))
}

/// `dense_to_sparse_count`: a nonzero flag per position, then an inclusive scan in place.
///
/// # Safety
/// The operands address memory of `e` holding what their shapes and dtypes say; `out` is
/// disjoint from the input.
pub(super) unsafe fn count(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    dense: &Operand<'_>,
    sd: usize,
) -> Result<()> {
    let (sizes, row) = split(op, dense, sd)?;
    let positions: usize = sizes.iter().product();
    if out.numel() != positions {
        return Err(Error::shape(op, format!("counts must have one slot per position of {sizes:?}")));
    }
    let a = args(&[out.addr, dense.addr], positions, &[row as i64]);
    let mut steps = strided(e, SparseKernel::DenseFlags(dense.dtype), a);
    let scratch = e.scratch(scan::scratch_bytes(positions))?;
    scan::plan_scan(out.addr, out.addr, positions, false, scratch.addr, &mut steps);
    // SAFETY: the caller's contract; `scratch` holds what the scan needs.
    unsafe { e.run(&steps) }
}

/// `dense_to_sparse_indices` (`values`: false) or `dense_to_sparse_values` (true): for each
/// position whose count rose, its multi-index or its dense row at its entry number.
///
/// # Safety
/// As [`count`].
pub(super) unsafe fn gather(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    counts: &Operand<'_>,
    dense: &Operand<'_>,
    values: bool,
) -> Result<()> {
    let (sd, nnz) = match (values, out.shape.first()) {
        (false, _) => out.matrix(op)?,
        (true, Some(&nnz)) if out.shape.len() <= dense.shape.len() => (dense.shape.len() + 1 - out.shape.len(), nnz),
        (true, _) => return Err(Error::shape(op, "the values must be [nnz, *dense dims]")),
    };
    let (sizes, row) = split(op, dense, sd)?;
    let positions: usize = sizes.iter().product();
    if counts.numel() != positions || (values && (out.dtype != dense.dtype || out.numel() != nnz * row)) {
        return Err(Error::shape(op, "counts, the dense tensor and the output disagree on the positions"));
    }
    let meta: Vec<i64> = std::iter::once(0).chain(sizes.iter().map(|&s| s as i64)).collect();
    let meta = upload_i64s(e, &meta)?;
    let steps = if values {
        let a = args(&[out.addr, counts.addr, dense.addr, meta.at(0)], positions * row, &[nnz as i64, row as i64]);
        strided(e, SparseKernel::DenseValues(dense.dtype.size()), a)
    } else {
        let a = args(&[out.addr, counts.addr, meta.at(1), meta.at(0)], positions, &[sd as i64, nnz as i64]);
        strided(e, SparseKernel::DenseIndices, a)
    };
    let bad = || Error::invalid(op, format!("the counts must rise by 0 or 1 per position up to {nnz}"));
    // SAFETY: the caller's contract; `meta` holds the flag and the sizes.
    unsafe { run_checked(e, &steps, meta.at(0), bad) }
}

/// `sparse_rows_to_crow` (`to_crow`) or `sparse_crow_to_rows`: a binary search per row
/// pointer or per entry; unsorted rows or crow_indices that do not rise from 0 to nnz are an
/// `Err`.
///
/// # Safety
/// As [`count`].
pub(super) unsafe fn crow(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    input: &Operand<'_>,
    to_crow: bool,
) -> Result<()> {
    let flag = upload_i64s(e, &[0])?;
    // `n`: what the kernel writes (row pointers or entries); `p`: nnz or the rows.
    let (n, p) = if to_crow {
        (out.numel(), input.numel())
    } else {
        (out.numel(), input.numel().checked_sub(1).ok_or_else(|| Error::shape(op, "crow_indices is empty"))?)
    };
    let (kernel, count) =
        if to_crow { (SparseKernel::RowsToCrow, n.max(p)) } else { (SparseKernel::CrowToRows, n.max(p + 1)) };
    let steps = strided_over(e, kernel, args(&[out.addr, input.addr, flag.addr], n, &[p as i64]), count);
    let bad = || {
        if to_crow {
            Error::invalid(op, "the row indices must be sorted (coalesce first)")
        } else {
            Error::invalid(op, format!("crow_indices must rise from 0 to nnz = {n}"))
        }
    };
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, bad) }
}
