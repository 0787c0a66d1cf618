//! CUDA runtime, NVRTC compilation and kernel templates.
//!
//! - [`nvrtc`]: find/load NVRTC, compile to cubin or PTX, cached ([`cache`]);
//! - [`codegen`]: kernel templates around `#[tensor_op]` device functions, casts, copies,
//!   fills and tiled transposes, with their argument blocks in [`args`];
//! - [`check`]: compile every generated kernel and report registers/spills (CI, no GPU).
//!
//! CUDA C headers: `kernels/cuda/prelude.cuh` (helpers of generated code), `args.cuh`
//! (argument structs) and `shim.h` (runs the same source on the CPU in tests).

pub mod args;
pub mod cache;
pub mod check;
pub mod codegen;
pub mod ctype;
pub mod divmod;
pub mod nvrtc;
pub mod runtime;
pub mod samples;

/// The host shim header that compiles generated kernels with a host C++ compiler.
pub const SHIM_HEADER: &str = include_str!("../../cuda/shim.h");
