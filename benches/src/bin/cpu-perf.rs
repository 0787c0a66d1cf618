//! `cargo run --release -p tensor-benches --bin cpu-perf -- [--record] [--quick] [--tolerance F]`
//!
//! Measures the CPU bench set as GB/s beside same-run STREAM figures, compares the ratios
//! with `benches/baselines/cpu/<cpu model>-<simd level>.json`, writes `cpu-perf.json` and `cpu-perf.md`,
//! and exits 1 on a regression beyond the tolerance.

use std::process::ExitCode;
use tensor_benches::{cpu_suite, gate};

fn main() -> ExitCode {
    gate::main(
        "cpu-perf",
        "CPU kernel throughput vs. same-run STREAM, gated against a per-CPU baseline",
        "cpu",
        |opts| cpu_suite::run(opts).map(Some),
    )
}
