//! Reductions (f32 `[r, c]`): sum, amax along the contiguous and the first dim, argmax,
//! var, logsumexp along the contiguous dim, and softmax.
//! `cargo bench -p tensor-benches --bench reduce`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn reduce(c: &mut Criterion) {
    let ops: Vec<Op> = Op::ALL.into_iter().filter(|&op| op.is_reduction() || op == Op::SoftmaxLast).collect();
    common::bench_ops(c, "reduce", &ops);
}

criterion_group!(benches, reduce);
criterion_main!(benches);
