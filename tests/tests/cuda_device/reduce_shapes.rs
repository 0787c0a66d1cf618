//! Reductions on `Device::Cuda` over the shapes with their own launch forms, equal to the
//! CPU: extents of 2 to 16 elements along the last or the first dim (the small pass: a
//! thread folds a whole extent), a 3-d tensor over its middle dim, a transposed input, and
//! one long row split over the GPU whose partials a block combines (the wide finish).

use super::DEV;
use crate::common::{assert_close, input, values, Lay};
use tensor_ops::prelude::*;

/// A reduction along one dim.
type Reduce = fn(&Tensor, usize) -> Tensor;

/// The reductions each shape runs: sum, amax, argmax, var and mean.
fn check(x: &Tensor, dim: usize, what: &str) {
    let g = x.to_device(DEV).unwrap();
    let d = x.dtype();
    let cases: [(&str, Reduce); 5] = [
        ("sum", |t, k| t.sum(&[k], false).unwrap()),
        ("amax", |t, k| t.amax(&[k], false).unwrap()),
        ("argmax", |t, k| t.argmax(k, false).unwrap()),
        ("var", |t, k| t.var(&[k], 1, false).unwrap()),
        ("mean", |t, k| t.mean(&[k], false).unwrap()),
    ];
    for (name, f) in cases {
        if !d.is_float() && matches!(name, "var" | "mean") {
            continue;
        }
        let want = f(x, dim);
        let got = f(&g, dim);
        assert_close(&values(&got), &values(&want), want.dtype(), false, &format!("{name} {what} dim {dim} {d}"));
    }
}

/// Extents of 2 … 16 along either dim of 2-d tensors (odd output counts included), along
/// the middle dim of a 3-d tensor and along a transposed input's dim.
pub fn small_extent_reductions_match_the_cpu() {
    for d in [DType::F32, DType::F16, DType::I32, DType::F64] {
        for e in [2usize, 3, 4, 5, 8, 11, 16] {
            let last = input(d, &[1001, e], Lay::Contiguous, e as u64);
            check(&last, 1, &format!("[1001, {e}]"));
            let first = input(d, &[e, 777], Lay::Contiguous, 3 + e as u64);
            check(&first, 0, &format!("[{e}, 777]"));
            let mid = input(d, &[5, e, 67], Lay::Contiguous, 7 + e as u64);
            check(&mid, 1, &format!("[5, {e}, 67]"));
            let t = input(d, &[e, 301], Lay::Contiguous, 9 + e as u64).t().unwrap();
            check(&t, 1, &format!("[{e}, 301].t()"));
        }
    }
}

/// One row of 2^22 elements (split over many blocks; a block combines the partials), with
/// its maximum placed near the end so argmax must keep the right partial.
pub fn one_long_row_reduces_like_the_cpu() {
    let n = 1usize << 22;
    // positive values: the sum is well conditioned (its rounding does not hide in cancellation)
    let mut v: Vec<f32> = (0..n).map(|i| ((i * 7919 + 13) % 2001) as f32 / 100.0).collect();
    v[n - 5] = 50.0;
    v[n / 3] = 50.0; // a tie: the first index wins
    let x = Tensor::from_vec(v, &[1, n]).unwrap();
    check(&x, 1, "[1, 2^22]");
    let whole = x.reshape(&[n as isize]).unwrap();
    let got = whole.to_device(DEV).unwrap().sum_all().unwrap();
    assert_close(&values(&got), &values(&whole.sum_all().unwrap()), DType::F32, false, "sum_all of 2^22");
}

/// argmax / argmin over rows full of ties and NaNs, read forwards and flipped (a negative
/// stride: the logical index falls as memory rises), long enough for the four-value folds
/// of the row kernel and short enough for the small pass: the first index of the winner
/// on the device as on the CPU.
pub fn arg_reductions_keep_the_first_index_either_way() {
    for n in [6usize, 13, 16, 64, 1000, 4099] {
        // values 0, 1, 2 with equal ones a few apart: ties inside every four-value fold
        let v: Vec<f32> = (0..7 * n).map(|i| (((i * 37) % 5) / 2) as f32).collect();
        let mut x = Tensor::from_vec(v, &[7, n]).unwrap();
        if n > 10 {
            let mut w = x.to_vec::<f32>().unwrap();
            w[n + 3] = f32::NAN; // row 1: a NaN wins
            w[2 * n + 1] = f32::NAN; // row 2: the first of two NaNs wins
            w[3 * n - 2] = f32::NAN;
            // row 4 all −∞ and row 5 all +∞: the first element wins (argmax / argmin)
            w[4 * n..5 * n].fill(f32::NEG_INFINITY);
            w[5 * n..6 * n].fill(f32::INFINITY);
            x = Tensor::from_vec(w, &[7, n]).unwrap();
        }
        // along the rows (dim 1) and, of the transposed copy, along the columns (dim 0)
        let y = x.t().unwrap().contiguous().unwrap();
        for (t, dim) in [(x.clone(), 1), (x.flip(1).unwrap(), 1), (y.clone(), 0), (y.flip(0).unwrap(), 0)] {
            let g = t.to_device(DEV).unwrap();
            for (name, f) in [
                ("argmax", (|t: &Tensor, d: usize| t.argmax(d, false).unwrap()) as Reduce),
                ("argmin", |t: &Tensor, d: usize| t.argmin(d, false).unwrap()),
            ] {
                let what = format!("{name} of {:?} dim {dim} with ties (strides {:?})", t.shape(), t.strides());
                assert_close(&values(&f(&g, dim)), &values(&f(&t, dim)), DType::I64, true, &what);
            }
        }
    }
}
