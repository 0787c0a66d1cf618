//! Pattern work shared by the sparse ops of `call::sparse` and `sparse_softmax`: grouping
//! index columns (sort + segments), looking columns up in a coalesced pattern, gathering
//! rows by position, gathering a dense tensor's slices at a pattern, and keeping the found
//! entries. Each is one or two of the layouts' steps (`registry::sparse`), run through
//! `run_components` on the operands' device.

use crate::call::sparse::run_components;
use crate::registry::sparse::{
    COO_LOOKUP, COO_SEGMENTS, COO_SORT, COO_UNIQUE_INDICES, DENSE_COUNT, DENSE_GATHER, DENSE_INDICES, GATHER_ROWS,
};
use crate::{DType, Error, Layout, Result, Scalar, Tensor};

/// Index columns grouped: the stable row-major permutation, the segment of each sorted
/// entry, and how many segments there are.
pub(crate) struct Groups {
    /// I64 `[n]`: the entries in sorted order.
    pub perm: Tensor,
    /// I64 `[n]`: each sorted entry's segment (0, 1, ...).
    pub seg: Tensor,
    /// The number of segments (0 for no entries).
    pub count: usize,
}

/// Runs the step `spec` of dtype `dtype` into `out`, errors named `op`.
fn step(
    op: &'static str,
    spec: &'static crate::registry::OpSpec,
    dtype: DType,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    run_components(spec, Layout::SparseCoo, dtype, out, inputs, params).map_err(|e| e.renamed(op))
}

/// The last element of a non-empty I64 tensor (a count), read from any device.
pub(crate) fn last_count(op: &'static str, t: &Tensor) -> Result<usize> {
    let n = t.numel();
    let v = t.select(0, n - 1)?.item()?.to::<i64>();
    usize::try_from(v).map_err(|_| Error::invalid(op, format!("a count of {v} came back from the device")))
}

/// Groups the columns of `keys` (I64 `[k, n]`, contiguous; `k` may be 0: one group).
pub(crate) fn group(op: &'static str, keys: &Tensor) -> Result<Groups> {
    let (n, device) = (keys.shape()[1], keys.device());
    let perm = Tensor::empty(&[n], DType::I64, device)?;
    let seg = Tensor::empty(&[n], DType::I64, device)?;
    if n == 0 {
        return Ok(Groups { perm, seg, count: 0 });
    }
    step(op, &COO_SORT, DType::I64, &perm, &[keys], &[])?;
    step(op, &COO_SEGMENTS, DType::I64, &seg, &[keys, &perm], &[])?;
    let count = last_count(op, &seg)? + 1;
    Ok(Groups { perm, seg, count })
}

/// Each group's key column, I64 `[k, groups.count]` (sorted, unique).
pub(crate) fn group_keys(op: &'static str, keys: &Tensor, groups: &Groups) -> Result<Tensor> {
    let out = Tensor::empty(&[keys.shape()[0], groups.count], DType::I64, keys.device())?;
    if groups.count > 0 {
        step(op, &COO_UNIQUE_INDICES, DType::I64, &out, &[keys, &groups.perm, &groups.seg], &[])?;
    }
    Ok(out)
}

/// Where each column of `queries` sits in the coalesced `table` (both I64 `[sd, *]`): I64
/// `[n]`, one-based, 0 when absent.
pub(crate) fn lookup(op: &'static str, table: &Tensor, queries: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty(&[queries.shape()[1]], DType::I64, queries.device())?;
    step(op, &COO_LOOKUP, DType::I64, &out, &[table, queries], &[])?;
    Ok(out)
}

/// Rows of `source` (`[m, *inner]`) at `positions` counted from `base`, zeros below it.
pub(crate) fn gather_rows(op: &'static str, source: &Tensor, positions: &Tensor, base: i64) -> Result<Tensor> {
    let shape: Vec<usize> = std::iter::once(positions.numel()).chain(source.shape()[1..].iter().copied()).collect();
    let out = Tensor::empty(&shape, source.dtype(), source.device())?;
    step(op, &GATHER_ROWS, source.dtype(), &out, &[source, positions], &[Scalar::Int(base)])?;
    Ok(out)
}

/// The slices of `dense` (`[*sparse_sizes, *inner]`, any strides) at the columns of
/// `indices` (I64 `[sd, n]`): `[n, *inner]`.
pub(crate) fn dense_gather(op: &'static str, dense: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let (sd, n) = (indices.shape()[0], indices.shape()[1]);
    let dense = dense.contiguous()?;
    let shape: Vec<usize> = std::iter::once(n).chain(dense.shape()[sd..].iter().copied()).collect();
    let out = Tensor::empty(&shape, dense.dtype(), dense.device())?;
    step(op, &DENSE_GATHER, dense.dtype(), &out, &[&dense, indices], &[])?;
    Ok(out)
}

/// The (zero-based) positions of the nonzero elements of the I64 `[n]` `marks`: I64 `[k]`.
pub(crate) fn nonzero_positions(op: &'static str, marks: &Tensor) -> Result<Tensor> {
    let (n, device) = (marks.numel(), marks.device());
    if n == 0 {
        return Tensor::empty(&[0], DType::I64, device);
    }
    let counts = Tensor::empty(&[n], DType::I64, device)?;
    step(op, &DENSE_COUNT, DType::I64, &counts, &[marks], &[Scalar::Int(1)])?;
    let k = last_count(op, &counts)?;
    let positions = Tensor::empty(&[1, k], DType::I64, device)?;
    step(op, &DENSE_INDICES, DType::I64, &positions, &[&counts, marks], &[])?;
    positions.reshape(&[k as isize])
}

/// The columns of `indices` (I64 `[sd, n]`) at zero-based `positions` (I64 `[k]`):
/// `[sd, k]`.
pub(crate) fn take_columns(op: &'static str, indices: &Tensor, positions: &Tensor) -> Result<Tensor> {
    let sd = indices.shape()[0];
    let out = Tensor::empty(&[sd, positions.numel()], DType::I64, indices.device())?;
    if positions.numel() == 0 || indices.shape()[1] == 0 {
        return Ok(out);
    }
    for d in 0..sd {
        let row = indices.select(0, d)?.contiguous()?;
        out.select(0, d)?.copy_(&gather_rows(op, &row.reshape(&[-1, 1])?, positions, 0)?.reshape(&[-1])?)?;
    }
    Ok(out)
}

/// The columns of several I64 `[sd, n_i]` index tensors side by side: `[sd, Σ n_i]`.
pub(crate) fn concat_columns(parts: &[Tensor]) -> Result<Tensor> {
    let sd = parts[0].shape()[0];
    let total = parts.iter().map(|p| p.shape()[1]).sum();
    let out = Tensor::empty(&[sd, total], DType::I64, parts[0].device())?;
    let mut at = 0;
    for p in parts {
        let n = p.shape()[1];
        out.narrow(1, at, n)?.copy_(p)?;
        at += n;
    }
    Ok(out)
}
