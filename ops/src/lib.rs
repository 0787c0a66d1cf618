//! # tensor-ops
//!
//! Code-generated, typed tensor kernels. `use tensor_ops::prelude::*;` brings everything.

extern crate self as tensor_ops;

pub use tensor_core::{self, DType, Device, Error, Layout, Result, Scalar, Tensor};

/// Everything a user needs.
pub mod prelude {
    pub use crate::{DType, Device, Error, Layout, Result, Scalar, Tensor};
}

#[doc(hidden)]
pub mod __private {
    //! Paths used by code that `#[tensor_op]` generates. Not a stable API.
    pub use inventory;
    pub use tensor_core;
    pub use tensor_core::registry::{CudaMapKernel, Kernel, KernelRow, MapKernel, OpSpec};
    pub use tensor_core::{DType, DeviceKind, Layout, Result, Scalar, Tensor};
    pub use tensor_kernels;
    pub use tensor_kernels::cpu::map::{map_block, pred_block, MapBody, PredBody};
    pub use tensor_kernels::cpu::value::{Mask, SimdElement, Value};

    /// Runs an elementwise op into a new tensor.
    pub fn call_map_new(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<Tensor> {
        let _ = (spec, inputs, params);
        Err(tensor_core::Error::invalid("call_map_new", "not wired yet"))
    }
    /// Runs an elementwise op in place into `inputs[0]`.
    pub fn call_map_inplace(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
        let _ = (spec, inputs, params);
        Err(tensor_core::Error::invalid("call_map_inplace", "not wired yet"))
    }
    /// Runs an elementwise op into `out`.
    pub fn call_map_out(spec: &'static OpSpec, inputs: &[&Tensor], params: &[Scalar], out: &Tensor) -> Result<()> {
        let _ = (spec, inputs, params, out);
        Err(tensor_core::Error::invalid("call_map_out", "not wired yet"))
    }
}
