//! The built-in ops, each one `#[tensor_op]` definition.
//!
//! Copy/cast and fill are not elementwise math: they are generated per element size in
//! the backends (`tensor_kernels_cpu::copy`, `copy::fill`) and registered there as the `"copy"` and
//! `"fill"` rows, reached through `Tensor::copy_`, `contiguous`, `to_dtype` and `fill_`.

mod binary;
mod compare;
pub(crate) mod reduce;
mod unary;

pub use binary::*;
pub use compare::*;
pub use reduce::*;
pub use unary::*;
