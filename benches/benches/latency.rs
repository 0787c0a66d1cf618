//! Per-call latency of `add` (new output) and `add_out` on 1 and 1024 f32 elements
//! (dispatch + allocation overhead). `cargo bench -p tensor-benches --bench latency`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;
use tensor_benches::cases::{latency_key, latency_out_key, LATENCY_ELEMS};
use tensor_benches::ours;

fn latency(c: &mut Criterion) {
    let mut g = c.benchmark_group("latency");
    g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for n in LATENCY_ELEMS {
        let mut call = match ours::prepare_latency(n) {
            Ok(call) => call,
            Err(e) => {
                eprintln!("{}: setup failed, skipped: {e}", latency_key(n));
                continue;
            }
        };
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(latency_key(n), |b| b.iter(|| call().expect("tensor-ops call failed")));
        match ours::prepare_latency_out(n) {
            Ok(mut call) => {
                g.bench_function(latency_out_key(n), |b| b.iter(|| call().expect("tensor-ops call failed")));
            }
            Err(e) => eprintln!("{}: setup failed, skipped: {e}", latency_out_key(n)),
        }
    }
    g.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
