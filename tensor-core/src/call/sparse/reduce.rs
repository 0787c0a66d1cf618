//! Reductions of sparse tensors, as `ReduceSpec::sparse` says the op is:
//! - `Sum`: implicit entries add nothing, so the entries' values are summed as they are,
//!   after coalescing (duplicates summed in the values' dtype, as `to_dense` sums them).
//!   Reduced dense dims are reduced in `values` by the op's own rows; when every sparse dim
//!   is reduced the result is dense, else it stays COO with the kept sparse dims' indices
//!   (uncoalesced when a sparse dim was reduced: entries that meet add up; for the 8- and
//!   16-bit floats they are added in f32 here and rounded once, as the dense sum does). The
//!   result dtype is the dense sum's (bool/integers → i64).
//! - `Max`/`Min` (`amax`/`amin`): dense dims are reduced in `values` by the op's own rows;
//!   reduced sparse dims by grouping the entries on the kept sparse dims
//!   (`sparse_segment_extreme`), where a group with fewer entries than positions also
//!   takes one zero — the implicit zeros count, as in the dense result. NaN propagates.
//! - `Unsupported`: `Error::NoKernel` under the sparse layout (convert with `to_dense()`).
//!
//! An `_out` form runs the dense call on `to_dense()` (the dense `_out` rules apply), and so
//! does a reduction over an empty dim (its dense error or value).

use super::{coalesced_coo, in_layout};
use crate::call::launch::lookup;
use crate::call::reduce_geometry::ReduceGeometry;
use crate::call::reduce_strided::reduce_strided;
use crate::call::ReduceDims;
use crate::registry::sparse::SEGMENT_EXTREME;
use crate::registry::{ReduceSpec, SparseReduce};
use crate::sparse::pattern::{group, group_keys};
use crate::sparse::Parts;
use crate::{DType, Error, Layout, Result, Scalar, Tensor};

/// A reduction of a sparse `input` (see the module docs).
pub(in crate::call) fn reduce(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let (name, layout) = (spec.op.name, input.layout());
    // Dispatch on the layout as a strided call does: a reduction with a sparse form has rows
    // under the sparse layouts (NoKernel names the layouts it has otherwise).
    lookup(&spec.op, layout, input.device(), input.dtype())?;
    if spec.sparse == SparseReduce::Unsupported {
        return Err(Error::Layout {
            op: name,
            layout,
            msg: "this reduction has no sparse form; convert with to_dense()".into(),
        });
    }
    let geo = ReduceGeometry::new(name, input.shape(), dims, keepdim)?;
    if out.is_some() || geo.reduced_dims().iter().any(|&d| input.shape()[d] == 0) {
        return reduce_strided(spec, &input.to_dense()?, dims, keepdim, params, out);
    }
    match spec.sparse {
        SparseReduce::Sum => sum(spec, input, &geo, keepdim, params),
        kind => extreme(spec, input, &geo, keepdim, params, kind == SparseReduce::Max),
    }
}

/// The kept sparse dims' index rows of `indices` (`[sd, nnz]`), a reduced one kept as a
/// row of zeros when `keepdim`.
fn kept_rows(indices: &Tensor, sd: usize, reduced: &[usize], keepdim: bool) -> Result<Tensor> {
    let rows: Vec<Option<usize>> = (0..sd)
        .filter_map(|d| match (reduced.contains(&d), keepdim) {
            (false, _) => Some(Some(d)),
            (true, true) => Some(None),
            (true, false) => None,
        })
        .collect();
    let out = Tensor::zeros(&[rows.len(), indices.shape()[1]], DType::I64, indices.device())?;
    for (r, src) in rows.iter().enumerate() {
        if let Some(d) = src {
            out.select(0, r)?.copy_(&indices.select(0, *d)?)?;
        }
    }
    Ok(out)
}

/// `SparseReduce::Sum`.
fn sum(
    spec: &'static ReduceSpec,
    input: &Tensor,
    geo: &ReduceGeometry,
    keepdim: bool,
    params: &[Scalar],
) -> Result<Option<Tensor>> {
    let (name, layout) = (spec.op.name, input.layout());
    // Duplicates are summed in the values' dtype first, as `to_dense` sums them (bool: or,
    // integers wrapping), so the result is the dense sum of `to_dense()`.
    let coo = coalesced_coo(input)?;
    let (sd, values, indices) = (coo.sparse_dim()?, coo.values()?, coo.indices()?);
    let reduced = geo.reduced_dims();
    let dense_dims: Vec<usize> = reduced.iter().filter(|&&d| d >= sd).map(|&d| d - sd + 1).collect();
    let sparse_reduced: Vec<usize> = reduced.iter().copied().filter(|&d| d < sd).collect();
    if values.dtype().is_narrow_float() && !sparse_reduced.is_empty() && sparse_reduced.len() < sd {
        // The entries that meet add up in f32 and round once, as the dense sum accumulates
        // (summed in f16 they rounded at every entry: [1000, 0.4, 0.4, -1000] gave 4.0,
        // the dense sum 3.8).
        let wide = coo.with_values(&values.to_dtype(values.dtype().compute())?)?;
        let sum_wide = sum(spec, &wide, geo, keepdim, params)?.ok_or_else(|| Error::invalid(name, "no result"))?;
        let met = coalesced_coo(&sum_wide)?;
        let result = met.with_values(&met.values()?.to_dtype(values.dtype())?)?;
        return in_layout(result, layout == Layout::SparseCsr).map(Some);
    }
    let sum_values =
        |dims: &[usize], keep: bool| reduce_strided(spec, &values, ReduceDims::Dims(dims), keep, params, None);
    if sparse_reduced.len() == sd {
        // Every sparse dim reduced: a dense result, the entries' (reduced) rows summed.
        let dims: Vec<usize> = std::iter::once(0).chain(dense_dims).collect();
        let dense = sum_values(&dims, false)?.ok_or_else(|| Error::invalid(name, "no result"))?;
        return Ok(Some(if keepdim {
            dense.reshape(&geo.out_shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?
        } else {
            dense
        }));
    }
    let new_values = if dense_dims.is_empty() {
        values.to_dtype(spec.output.result(values.dtype()))?
    } else {
        sum_values(&dense_dims, keepdim)?.ok_or_else(|| Error::invalid(name, "no result"))?
    };
    let new_indices = kept_rows(&indices, sd, &reduced, keepdim)?;
    let coalesced = sparse_reduced.is_empty() && coo.is_coalesced()?;
    let parts = Parts::Coo { indices: new_indices, values: new_values, coalesced };
    let result = Tensor::from_sparse_parts(parts, &geo.out_shape);
    in_layout(result, layout == Layout::SparseCsr).map(Some)
}

/// `SparseReduce::Max` (`max`) or `Min`.
fn extreme(
    spec: &'static ReduceSpec,
    input: &Tensor,
    geo: &ReduceGeometry,
    keepdim: bool,
    params: &[Scalar],
    max: bool,
) -> Result<Option<Tensor>> {
    let (name, layout) = (spec.op.name, input.layout());
    let coo = coalesced_coo(input)?;
    let (sd, values, indices) = (coo.sparse_dim()?, coo.values()?, coo.indices()?);
    let reduced = geo.reduced_dims();
    let dense_dims: Vec<usize> = reduced.iter().filter(|&&d| d >= sd).map(|&d| d - sd + 1).collect();
    let sparse_reduced: Vec<usize> = reduced.iter().copied().filter(|&d| d < sd).collect();
    // Dense dims first, by the op's own rows (an entry's slice is all specified).
    let values = if dense_dims.is_empty() {
        values
    } else {
        reduce_strided(spec, &values, ReduceDims::Dims(&dense_dims), keepdim, params, None)?
            .ok_or_else(|| Error::invalid(name, "no result"))?
    };
    if sparse_reduced.is_empty() {
        let parts = Parts::Coo { indices, values, coalesced: true };
        return in_layout(Tensor::from_sparse_parts(parts, &geo.out_shape), layout == Layout::SparseCsr).map(Some);
    }
    // Positions each group covers; `group` below this many means implicit zeros.
    let positions = sparse_reduced.iter().try_fold(1i64, |acc, &d| acc.checked_mul(input.shape()[d] as i64));
    let keys = kept_rows(&indices, sd, &sparse_reduced, false)?;
    let groups = group(name, &keys)?;
    let tail = &values.shape()[1..];
    let shape: Vec<usize> = std::iter::once(groups.count).chain(tail.iter().copied()).collect();
    let extremes = Tensor::empty(&shape, values.dtype(), values.device())?;
    if groups.count > 0 {
        let params = [Scalar::Int(i64::from(!max)), Scalar::Int(positions.unwrap_or(i64::MAX))];
        super::run_components(
            &SEGMENT_EXTREME,
            Layout::SparseCoo,
            values.dtype(),
            &extremes,
            &[&values, &groups.perm, &groups.seg],
            &params,
        )
        .map_err(|e| e.renamed(name))?;
    }
    if keys.shape()[0] == 0 {
        // Every sparse dim reduced: one group (or none: all zeros), a dense result.
        let out_shape: Vec<isize> = geo.out_shape.iter().map(|&d| d as isize).collect();
        return Ok(Some(match groups.count {
            0 => Tensor::zeros(&geo.out_shape, values.dtype(), values.device())?,
            _ => extremes.reshape(&out_shape)?,
        }));
    }
    let kept = group_keys(name, &keys, &groups)?;
    // Reduced sparse dims kept as size 1 get index rows of zeros.
    let new_indices = if keepdim {
        let full = Tensor::zeros(&[sd, groups.count], DType::I64, input.device())?;
        let mut k = 0;
        for d in 0..sd {
            if !sparse_reduced.contains(&d) {
                full.select(0, d)?.copy_(&kept.select(0, k)?)?;
                k += 1;
            }
        }
        full
    } else {
        kept
    };
    let parts = Parts::Coo { indices: new_indices, values: extremes, coalesced: true };
    in_layout(Tensor::from_sparse_parts(parts, &geo.out_shape), layout == Layout::SparseCsr).map(Some)
}
