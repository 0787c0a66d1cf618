//! # tensor-kernels-cpu
//!
//! The CPU backend of tensor-ops: the [`value::Value`] lane algebra that `#[tensor_op]`
//! bodies are written against, block kernels ([`map`]), the strided elementwise driver
//! ([`elementwise`], a [`tensor_core::registry::KernelImpl`] for generated rows), copy/cast
//! and fill engines ([`copy`], [`fill`]), SIMD-level detection ([`simd_level`]), the
//! parallel split ([`parallel`]) and the caching allocator ([`alloc`]), and the built-in
//! reductions' and fused softmax rows' kernels (crate-private: `reduce::builtin`, `softmax`).
//! It registers their rows, its copy/fill rows and its allocator with the core through
//! `inventory` ([`register`]), against the specs the core defines; it knows nothing of other
//! backends or of `tensor-ops`.
//!
//! ```
//! tensor_kernels_cpu::ensure_linked();
//! let reg = tensor_core::registry();
//! let row = reg.lookup("copy", tensor_core::Device::Cpu, tensor_core::Layout::Strided, tensor_core::DType::F32).unwrap();
//! assert_eq!(row.kernel.kind(), "cpu-copy");
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod affine;
pub mod alloc;
pub mod byte_codes;
pub mod byte_map;
mod byte_table;
pub mod convert;
mod convert_f8;
#[cfg(target_arch = "x86_64")]
mod convert_f8_avx2;
#[cfg(target_arch = "x86_64")]
mod convert_f8_vbmi;
mod convert_int;
pub mod copy;
pub mod elementwise;
pub mod fused;
pub mod kernel;
pub mod map;
pub mod parallel;
pub mod placement;
mod quantize;
pub mod reduce;
pub mod register;
pub mod rows;
pub mod simd_level;
mod softmax;
mod sparse;
pub mod value;

pub use copy::fill;
pub use register::ensure_linked;
