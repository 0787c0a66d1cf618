//! # tensor-cuda-testing
//!
//! Test harnesses of the CUDA backend, kept out of the published `tensor-kernels-cuda` so
//! that no CUDA build carries them (`publish = false`; a dev-dependency of `tensor-tests`
//! and `tensor-benches`):
//!
//! - [`check`]: compile generated kernels with NVRTC and report registers/spills (the
//!   CI check that needs no GPU), over the sample device functions of [`samples`];
//! - [`coverage`]: which kernels of a suite that check compiles (every kernel, or a sample
//!   that compiles every body and every template × dtype combination);
//! - [`shim`]: runs generated CUDA C on the CPU (host C++ compiler under
//!   `kernels/cuda-testing/include/shim.h`);
//! - [`standin`]: builds the CPU-backed stand-in of the CUDA driver and NVRTC
//!   (`kernels/cuda-testing/standin/`), so the whole backend runs without a GPU;
//! - [`prebuild`]: under the stand-in, builds many kernels per host-compiler run ahead of
//!   the tests that launch them.
//!
//! The build-script probe that reports these tests as ignored where they cannot run lives in
//! `kernels/cuda-testing/build/cuda_checks_probe.rs` (`include!`d by the build scripts of
//! this crate, `tests` and `benches`). Everything here uses the backend's public API only.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod check;
pub mod coverage;
pub mod prebuild;
pub mod samples;
pub mod shim;
pub mod standin;

/// The host shim header that compiles generated kernels with a host C++ compiler.
pub const SHIM_HEADER: &str = include_str!("../include/shim.h");
