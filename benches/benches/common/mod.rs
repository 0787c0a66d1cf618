//! Shared criterion setup for the family benches: each case of the bench set at the
//! cache-resident size and (under `cargo bench` only) the DRAM size, with
//! `Throughput::Bytes` = bytes read + written per call.

use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use std::time::Duration;
use tensor_benches::cases::{cpu_set, Case, Op, Sizes};
use tensor_benches::markdown::human_bytes;
use tensor_benches::ours;

/// Whether this is a real `cargo bench` run. `cargo test --all-targets` runs bench targets
/// without `--bench` (criterion's test mode, one iteration each): skip the DRAM size then.
pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The sizes to run: the DRAM size only in bench mode (and unless `TENSOR_BENCH_BIG=0`).
pub fn sizes() -> Sizes {
    let s = Sizes::from_env(false);
    if bench_mode() {
        s
    } else {
        Sizes { dram: None, ..s }
    }
}

fn configure(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: u64) {
    if bytes >= 64 << 20 {
        // DRAM sizes take 10–1000 ms per call: flat sampling, the minimum sample count.
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(3));
    } else {
        g.sample_size(30).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    }
}

/// Benches every case of the bench set whose op is in `ops`, one group per
/// `family/size`.
pub fn bench_ops(c: &mut Criterion, family: &str, ops: &[Op]) {
    let sizes = sizes();
    for bytes in sizes.all() {
        let cases: Vec<Case> =
            cpu_set(&sizes).into_iter().filter(|k| k.array_bytes == bytes && ops.contains(&k.op)).collect();
        let mut g = c.benchmark_group(format!("{family}/{}", human_bytes(bytes).replace(' ', "")));
        configure(&mut g, bytes);
        for case in cases {
            let mut call = match ours::prepare(&case) {
                Ok(call) => call,
                Err(e) => {
                    eprintln!("{}: setup failed, skipped: {e}", case.key());
                    continue;
                }
            };
            g.throughput(Throughput::Bytes(case.bytes()));
            g.bench_function(case.key(), |b| b.iter(|| call().expect("tensor-ops call failed")));
        }
        g.finish();
    }
}
