//! Unary maps: exp and relu, new output and preallocated `out` (f32).
//! `cargo bench -p tensor-benches --bench unary`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn unary(c: &mut Criterion) {
    common::bench_ops(c, "unary", &[Op::ExpNew, Op::ExpOut, Op::ReluNew, Op::ReluOut]);
}

criterion_group!(benches, unary);
criterion_main!(benches);
