//! # tensor-kernels-cuda
//!
//! The CUDA backend of tensor-ops: runtime, NVRTC compilation and kernel templates. It
//! depends on the core only; `tensor-ops` pulls it in with its default `cuda` feature.
//!
//! - [`runtime`]: driver probe, one context + stream + kernel cache per device;
//!   [`alloc`]: the stream-ordered caching allocator; [`transfer`]: host↔device copies;
//!   [`register`]: their `inventory` registrations and the CUDA `"copy"`/`"fill"` rows;
//! - [`plan`]: pure launch planning (layout class, index width, host splits, transposes);
//!   [`launch`]: `launch_map`, `copy`, `fill` running those plans on a device;
//! - [`nvrtc`]: find/load NVRTC, compile to cubin or PTX, cached ([`cache`]);
//! - [`codegen`]: kernel templates around `#[tensor_op]` device functions, casts, copies,
//!   fills and tiled transposes, with their argument blocks in [`args`];
//! - [`reduce_plan`] / [`reduce_codegen`]: reductions (row, column and second-pass kernels
//!   over the reducers of `kernels/cuda/include/reduce.cuh`), launched by [`launch`]; the
//!   built-in reductions' and fused softmax rows' registry rows (`reduce_rows.rs`, against
//!   the core's specs and dtype rule);
//! - [`sparse`]: the rows of the sparse layouts' steps (scatter, radix sort, scans, segment
//!   sums, to_sparse, CSR row pointers; CUDA C in `include/sparse.cuh`, `sparse_sort.cuh`);
//!
//! CUDA C headers: `kernels/cuda/include/prelude.cuh` (helpers of generated code) and
//! `args.cuh` (argument structs). The test harnesses (the NVRTC check of every kernel, the
//! CPU shim, the driver/NVRTC stand-in) live in the unpublished `tensor-cuda-testing` crate
//! (`kernels/cuda-testing/`), which uses this crate's public API.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod alloc;
pub mod args;
pub mod block_cache;
pub mod cache;
pub mod codegen;
pub mod compiled;
pub mod ctype;
pub mod divmod;
pub mod fused;
pub mod kernel;
pub mod launch;
mod map_templates;
pub mod nvrtc;
pub mod plan;
pub mod reduce_codegen;
pub mod reduce_plan;
mod reduce_rows;
pub mod register;
pub mod runtime;
pub mod softmax_rows;
pub mod sparse;
pub mod sparse_codegen;
pub mod transfer;
mod transpose_templates;

pub use launch::launch_map;
pub use register::ensure_linked;
