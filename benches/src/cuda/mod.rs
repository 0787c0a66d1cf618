//! The `cuda-perf` runner: GPU kernel throughput beside a same-run device-to-device memcpy.
//!
//! [`adapter`] is the only place that talks to the CUDA driver (events, memcpy, L2 flush)
//! and to the tensor-kernels-cuda runtime; [`suite`] measures through the public tensor API,
//! the shared bench set and the GPU-only cases of [`extra`].

pub mod adapter;
pub mod extra;
pub mod suite;
