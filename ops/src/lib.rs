//! # tensor-ops
//!
//! Code-generated, typed tensor kernels. One `#[tensor_op]` definition becomes a SIMD CPU
//! kernel per dtype, CUDA C per dtype, public functions (`op`, `op_`, `op_out`) and rows
//! in the dispatch registry.
//!
//! ```
//! use tensor_ops::prelude::*;
//! let a = Tensor::arange(0, 6, 1, DType::F32, Device::Cpu).unwrap().view(&[2, 3]).unwrap();
//! let b = Tensor::from_vec(vec![10f32, 20., 30.], &[3]).unwrap();
//! let c = a.add(&b).unwrap();
//! assert_eq!(c.to_vec::<f32>().unwrap(), vec![10., 21., 32., 13., 24., 35.]);
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate self as tensor_ops;

mod builtin;
mod call;
mod methods;
#[cfg(feature = "safetensors")]
pub mod safetensors_io;

pub use builtin::*;
pub use methods::TensorOps;
pub use tensor_core::call::{call_types, can_cast, CallTypes, Output};
pub use tensor_core::{self, DType, Device, Error, Layout, Registry, Result, Scalar, Tensor};

/// The dispatch registry with every kernel linked into this program: each op × device ×
/// layout and the dtypes it has kernels for.
///
/// ```
/// let reg = tensor_ops::registry();
/// assert!(reg.row_set("add", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::Strided).is_some());
/// ```
pub fn registry() -> &'static Registry {
    call::link_backends();
    tensor_core::registry()
}
pub use tensor_macros::tensor_op;

/// Everything a user needs: `use tensor_ops::prelude::*;`.
pub mod prelude {
    pub use crate::methods::TensorOps;
    pub use crate::{tensor_op, DType, Device, Error, Layout, Result, Scalar, Tensor};
}

#[doc(hidden)]
pub mod __private {
    //! Paths used by code that `#[tensor_op]` generates. Not a stable API.
    pub use crate::call::{call_map_inplace, call_map_new, call_map_out};
    pub use inventory;
    pub use tensor_core;
    pub use tensor_core::registry::{KernelRow, OpSpec, RowCache};
    pub use tensor_core::{DType, DeviceKind, Layout, Result, Scalar, Tensor};
    pub use tensor_kernels_cpu;
    pub use tensor_kernels_cpu::kernel::MapKernel;
    pub use tensor_kernels_cpu::map::{map_block, pred_block, MapBody, PredBody};
    pub use tensor_kernels_cpu::value::{Mask, SimdElement, Value};
    #[cfg(feature = "cuda")]
    pub use tensor_kernels_cuda;
    #[cfg(feature = "cuda")]
    pub use tensor_kernels_cuda::kernel::CudaMapKernel;

    /// The backends under their old paths (`tensor_kernels::cpu`, `tensor_kernels::cuda`).
    pub mod tensor_kernels {
        pub use tensor_kernels_cpu as cpu;
        #[cfg(feature = "cuda")]
        pub use tensor_kernels_cuda as cuda;
    }

    /// Keeps its tokens (the CUDA rows `#[tensor_op]` emits) when tensor-ops is built with
    /// its `cuda` feature, and drops them without it.
    #[cfg(feature = "cuda")]
    #[macro_export]
    #[doc(hidden)]
    macro_rules! __tensor_ops_if_cuda {
        ($($tokens:tt)*) => { $($tokens)* };
    }
    /// Keeps its tokens (the CUDA rows `#[tensor_op]` emits) when tensor-ops is built with
    /// its `cuda` feature, and drops them without it.
    #[cfg(not(feature = "cuda"))]
    #[macro_export]
    #[doc(hidden)]
    macro_rules! __tensor_ops_if_cuda {
        ($($tokens:tt)*) => {};
    }
    pub use crate::__tensor_ops_if_cuda as if_cuda;
}
