//! Fused chains (f32): `relu(a*b + c)` fused and eager, `((a - b)²).sum()` fused and eager,
//! and the composed `silu` beside `relu`. `cargo bench -p tensor-benches --bench fused`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn fused(c: &mut Criterion) {
    let ops = [Op::FusedTriad, Op::EagerTriad, Op::FusedSqDiffSum, Op::EagerSqDiffSum, Op::SiluNew, Op::ReluNew];
    common::bench_ops(c, "fused", &ops);
}

criterion_group!(benches, fused);
criterion_main!(benches);
