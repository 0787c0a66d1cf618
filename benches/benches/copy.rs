//! Copy to contiguous: contiguous copy, 2-D transpose, 3-D permute (2,0,1), every-other-column
//! slice; f32, plus f16 and i64 transposes. `cargo bench -p tensor-benches --bench copy`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use tensor_benches::cases::Op;

fn copy(c: &mut Criterion) {
    common::bench_ops(c, "copy", &[Op::Copy, Op::Transpose, Op::Permute, Op::SliceCols]);
}

criterion_group!(benches, copy);
criterion_main!(benches);
