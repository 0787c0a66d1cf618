//! Fill in place (f32). `cargo bench -p tensor-benches --bench fill`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn fill(c: &mut Criterion) {
    common::bench_ops(c, "fill", &[Op::Fill]);
}

criterion_group!(benches, fill);
criterion_main!(benches);
