//! Binary add: new output, preallocated `out`, one input transposed; f32, f16 and i64.
//! `cargo bench -p tensor-benches --bench binary`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn binary(c: &mut Criterion) {
    common::bench_ops(c, "binary", &[Op::AddNew, Op::AddOut, Op::AddTransposed]);
}

criterion_group!(benches, binary);
criterion_main!(benches);
