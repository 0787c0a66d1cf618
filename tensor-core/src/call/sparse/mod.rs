//! Calls with a sparse operand: the layouts' steps through the one tail
//! ([`run_components`]: a component kernel looked up under its layout, its operands —
//! contiguous strided components — walked as they are), elementwise maps (`map.rs`) and
//! reductions (`reduce.rs`) of sparse tensors.

mod map;
mod reduce;

pub(super) use map::{map_into, map_new};
pub(super) use reduce::reduce;

use super::launch::{lookup, Dest, Geometry, Launch};
use crate::iter::PerOperand;
use crate::registry::{CallExtra, OpSpec};
use crate::sparse::Parts;
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

/// The sparse tensor `s` with its values replaced by `values` (same pattern; COO keeps its
/// coalesced flag).
pub(crate) fn with_values(s: &Tensor, values: Tensor) -> Result<Tensor> {
    let parts = match s.sparse_parts("with_values")? {
        Parts::Coo { indices, coalesced, .. } => Parts::Coo { indices: indices.clone(), values, coalesced: *coalesced },
        Parts::Csr { crow, col, coalesced, .. } => {
            Parts::Csr { crow: crow.clone(), col: col.clone(), values, coalesced: *coalesced }
        }
    };
    Ok(Tensor::from_sparse_parts(parts, s.shape()))
}

/// A COO `result` as CSR when `csr` (batched CSR when it has more than two sparse dims
/// and every batch holds the same nnz; else it stays COO), as it is otherwise.
pub(crate) fn in_layout(result: Tensor, csr: bool) -> Result<Tensor> {
    match result.sparse_dim()? {
        2 if csr => result.to_sparse_csr(),
        sd if csr && sd > 2 => Ok(result.to_sparse_csr().unwrap_or(result)),
        _ => Ok(result),
    }
}

/// `s` as COO without duplicates: itself when it is, else coalesced (CSR through COO).
pub(crate) fn coalesced_coo(s: &Tensor) -> Result<Tensor> {
    let coo = s.to_sparse_coo()?;
    if coo.is_coalesced()? {
        Ok(coo)
    } else {
        coo.coalesce()
    }
}
