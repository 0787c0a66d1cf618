//! The entry points generated ops call: thin wrappers over the core's one call path
//! ([`tensor_core::call`]), which does the devices → dtype rule → row lookup → broadcast →
//! output → overlap → locks → canonical plan → kernel sequence for every op.

use tensor_core::call::{map_into, map_new, reduce, ReduceDims};
use tensor_core::registry::{OpSpec, ReduceSpec};
use tensor_core::{Result, Scalar, Tensor};

/// Keeps the backends' registrations (copy/fill rows, allocators, runtimes) in the link:
/// `inventory` only sees object code that is linked, and a program may reference nothing
/// else of a backend. Costs two `black_box`es.
#[inline]
pub(crate) fn link_backends() {
    tensor_kernels_cpu::ensure_linked();
    #[cfg(feature = "cuda")]
    tensor_kernels_cuda::ensure_linked();
}

/// Runs an elementwise op into a new tensor.
pub fn call_map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
    link_backends();
    map_new(spec, inputs, params)
}

/// Runs an elementwise op in place into `inputs[0]` (whose shape must be the broadcast
/// shape and whose dtype must be able to hold the result).
pub fn call_map_inplace(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    link_backends();
    map_into(spec, inputs, params, None)
}

/// Runs an elementwise op into `out` (exactly the broadcast shape; a dtype the result can
/// be cast to).
pub fn call_map_out(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], out: &Tensor) -> Result<()> {
    link_backends();
    map_into(spec, inputs, params, Some(out))
}

/// Runs a reduction into a new tensor (`out: None`, returned) or into `out`.
pub fn call_reduce(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    link_backends();
    reduce(spec, input, dims, keepdim, params, out)
}

/// [`call_reduce`] into a new tensor (the core returns it for `out: None`).
pub fn call_reduce_new(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
) -> Result<Tensor> {
    call_reduce(spec, input, dims, keepdim, params, None)?
        .ok_or_else(|| tensor_core::Error::invalid(spec.op.name, "no result tensor for a reduction without `out`"))
}
