//! # tensor-benches
//!
//! Shared performance-measurement code for the `cpu-perf` and `cuda-perf` regression
//! runners, the peer comparison (`cargo bench --bench peers`) and the criterion benches.
//!
//! The yardstick for memory-bound kernels is bytes moved per second (bytes read + bytes
//! written, each element counted once) against this machine's own STREAM-like figure for the
//! same access pattern, measured in the same run ([`stream`]). Ratios taken in one run are
//! what the baselines store and compare ([`baseline`]); absolute times from different runs
//! are never compared.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod baseline;
pub mod cases;
pub mod cli;
pub mod cpu_suite;
pub mod cuda;
pub mod data;
pub mod error;
pub mod gate;
pub mod machine;
pub mod markdown;
pub mod ours;
pub mod par;
pub mod report;
pub mod shapes;
pub mod sparse;
pub mod stream;
pub mod timing;

mod nt;

pub use error::{BenchError, BenchResult};
