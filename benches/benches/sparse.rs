//! Sparse layouts (issue 34) at criterion sizes: spmv and spmm of a CSR matrix, to_dense at
//! 1 % and 10 %, coalesce with duplicates — `tensor_benches::sparse`'s quick set (the
//! `cpu-perf` shapes divided by 16), `Throughput::Bytes` = the bytes each call must move.
//! `cargo bench -p tensor-benches --bench sparse`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;
use tensor_benches::sparse::{cpu_set, prepare};

fn sparse(c: &mut Criterion) {
    let mut g = c.benchmark_group("sparse");
    g.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for case in cpu_set(true) {
        let mut call = match prepare(&case) {
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

criterion_group!(benches, sparse);
criterion_main!(benches);
