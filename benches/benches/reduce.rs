//! Reductions (f32 `[r, c]`): sum, amax along the contiguous and the first dim, argmax,
//! var, logsumexp along the contiguous dim, and softmax.
//! `cargo bench -p tensor-benches --bench reduce`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn reduce(c: &mut Criterion) {
    common::bench_ops(
        c,
        "reduce",
        &[
            Op::SumLast,
            Op::SumFirst,
            Op::AmaxLast,
            Op::AmaxFirst,
            Op::ArgmaxLast,
            Op::VarLast,
            Op::LogsumexpLast,
            Op::SoftmaxLast,
        ],
    );
}

criterion_group!(benches, reduce);
criterion_main!(benches);
