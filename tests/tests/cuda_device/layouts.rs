//! Maps on `Device::Cuda` through each launch shape the planner picks, equal to the CPU bit
//! for bit: dense operands around the contiguous kernel's vector and unroll boundaries
//! (aligned and misaligned), and maps whose inputs disagree with the output on the fastest
//! dim (`a + b.t()`, permuted batches, a transposed leaf of a fused chain, a cast of a
//! transposed view), which go through the tiled kernel. Every output starts poisoned.

use super::{device_view, DEV};
use crate::common::{assert_close, input, poison, values, Lay};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// Dtypes of 1, 2, 4 and 8 bytes (the contiguous kernel moves 16 / size elements a vector).
const DTYPES: [DType; 5] = [DType::U8, DType::F16, DType::F32, DType::I64, DType::F64];

/// `a + b` on the device into a poisoned output, against the CPU.
fn add_matches(a: &Tensor, b: &Tensor, what: &str) {
    let want = a.add(b).unwrap();
    let out = Tensor::empty(want.shape(), want.dtype(), DEV).unwrap();
    poison(&out);
    tensor_ops::add_out(&device_view(a, DEV), &device_view(b, DEV), &out).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_close(&values(&out), &values(&want), want.dtype(), true, what);
    let new = device_view(a, DEV).add(&device_view(b, DEV)).unwrap();
    assert_close(&values(&new), &values(&want), want.dtype(), true, &format!("{what} (new)"));
}

/// Dense maps of lengths around the vector (16 bytes), block (256 threads) and unroll (4
/// vectors a thread) boundaries, aligned and one element into their storage (the scalar
/// path), and with a broadcast scalar input.
pub fn dense_maps_of_every_length_match_the_cpu() {
    for d in DTYPES {
        for n in [1usize, 15, 16, 17, 255, 1024, 4096 + 3, 4 * 256 * 16 + 17, 70_001] {
            let a = input(d, &[n], Lay::Contiguous, 1);
            let b = input(d, &[n], Lay::Contiguous, 2);
            add_matches(&a, &b, &format!("{d} add of {n}"));
            let (ao, bo) = (input(d, &[n], Lay::Offset, 3), input(d, &[n], Lay::Offset, 4));
            add_matches(&ao, &bo, &format!("{d} misaligned add of {n}"));
            let s = input(d, &[1], Lay::Contiguous, 5);
            add_matches(&a, &s.expand(&[n]).unwrap(), &format!("{d} add of {n} and a broadcast element"));
        }
    }
}

/// Maps whose output is dense along its last dim while an input is dense along another
/// dim: 2-d and batched shapes with partial tiles, both inputs transposed, a broadcast
/// beside a transposed input, a fused chain with a transposed leaf, and casts.
pub fn maps_with_transposed_operands_match_the_cpu() {
    for d in DTYPES {
        for shape in [[1usize, 37, 45], [1, 64, 96], [3, 40, 33], [2, 17, 130]] {
            let [b0, r, c] = shape;
            let a = input(d, &shape, Lay::Contiguous, 1);
            // b.t(): dense along the rows of the result
            let bt = input(d, &[b0, c, r], Lay::Contiguous, 2).transpose(1, 2).unwrap();
            add_matches(&a, &bt, &format!("{d} a + b.t() {shape:?}"));
            add_matches(&bt, &a, &format!("{d} b.t() + a {shape:?}"));
            let at = input(d, &[b0, c, r], Lay::Contiguous, 3).transpose(1, 2).unwrap();
            add_matches(&at, &bt, &format!("{d} a.t() + b.t() {shape:?}"));
            // the batch dim innermost in memory: permuted [c, r, b] storage
            let p = input(d, &[c, r, b0], Lay::Contiguous, 4).permute(&[2, 1, 0]).unwrap();
            add_matches(&a, &p, &format!("{d} a + permuted {shape:?}"));
            // a row broadcast beside a transposed input
            let row = input(d, &[c], Lay::Contiguous, 5).expand(&shape).unwrap();
            add_matches(&row, &bt, &format!("{d} row + b.t() {shape:?}"));
            // a cast of a transposed view into a dense result
            let to = if d == DType::F32 { DType::F64 } else { DType::F32 };
            let want = bt.to_dtype(to).unwrap();
            let got = device_view(&bt, DEV).to_dtype(to).unwrap();
            assert_close(&values(&got), &values(&want), to, true, &format!("{d} -> {to} of b.t() {shape:?}"));
        }
    }
    // a fused relu(a * b.t() + c) on the device equals the eager CPU chain
    for shape in [[64usize, 96], [33, 47]] {
        let a = input(DType::F32, &shape, Lay::Contiguous, 6);
        let bt = input(DType::F32, &[shape[1], shape[0]], Lay::Contiguous, 7).t().unwrap();
        let c = input(DType::F32, &shape, Lay::Contiguous, 8);
        let want = a.mul(&bt).unwrap().add(&c).unwrap().relu().unwrap();
        let (ga, gb, gc) = (device_view(&a, DEV), device_view(&bt, DEV), device_view(&c, DEV));
        let (x, y, z) = (Expr::input(&ga), Expr::input(&gb), Expr::input(&gc));
        let out = Tensor::empty(&shape, DType::F32, DEV).unwrap();
        poison(&out);
        (&x * &y + &z).relu().eval_into(&out).unwrap();
        assert_close(&values(&out), &values(&want), DType::F32, true, &format!("fused relu(a*b.t()+c) {shape:?}"));
    }
}

/// Transposing copies of every dtype of one and two bytes, through the word-wise kernel
/// (extents, strides and start on the word boundaries) and beside it (an odd extent, a
/// start one element in), into poisoned outputs.
pub fn narrow_transposed_copies_match_the_cpu() {
    let narrow = DType::ALL.into_iter().filter(|d| d.size() <= 2 && !d.is_quantized());
    for d in narrow {
        for shape in [[1usize, 64, 96], [3, 132, 260], [2, 68, 44], [1, 37, 46], [2, 130, 45]] {
            let [b0, r, c] = shape;
            let src = input(d, &[b0, c, r], Lay::Contiguous, 1);
            for (what, view) in [
                ("transpose", src.transpose(1, 2).unwrap()),
                ("transpose one element in", src.narrow(2, 1, r - 1).unwrap().transpose(1, 2).unwrap()),
            ] {
                let want = view.contiguous().unwrap();
                let out = Tensor::empty(want.shape(), d, DEV).unwrap();
                poison(&out);
                out.copy_(&device_view(&view, DEV)).unwrap_or_else(|e| panic!("{d} {what} {shape:?}: {e}"));
                assert_close(&values(&out), &values(&want), d, true, &format!("{d} {what} {shape:?}"));
                let new = device_view(&view, DEV).contiguous().unwrap();
                assert_close(&values(&new), &values(&want), d, true, &format!("{d} {what} {shape:?} (new)"));
            }
        }
        // a 3-d permute whose innermost dims swap, batch in between
        let p = input(d, &[44, 8, 68], Lay::Contiguous, 2).permute(&[1, 2, 0]).unwrap();
        let want = p.contiguous().unwrap();
        let got = device_view(&p, DEV).contiguous().unwrap();
        assert_close(&values(&got), &values(&want), d, true, &format!("{d} permute (1, 2, 0)"));
    }
}
