//! Reductions of strided tensors on the one call path: checked dims, the result dtype rule,
//! the output (new, or a given `_out` with a cast) and the canonical reduction plan — one
//! [`ReduceGeometry`] (`reduce_geometry.rs`), which a fused chain's final reduction and the
//! sparse layouts' reductions derive the same way — handed through the one tail (`launch`)
//! to the backend as a [`crate::registry::PreparedCall`] whose output has stride 0 along
//! every reduced dim and whose [`CallExtra::Reduce`] carries the logical-index steps.

use super::launch::{lookup, Dest, Launch};
use super::reduce_geometry::{ReduceDims, ReduceGeometry};
use crate::registry::{CallExtra, KernelRow, ReduceSpec};
use crate::{Error, Layout, Result, Scalar, Tensor};

/// [`super::reduce`] of a strided tensor with a plain dtype (the sparse reductions call it
/// on their values and dense results).
pub(crate) fn reduce_strided(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let name = spec.op.name;
    if params.len() != spec.op.params.len() {
        return Err(Error::invalid(
            name,
            format!("{name} takes {} param(s) ({:?}), got {}", spec.op.params.len(), spec.op.params, params.len()),
        ));
    }
    let shape = input.shape();
    let geo = ReduceGeometry::new(name, shape, dims, keepdim)?;
    let result = spec.output.result(input.dtype());
    let row = lookup(&spec.op, Layout::Strided, input.device(), input.dtype())?;
    geo.check_extent(spec, || {
        format!(
            "{name} of an empty extent has no value: input shape {shape:?} reduced over dims {:?} (each output would reduce 0 elements)",
            geo.reduced_dims()
        )
    })?;
    if let Some(out) = out {
        input.check_same_device(name, out)?;
        let what = || format!("{name} of shape {shape:?} over dims {:?} (keepdim = {keepdim})", geo.reduced_dims());
        geo.check_out(name, out, result, what)?;
        if geo.out_numel == 0 {
            return Ok(None);
        }
        // Straight into `out` when it has the result's dtype, cannot overlap itself and
        // does not overlap the input; otherwise through a private result and a cast copy.
        let direct = out.dtype() == result && !out.may_overlap(input);
        if direct {
            run(spec, row, input, out, &geo, params)?;
        } else {
            let tmp = Tensor::empty(&geo.out_shape, result, input.device())?;
            run(spec, row, input, &tmp, &geo, params)?;
            out.copy_(&tmp).map_err(|e| e.renamed(name))?;
        }
        return Ok(None);
    }
    crate::shape::checked_numel(name, &geo.out_shape, result)?;
    let target = Tensor::empty(&geo.out_shape, result, input.device())?;
    if geo.out_numel > 0 {
        run(spec, row, input, &target, &geo, params)?;
    }
    Ok(Some(target))
}

/// Writes the reduction of `input` into `target` (the result's shape and dtype, not
/// overlapping `input`) through the one tail.
fn run(
    spec: &'static ReduceSpec,
    row: &'static KernelRow,
    input: &Tensor,
    target: &Tensor,
    geo: &ReduceGeometry,
    params: &[Scalar],
) -> Result<()> {
    let plan = geo.plan(input.shape(), input.strides(), target.strides());
    let extra = CallExtra::Reduce { index_strides: &plan.index };
    let launch = Launch { name: spec.op.name, op: &spec.op, row, params, extra };
    // The caller routes any overlap of the input through a private result.
    launch.run(Dest::Apart(target), &[input], |_, _| Ok(&plan))
}
