//! The binary ops' steps on the device: where index columns sit in a coalesced pattern
//! (`sparse_coo_lookup`, a binary search per query), rows of a component by position with
//! zeros where absent (`sparse_gather_rows`) and a dense tensor's slices at index columns
//! (`sparse_dense_gather`), the gathers copying raw words (any dtype of that size).

use tensor_core::{Error, Result};

use super::exec::{args, run_checked, strided, strided_over, upload_i64s, Exec};
use super::Operand;
use crate::sparse_codegen::SparseKernel;

/// `sparse_coo_lookup`: each query column's one-based column number in the sorted, unique
/// `table`, 0 when absent.
///
/// # Safety
/// The operands address memory of `e` holding what their shapes and dtypes say; `out` is
/// disjoint from the inputs.
pub(super) unsafe fn lookup(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    table: &Operand<'_>,
    queries: &Operand<'_>,
) -> Result<()> {
    let (sd, m) = table.matrix(op)?;
    let (qsd, n) = queries.matrix(op)?;
    if qsd != sd || out.numel() != n {
        return Err(Error::shape(
            op,
            format!("table {:?}, queries {:?}, output {:?} disagree", table.shape, queries.shape, out.shape),
        ));
    }
    let steps =
        strided(e, SparseKernel::Lookup, args(&[out.addr, table.addr, queries.addr], n, &[sd as i64, m as i64]));
    // SAFETY: the caller's contract: the table holds [sd, m], the queries [sd, n], out [n].
    unsafe { e.run(&steps) }
}

/// `sparse_gather_rows`: `out[j] = source[positions[j] - base]`, zeros where
/// `positions[j] < base`; a position past the source's rows is `Error::out_of_bounds`.
///
/// # Safety
/// As [`lookup`].
pub(super) unsafe fn gather_rows(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [source, positions]: [&Operand<'_>; 2],
    base: i64,
) -> Result<()> {
    let m = source.shape.first().copied().unwrap_or(0);
    let inner = source.shape.get(1..).unwrap_or(&[]);
    let row: usize = inner.iter().product();
    let n = positions.numel();
    if source.dtype != out.dtype || out.shape.first() != Some(&n) || &out.shape[1..] != inner {
        return Err(Error::shape(
            op,
            format!("source {:?}, positions [{n}], output {:?} disagree", source.shape, out.shape),
        ));
    }
    let flag = upload_i64s(e, &[0])?;
    let count = n * row.max(1);
    let a = args(&[out.addr, source.addr, positions.addr, flag.addr], count, &[m as i64, row as i64, base]);
    let steps = strided_over(e, SparseKernel::GatherRows(out.dtype.size()), a, count);
    let bad = || Error::out_of_bounds(op, format!("a position is past the {m} rows of the source (base {base})"));
    // SAFETY: the caller's contract; `flag` is the error flag.
    unsafe { run_checked(e, &steps, flag.addr, bad) }
}

/// `sparse_dense_gather`: the dense slice at each index column; an index outside its size is
/// `Error::out_of_bounds`.
///
/// # Safety
/// As [`lookup`].
pub(super) unsafe fn dense_gather(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    dense: &Operand<'_>,
    indices: &Operand<'_>,
) -> Result<()> {
    let (sd, n) = indices.matrix(op)?;
    if dense.shape.len() < sd
        || dense.dtype != out.dtype
        || out.shape.first() != Some(&n)
        || out.shape[1..] != dense.shape[sd..]
    {
        return Err(Error::shape(
            op,
            format!("dense {:?}, indices {:?}, output {:?} disagree", dense.shape, indices.shape, out.shape),
        ));
    }
    let sizes = &dense.shape[..sd];
    let row: usize = dense.shape[sd..].iter().product();
    let meta: Vec<i64> = std::iter::once(0).chain(sizes.iter().map(|&s| s as i64)).collect();
    let meta = upload_i64s(e, &meta)?;
    let count = n * row.max(1);
    let ptrs = [out.addr, dense.addr, indices.addr, meta.at(1), meta.at(0)];
    let a = args(&ptrs, count, &[sd as i64, n as i64, row as i64]);
    let steps = strided_over(e, SparseKernel::DenseGather(out.dtype.size()), a, count);
    let bad = || Error::out_of_bounds(op, format!("an index is outside the sparse sizes {sizes:?}"));
    // SAFETY: the caller's contract; `meta` holds the flag and the sizes.
    unsafe { run_checked(e, &steps, meta.at(0), bad) }
}
