//! Elementwise maps with sparse operands.
//!
//! **One input: zero-preserving maps are checked, not declared.** The op's own strided row
//! runs over `values` (indices shared, the pattern kept). That is the dense result exactly
//! when the op maps 0 to 0 *for this dtype and these params*, so each call first runs the
//! same row on a one-element zero of the values' dtype with the call's params: a result
//! other than zero (`-0.0` counts as zero; NaN does not) is an `Error::Layout` naming the
//! value and suggesting `to_dense()` (PyTorch's rule), never a silently dense or wrong
//! result. Every `#[tensor_op]`, built-in or a user's, reaches sparse tensors from its one
//! definition, and an op that keeps zero only for some params (`x * p + q`) is accepted
//! exactly for those. Implicit entries stay `+0.0` where the dense op would give `-0.0`
//! (`neg`): equal values, different sign bit.
//!
//! **Several inputs** (`OpSpec::sparse_intersection` decides):
//! - an *intersection* op (`mul`: a zero of any input gives zero) runs over the entries every
//!   sparse operand specifies; dense operands (broadcast to the sparse shape) are read at
//!   those entries. The result is sparse (COO, or CSR when every sparse operand is CSR).
//! - any other op with a dense operand gives the dense result: sparse operands go through
//!   `to_dense()` and the dense call runs (sparse + dense → dense, PyTorch's rule).
//! - any other op on sparse operands only (same shape, same sparse dims; no broadcasting)
//!   runs over the union of the patterns when it maps zeros to zero (checked as above):
//!   each operand's values are gathered onto the union, zeros where it has no entry, and
//!   the op's own row maps them.
//!
//! Values are the operands' own: dtype promotion, params and the kernel are the dense
//! call's. Every operand is coalesced first (a map of each duplicate is not the map of
//! their sum).

use super::{coalesced_coo, in_layout, with_values};
use crate::registry::OpSpec;
use crate::sparse::pattern::{
    concat_columns, dense_gather, gather_rows, group, group_keys, lookup, nonzero_positions, take_columns,
};
use crate::sparse::Parts;
use crate::{Error, Layout, Result, Scalar, Tensor};

/// `Err` unless `spec` maps zeros of the `dtypes` to zero with `params`.
fn check_zero_preserving(spec: &'static OpSpec, layout: Layout, values: &[&Tensor], params: &[Scalar]) -> Result<()> {
    let zeros = values.iter().map(|v| Tensor::zeros(&[1], v.dtype(), v.device())).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Tensor> = zeros.iter().collect();
    let at_zero = super::super::map_new(spec, &refs, params)?.item()?;
    let is_zero = match at_zero {
        Scalar::Bool(b) => !b,
        Scalar::Int(i) => i == 0,
        Scalar::Float(f) => f == 0.0,
    };
    if is_zero {
        return Ok(());
    }
    let dtypes: Vec<String> = values.iter().map(|v| v.dtype().to_string()).collect();
    let zeros = if values.len() == 1 { "0" } else { "zeros" };
    Err(Error::Layout {
        op: spec.name,
        layout,
        msg: format!(
            "{} maps {zeros} to {at_zero:?} for {} (params {params:?}), so it would fill the unspecified entries",
            spec.name,
            dtypes.join(", ")
        ),
    })
}

/// `s` without duplicates, in its own layout.
fn coalesced(s: &Tensor) -> Result<Tensor> {
    if s.sparse_parts("coalesce")?.coalesced() {
        return Ok(s.clone());
    }
    in_layout(coalesced_coo(s)?, s.layout() == Layout::SparseCsr)
}

/// A COO result in CSR when every sparse operand was CSR.
fn in_layout_of(result: Tensor, inputs: &[&Tensor]) -> Result<Tensor> {
    in_layout(result, inputs.iter().filter(|t| t.is_sparse()).all(|t| t.layout() == Layout::SparseCsr))
}

/// Every operand's strided form (`to_dense()` of the sparse ones).
fn densified(inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    inputs.iter().map(|t| t.to_dense()).collect()
}

/// `Err(NoKernel)` unless `spec` has a row under the sparse `layout` for the call's device and
/// kernel dtype: sparse calls dispatch on the layout as strided ones do (an elementwise
/// `#[tensor_op]` registers rows under every layout; the error names those the op has).
fn check_layout_row(spec: &'static OpSpec, inputs: &[&Tensor], layout: Layout) -> Result<()> {
    let device = inputs.first().map_or(crate::Device::Cpu, |t| t.device());
    let dtype = crate::call::call_types(spec, inputs).kernel;
    crate::registry::registry().lookup_spec(spec, device, layout, dtype).map(|_| ())
}

/// `map_new` with a sparse operand (see the module docs).
pub(in crate::call) fn map_new(
    spec: &'static OpSpec,
    inputs: &[&Tensor],
    params: &[Scalar],
    layout: Layout,
) -> Result<Tensor> {
    check_layout_row(spec, inputs, layout)?;
    if inputs.len() == 1 {
        check_zero_preserving(spec, layout, &[&inputs[0].values()?], params)?;
        let s = coalesced(inputs[0])?;
        let values = s.values()?;
        return with_values(&s, super::super::map_new(spec, &[&values], params)?);
    }
    if spec.sparse_intersection {
        return intersection(spec, inputs, params);
    }
    if inputs.iter().any(|t| !t.is_sparse()) {
        let dense = densified(inputs)?;
        return super::super::map_new(spec, &dense.iter().collect::<Vec<_>>(), params);
    }
    union(spec, inputs, params, layout)
}

/// `Err` unless every sparse operand has `shape` and the same number of sparse dims.
fn check_same_pattern_space(spec: &'static OpSpec, sparse: &[&Tensor]) -> Result<()> {
    let first = sparse[0];
    for t in &sparse[1..] {
        if t.shape() != first.shape() || t.dense_dim()? != first.dense_dim()? {
            return Err(Error::shape(
                spec.name,
                format!(
                    "sparse operands need the same shape and sparse dims (no broadcasting between sparse \
                     tensors): {:?} with {} dense dims vs {:?} with {}",
                    first.shape(),
                    first.dense_dim()?,
                    t.shape(),
                    t.dense_dim()?
                ),
            ));
        }
    }
    Ok(())
}

/// The sparse operands as coalesced COO tensors.
fn coalesced_operands(inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    inputs.iter().map(|t| coalesced_coo(t)).collect()
}

/// Sparse operands only: the union of the patterns.
fn union(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], layout: Layout) -> Result<Tensor> {
    let name = spec.name;
    check_same_pattern_space(spec, inputs)?;
    let coo = coalesced_operands(inputs)?;
    let values: Vec<Tensor> = coo.iter().map(|t| t.values()).collect::<Result<_>>()?;
    check_zero_preserving(spec, layout, &values.iter().collect::<Vec<_>>(), params)?;
    let indices: Vec<Tensor> = coo.iter().map(|t| t.indices()).collect::<Result<_>>()?;
    let all = concat_columns(&indices)?;
    let groups = group(name, &all)?;
    let pattern = group_keys(name, &all, &groups)?;
    let aligned = indices
        .iter()
        .zip(&values)
        .map(|(idx, v)| gather_rows(name, v, &lookup(name, idx, &pattern)?, 1))
        .collect::<Result<Vec<_>>>()?;
    let mapped = super::super::map_new(spec, &aligned.iter().collect::<Vec<_>>(), params)?;
    let parts = Parts::Coo { indices: pattern, values: mapped, coalesced: true };
    in_layout_of(Tensor::from_sparse_parts(parts, inputs[0].shape()), inputs)
}

/// An intersection op: the entries every sparse operand specifies, dense operands read there.
fn intersection(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
    let name = spec.name;
    let sparse: Vec<&Tensor> = inputs.iter().copied().filter(|t| t.is_sparse()).collect();
    check_same_pattern_space(spec, &sparse)?;
    let shape = sparse[0].shape();
    for t in inputs.iter().filter(|t| !t.is_sparse()) {
        let b = crate::shape::broadcast_shapes(name, shape, t.shape())?;
        if b.as_slice() != shape {
            return Err(Error::shape(
                name,
                format!(
                    "a dense operand of shape {:?} must broadcast to the sparse operand's shape {shape:?}",
                    t.shape()
                ),
            ));
        }
    }
    let coo = coalesced_operands(&sparse)?;
    // The common pattern: the first operand's entries found in every other.
    let mut pattern = coo[0].indices()?;
    for other in &coo[1..] {
        let found = lookup(name, &other.indices()?, &pattern)?;
        pattern = take_columns(name, &pattern, &nonzero_positions(name, &found)?)?;
    }
    let mut sparse_values =
        coo.iter().map(|t| gather_rows(name, &t.values()?, &lookup(name, &t.indices()?, &pattern)?, 1));
    let operands = inputs
        .iter()
        .map(|t| match t.is_sparse() {
            true => sparse_values.next().unwrap_or_else(|| Err(Error::invalid(name, "a sparse operand went missing"))),
            false => dense_gather(name, &t.broadcast_to(shape)?, &pattern),
        })
        .collect::<Result<Vec<_>>>()?;
    let mapped = super::super::map_new(spec, &operands.iter().collect::<Vec<_>>(), params)?;
    let parts = Parts::Coo { indices: pattern, values: mapped, coalesced: true };
    in_layout_of(Tensor::from_sparse_parts(parts, shape), inputs)
}

/// `map_into` with a sparse operand or output:
/// - into a strided tensor (`_out`, or in place on a strided first input): the sparse
///   operands go through `to_dense()` and the dense call runs;
/// - in place on a sparse tensor: its values change, never its pattern — a one-input
///   zero-preserving map, or an intersection op whose other operands are dense (`mul_`), on
///   a tensor without duplicates; anything else is an `Error::Layout` saying why;
/// - into a sparse `out`: `Error::Layout` (a sparse result is a new tensor).
pub(in crate::call) fn map_into(
    spec: &'static OpSpec,
    inputs: &[&Tensor],
    params: &[Scalar],
    out: Option<&Tensor>,
    layout: Layout,
) -> Result<()> {
    let name = spec.name;
    let target = out.unwrap_or(inputs[0]);
    if !target.is_sparse() {
        let dense = densified(inputs)?;
        return super::super::map_into(spec, &dense.iter().collect::<Vec<_>>(), params, out);
    }
    check_layout_row(spec, inputs, layout)?;
    let refuse = |msg: &str| Err(Error::Layout { op: name, layout, msg: msg.into() });
    if out.is_some() {
        return refuse("an _out into a sparse tensor is not supported: the sparse result is a new tensor (call the op without _out)");
    }
    let parts = target.sparse_parts(name)?;
    if !parts.coalesced() {
        return refuse(
            "in place on a tensor with duplicate entries would map each duplicate; coalesce() first (CSR: \
             to_sparse_coo().coalesce().to_sparse_csr())",
        );
    }
    let values = parts.values();
    if inputs.len() == 1 {
        check_zero_preserving(spec, layout, &[values], params)?;
        return super::super::map_into(spec, &[values], params, None);
    }
    if !spec.sparse_intersection || inputs[1..].iter().any(|t| t.is_sparse()) {
        return refuse(
            "in place on a sparse tensor keeps its pattern, but this result's pattern differs (a union or an \
             intersection with another sparse operand): call the op without the trailing underscore",
        );
    }
    let shape = target.shape();
    let coo = target.to_sparse_coo()?;
    let pattern = coo.indices()?;
    let mut operands = vec![values.clone()];
    let values_shape: Vec<isize> = values.shape().iter().map(|&d| d as isize).collect();
    for t in &inputs[1..] {
        // (batched CSR values are `[*batch, nnz, *dense]`: the same elements in order)
        operands.push(dense_gather(name, &t.broadcast_to(shape)?, &pattern)?.reshape(&values_shape)?);
    }
    super::super::map_into(spec, &operands.iter().collect::<Vec<_>>(), params, None)
}
