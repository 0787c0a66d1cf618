//! # tensor-core
//!
//! The data model of tensor-ops: dtypes, devices, refcounted [`Storage`] shared by strided
//! [`Tensor`] views, stride-aware iteration, type promotion, errors, the one call path every
//! op goes through ([`call`]) and the dispatch [`Registry`] with its backend seam
//! ([`registry::KernelImpl`]). Kernels live in the backends (`tensor-kernels-cpu`,
//! `tensor-kernels-cuda`), ops in `tensor-ops`; this crate depends on none of them (they
//! register themselves into [`registry()`]).
//!
//! ```
//! # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
//! use tensor_ops::{Tensor, DType, Device};
//! let t = Tensor::arange(0, 6, 1, DType::F32, Device::Cpu).unwrap().view(&[2, 3]).unwrap();
//! let col = t.select(1, 2).unwrap();
//! assert_eq!(col.to_vec::<f32>().unwrap(), vec![2.0, 5.0]);
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod call;
mod device;
mod dtype;
mod element;
mod error;
mod f8;
mod interop;
pub mod iter;
pub mod limits;
pub mod overlap;
mod promote;
pub mod quant;
pub mod reference;
pub mod registry;
mod runtime;
mod scalar;
pub mod shape;
mod sparse;
mod storage;
mod tensor;

pub use device::{Device, DeviceKind, Layout};
#[cfg(feature = "dlpack")]
pub use dlpark;
pub use dtype::DType;
pub use element::{CastFrom, ElemOf, Element, Stored, StoredType};
pub use error::{Error, Result};
pub use f8::{F8E4M3, F8E4M3_TO_F32, F8E5M2, F8E5M2_TO_F32};
#[cfg(feature = "safetensors")]
pub use interop::safetensors_io;
#[cfg(feature = "dlpack")]
pub use interop::DlpackTensor;
pub use limits::{MAX_INPUTS, MAX_PARAMS};
#[cfg(feature = "ndarray")]
pub use ndarray;
pub use promote::{promote_types, result_type};
pub use quant::{quantize_per_channel, quantize_per_tensor, Quantizer};
pub use reference::{naive_copy, naive_fill};
pub use registry::{registry, Registry};
pub use runtime::{runtime_for, set_cuda_runtime, set_runtime, DeviceRuntime, RuntimeFactory};
pub use scalar::Scalar;
pub use storage::{
    allocator_for, lock_many, lock_many_for, set_allocator, Access, Allocator, AllocatorFactory, CpuAllocator, DataPtr,
    Deleter, LockSet, Storage, StorageRead, StorageWrite, CPU_ALIGN,
};
pub use tensor::Tensor;

pub use half;
#[doc(hidden)]
pub use inventory;
