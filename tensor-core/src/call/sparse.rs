//! The sparse layouts' steps through the one tail: a component kernel looked up under its
//! layout, its operands (contiguous strided components) walked as they are.

use super::launch::{lookup, Dest, Geometry, Launch};
use crate::iter::PerOperand;
use crate::registry::{CallExtra, OpSpec};
use crate::{DType, Layout, Result, Scalar, Tensor};

/// Each operand on its own shape and strides (component kernels index them themselves).
struct Own<'t> {
    out: &'t Tensor,
    inputs: PerOperand<&'t Tensor>,
}

impl Geometry for Own<'_> {
    fn output(&self) -> (&[usize], &[isize]) {
        (self.out.shape(), self.out.strides())
    }
    fn input(&self, i: usize) -> (&[usize], &[isize]) {
        (self.inputs[i].shape(), self.inputs[i].strides())
    }
}

/// Runs the `(spec, out's device, layout, dtype)` row writing `out` (a tensor the caller
/// just made: no other handle, so no overlap with any input) from `inputs` and `params`.
/// Every operand is a strided, contiguous component. A missing row (a sparse tensor on a
/// device whose backend has no sparse kernels yet) is `Error::NoKernel` naming the layout.
pub(crate) fn run_components(
    spec: &'static OpSpec,
    layout: Layout,
    dtype: DType,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> Result<()> {
    let row = lookup(spec, layout, out.device(), dtype)?;
    for t in inputs {
        out.check_same_device(spec.name, t)?;
    }
    let launch = Launch { name: spec.name, op: spec, row, params, extra: CallExtra::None };
    // `Dest::Apart` stages no copies: the tail's operands are these very tensors.
    launch.run(Dest::Apart(out), inputs, |_, _| Ok(Own { out, inputs: inputs.iter().copied().collect() }))
}

// ---- elementwise maps and sums of sparse tensors ----
//
// **Zero-preserving maps are checked, not declared.** A one-input map on a sparse tensor
// runs the op's own strided row over `values` (indices shared, the pattern kept). That is the
// dense result exactly when the op maps 0 to 0 *for this dtype and these params*, so each
// call first runs the same row on a one-element zero of the values' dtype with the call's
// params: a result other than zero (`-0.0` counts as zero; NaN does not) is an
// `Error::Layout` naming the value and suggesting `to_dense()` (PyTorch's rule), never a
// silently dense or wrong result. Every `#[tensor_op]`, built-in or a user's, reaches sparse
// tensors from its one definition with no attribute to keep in sync, and an op that keeps
// zero only for some params (`x * p + q`) is accepted exactly for those. The price is one
// one-element call per sparse map call. Implicit entries stay `+0.0` where the dense op
// would give `-0.0` (`neg`): equal values, different sign bit.

use super::reduce::ReduceGeometry;
use crate::call::ReduceDims;
use crate::registry::ReduceSpec;
use crate::sparse::Parts;
use crate::Error;

/// `Err` unless `spec` maps a zero of `values`' dtype to zero with `params`.
fn check_zero_preserving(spec: &'static OpSpec, layout: Layout, values: &Tensor, params: &[Scalar]) -> Result<()> {
    let zero = Tensor::zeros(&[1], values.dtype(), values.device())?;
    let at_zero = super::map_new(spec, &[&zero], params)?.item()?;
    let is_zero = match at_zero {
        Scalar::Bool(b) => !b,
        Scalar::Int(i) => i == 0,
        Scalar::Float(f) => f == 0.0,
    };
    if is_zero {
        return Ok(());
    }
    Err(Error::Layout {
        op: spec.name,
        layout,
        msg: format!(
            "{} maps 0 to {at_zero:?} for {} (params {params:?}), so it would fill the unspecified entries",
            spec.name,
            values.dtype()
        ),
    })
}

/// The sparse tensor `s` with its values replaced by `values` (same pattern; COO keeps its
/// coalesced flag).
fn with_values(s: &Tensor, values: Tensor) -> Result<Tensor> {
    let parts = match s.sparse_parts("with_values")? {
        Parts::Coo { indices, coalesced, .. } => Parts::Coo { indices: indices.clone(), values, coalesced: *coalesced },
        Parts::Csr { crow, col, coalesced, .. } => {
            Parts::Csr { crow: crow.clone(), col: col.clone(), values, coalesced: *coalesced }
        }
    };
    Ok(Tensor::from_sparse_parts(parts, s.shape()))
}

/// The row-lookup error of a map the sparse layouts do not run (more than one input, an
/// `_out` form): `NoKernel` under `layout`, naming the layouts the op has.
fn unsupported_map(spec: &'static OpSpec, layout: Layout, inputs: &[&Tensor], what: &str) -> Error {
    let t = inputs[0];
    match lookup(spec, layout, t.device(), t.dtype()) {
        Err(e) => e,
        Ok(_) => Error::Layout { op: spec.name, layout, msg: format!("{what} is not supported on sparse tensors yet") },
    }
}

/// `s` without duplicates: itself when known coalesced, else coalesced (CSR through COO).
fn coalesced(s: &Tensor) -> Result<Tensor> {
    match s.sparse_parts("coalesce")? {
        p if p.coalesced() => Ok(s.clone()),
        Parts::Coo { .. } => s.coalesce(),
        Parts::Csr { .. } => s.to_sparse_coo()?.coalesce()?.to_sparse_csr(),
    }
}

/// `map_new` with a sparse operand: a one-input zero-preserving map over the values of the
/// coalesced input (a map of each duplicate would not be the map of their sum).
pub(super) fn map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], layout: Layout) -> Result<Tensor> {
    if inputs.len() != 1 {
        return Err(unsupported_map(spec, layout, inputs, "an op of several inputs"));
    }
    check_zero_preserving(spec, layout, &inputs[0].values()?, params)?;
    let s = coalesced(inputs[0])?;
    let values = s.values()?;
    with_values(&s, super::map_new(spec, &[&values], params)?)
}

/// `map_into` with a sparse operand: in place on a sparse tensor's `values` (one input,
/// zero-preserving, no duplicates: else `Error::Layout`); an `_out` form is `NoKernel`.
pub(super) fn map_into(
    spec: &'static OpSpec,
    inputs: &[&Tensor],
    params: &[Scalar],
    out: Option<&Tensor>,
    layout: Layout,
) -> Result<()> {
    if inputs.len() != 1 || out.is_some() {
        return Err(unsupported_map(spec, layout, inputs, "an _out form"));
    }
    let parts = inputs[0].sparse_parts(spec.name)?;
    if !parts.coalesced() {
        return Err(Error::Layout {
            op: spec.name,
            layout,
            msg: "in place on a tensor with duplicate entries would map each duplicate; coalesce() first (CSR: \
                  to_sparse_coo().coalesce().to_sparse_csr())"
                .into(),
        });
    }
    let values = parts.values();
    check_zero_preserving(spec, layout, values, params)?;
    super::map_into(spec, &[values], params, None)
}

/// A reduction of a sparse tensor. `sum` only so far (implicit entries add nothing, so the
/// entries' values are summed as they are, after coalescing): reduced dense dims are
/// reduced in `values`; when every sparse dim is reduced the result is dense, else it stays
/// COO with the kept sparse dims' indices (uncoalesced when a sparse dim was reduced:
/// entries that meet add up). The result dtype is the dense sum's (bool/integers → i64).
pub(super) fn reduce(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let (name, layout) = (spec.op.name, input.layout());
    // The built-in `sum` (a `#[tensor_op(reduce)]` of tensor-ops, so the core knows it by
    // its name: op names are unique in the registry).
    if spec.op.name != "sum" || out.is_some() {
        let what = if out.is_some() { "an _out form" } else { "this reduction" };
        return Err(match lookup(&spec.op, layout, input.device(), input.dtype()) {
            Err(e) => e,
            Ok(_) => Error::Layout { op: name, layout, msg: format!("{what} is not supported on sparse tensors yet") },
        });
    }
    let geo = ReduceGeometry::new(name, input.shape(), dims, keepdim)?;
    // Duplicates are summed in the values' dtype first, as `to_dense` sums them (bool: or,
    // integers wrapping), so the result is the dense sum of `to_dense()`.
    let coo = input.to_sparse_coo()?;
    let coo = if coo.is_coalesced()? { coo } else { coo.coalesce()? };
    let (sd, values, indices) = (coo.sparse_dim()?, coo.values()?, coo.indices()?);
    let reduced = geo.reduced_dims();
    let dense_dims: Vec<usize> = reduced.iter().filter(|&&d| d >= sd).map(|&d| d - sd + 1).collect();
    let sparse_reduced: Vec<usize> = reduced.iter().copied().filter(|&d| d < sd).collect();
    let sum_values =
        |dims: &[usize], keep: bool| super::reduce(spec, &values, ReduceDims::Dims(dims), keep, params, None);
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
    // The kept sparse dims' index rows (a reduced one kept as size 1 has index 0).
    let rows: Vec<Option<usize>> = (0..sd)
        .filter_map(|d| match (sparse_reduced.contains(&d), keepdim) {
            (false, _) => Some(Some(d)),
            (true, true) => Some(None),
            (true, false) => None,
        })
        .collect();
    let new_indices = Tensor::zeros(&[rows.len(), indices.shape()[1]], crate::DType::I64, input.device())?;
    for (r, src) in rows.iter().enumerate() {
        if let Some(d) = src {
            new_indices.select(0, r)?.copy_(&indices.select(0, *d)?)?;
        }
    }
    let coalesced = sparse_reduced.is_empty() && coo.is_coalesced()?;
    let parts = Parts::Coo { indices: new_indices, values: new_values, coalesced };
    let result = Tensor::from_sparse_parts(parts, &geo.out_shape);
    Ok(Some(if layout == Layout::SparseCsr && result.sparse_dim()? == 2 { result.to_sparse_csr()? } else { result }))
}
