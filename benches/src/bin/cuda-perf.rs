//! `cargo run --release -p tensor-benches --bin cuda-perf -- [--record] [--quick] [--tolerance F]`
//!
//! Measures GPU kernel throughput (CUDA events, L2 flushed, median of ≥ 20 runs) at
//! 1 MiB … 1 GiB beside a same-run device-to-device memcpy, compares the ratios with
//! `benches/baselines/cuda/<gpu name>.json`, writes `cuda-perf.json` and `cuda-perf.md`, and
//! exits 1 on a regression beyond the tolerance. Without a GPU it says so and exits 0.

use std::process::ExitCode;
use tensor_benches::{cuda, gate};

fn main() -> ExitCode {
    gate::main(
        "cuda-perf",
        "GPU kernel throughput vs. same-run device-to-device memcpy, gated against a per-GPU baseline",
        "cuda",
        cuda::suite::run,
    )
}
