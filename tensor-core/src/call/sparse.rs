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
