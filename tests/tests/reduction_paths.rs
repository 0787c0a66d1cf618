//! The CPU reduction engine's paths against the naive model: long runs in blocks and
//! chunks, column tiles and leaves of every length, streamed softmax rows, f32 accuracy
//! over 2^24 elements, and results that do not depend on the thread count.

#[path = "reduce/model.rs"]
mod model;
#[path = "reduce/reference.rs"]
mod reference;

use model::{as_f64, check, noise, tensor_of, values, DTYPES};
use tensor_ops::prelude::*;

#[test]
fn f32_sums_of_2_pow_24_elements_are_accurate_on_both_axes() {
    let n = 1 << 24;
    let xs = noise(n, 7);
    let exact: f64 = xs.iter().map(|&x| x as f64).sum();
    let abs: f64 = xs.iter().map(|&x| (x as f64).abs()).sum();
    let t = Tensor::from_vec(xs.clone(), &[n]).unwrap();
    let got = t.sum_all().unwrap().to_vec::<f32>().unwrap()[0] as f64;
    assert!((got - exact).abs() <= 1e-5 * abs, "whole: {got} vs {exact} (Σ|x| = {abs})");
    // One column of 2^22 rows (the column engine's pairwise tree) and 4 columns.
    let c = Tensor::from_vec(xs, &[n / 4, 4]).unwrap();
    let cols = c.sum(&[0], false).unwrap().to_vec::<f32>().unwrap();
    let data = c.to_vec::<f32>().unwrap();
    for (j, &g) in cols.iter().enumerate() {
        let e: f64 = data.iter().skip(j).step_by(4).map(|&x| x as f64).sum();
        let a: f64 = data.iter().skip(j).step_by(4).map(|&x| (x as f64).abs()).sum();
        assert!((g as f64 - e).abs() <= 1e-5 * a, "column {j}: {g} vs {e}");
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let xs = noise(1 << 20, 3);
    let t = Tensor::from_vec(xs, &[1024, 1024]).unwrap();
    let run = || {
        (
            t.sum_all().unwrap().to_vec::<f32>().unwrap(),
            t.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(),
            t.var(&[1], 1, false).unwrap().to_vec::<f32>().unwrap(),
            t.var(&[0], 1, false).unwrap().to_vec::<f32>().unwrap(),
            t.argmax(0, false).unwrap().to_vec::<i64>().unwrap(),
            t.narrow(0, 0, 3).unwrap().logsumexp(&[0, 1], false).unwrap().to_vec::<f32>().unwrap(),
        )
    };
    let many = run();
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        assert_eq!(pool.install(run), many, "{threads} threads");
    }
}

/// The absolute error allowed near zero: a softmax output below the dtype's smallest
/// subnormal rounds to 0 or to that subnormal (f16's is 2^-24).
fn tiny(dtype: DType) -> f64 {
    if dtype == DType::F16 {
        6e-8
    } else {
        1e-37
    }
}

#[test]
fn fused_softmax_rows_match_the_model_in_place_too() {
    // f16/bf16 rows are computed in f32 and rounded once: within one rounding of their own.
    for (dtype, tol) in [(DType::F16, 1e-3), (DType::BF16, 4e-3), (DType::F32, 2e-6), (DType::F64, 1e-13)] {
        for len in [1usize, 15, 16, 17, 100, 1000] {
            let xs = noise(3 * len, len as u64);
            let t = Tensor::from_vec(xs.iter().map(|&x| x as f64 * 20.0).collect::<Vec<_>>(), &[3, len])
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let vals = as_f64(&t);
            let sm = as_f64(&t.softmax(1).unwrap());
            let lsm = as_f64(&t.log_softmax(1).unwrap());
            for r in 0..3 {
                let row = &vals[r * len..(r + 1) * len];
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = row.iter().map(|y| (y - m).exp()).sum();
                for k in 0..len {
                    let want = (row[k] - m).exp() / s;
                    // e^(x − m) carries the rounding of x − m: relative error ~ |x − m| · eps.
                    let rel = tol * (1.0 + (row[k] - m).abs());
                    assert!(
                        (sm[r * len + k] - want).abs() <= rel * want + tiny(dtype),
                        "{dtype} len {len}: {} vs {want}",
                        sm[r * len + k]
                    );
                    let want_log = row[k] - m - s.ln();
                    assert!(
                        (lsm[r * len + k] - want_log).abs() <= tol * want_log.abs().max(1.0) * 4.0,
                        "{dtype} log len {len}"
                    );
                }
            }
            // In place (the output is the input).
            let copy = t.contiguous().unwrap().to_dtype(dtype).unwrap();
            let own = Tensor::empty(t.shape(), dtype, Device::Cpu).unwrap();
            own.copy_(&copy).unwrap();
            tensor_ops::softmax_out(&own, 1, &own).unwrap();
            assert_eq!(as_f64(&own), sm, "{dtype} len {len} in place");
        }
    }
    // A NaN poisons its row only.
    let t =
        Tensor::from_vec((0..40).map(|i| if i == 3 { f32::NAN } else { i as f32 * 0.1 }).collect::<Vec<_>>(), &[2, 20])
            .unwrap();
    let s = t.softmax(1).unwrap().to_vec::<f32>().unwrap();
    assert!(s[..20].iter().all(|x| x.is_nan()) && s[20..].iter().all(|x| x.is_finite()));
}

/// Two equal extremes (or two NaNs) inside one 64-element chunk of the position scan, read
/// forwards and flipped: the first in logical order wins.
#[test]
fn argmax_ties_inside_one_chunk() {
    for (a, b, special) in [(70, 90, 9.0f32), (64, 127, 9.0), (65, 100, f32::NAN)] {
        let mut v: Vec<f32> = (0..192).map(|i| (i % 13) as f32 * 0.1).collect();
        v[a] = special;
        v[b] = special;
        let t = Tensor::from_vec(v.clone(), &[1, 192]).unwrap();
        assert_eq!(t.argmax(1, false).unwrap().to_vec::<i64>().unwrap(), vec![a as i64], "ties at {a}, {b}");
        let flipped = t.flip(1).unwrap();
        let want = vec![(191 - b) as i64];
        assert_eq!(flipped.argmax(1, false).unwrap().to_vec::<i64>().unwrap(), want, "flipped, ties at {a}, {b}");
        let neg = Tensor::from_vec(v.iter().map(|x| -x).collect::<Vec<f32>>(), &[1, 192]).unwrap();
        assert_eq!(neg.argmin(1, false).unwrap().to_vec::<i64>().unwrap(), vec![a as i64], "argmin, ties at {a}, {b}");
    }
}

#[test]
fn argmax_over_long_rows_across_blocks() {
    let naive = |v: &[f32], max: bool| first_extreme(&v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(), max);
    // Rows of a little over two row leaves (the blocks the row engine folds one by one).
    const B: usize = tensor_kernels_cpu::reduce::ROW_LEAF;
    const LEN: usize = 2 * B + B / 4 + 7;
    let base: Vec<f32> = noise(LEN, 11);
    let mut cases: Vec<Vec<f32>> = vec![base.clone()];
    let mut ties = base.clone();
    ties[100] = 5.0;
    ties[B + 100] = 5.0; // the same maximum in a later block: the first wins
    ties[200] = -5.0;
    ties[2 * B + 100] = -5.0;
    cases.push(ties.clone());
    let mut late_nan = ties.clone();
    late_nan[2 * B + 400] = f32::NAN;
    cases.push(late_nan);
    let mut two_nans = ties;
    two_nans[B / 2] = f32::NAN;
    two_nans[B + B / 2] = f32::NAN;
    cases.push(two_nans);
    for v in cases {
        let t = Tensor::from_vec(v.clone(), &[1, LEN]).unwrap();
        for max in [true, false] {
            let got = if max { t.argmax(1, false) } else { t.argmin(1, false) }.unwrap().to_vec::<i64>().unwrap()[0];
            assert_eq!(got, naive(&v, max), "max {max}");
            // Flipped: logical index order reversed.
            let f = t.flip(1).unwrap();
            let mut rv = v.clone();
            rv.reverse();
            let got = if max { f.argmax(1, false) } else { f.argmin(1, false) }.unwrap().to_vec::<i64>().unwrap()[0];
            assert_eq!(got, naive(&rv, max), "flipped, max {max}");
        }
    }
}

/// An output of 16 MiB and more goes out of the row kernel through streaming stores (the
/// row built in a cache-resident scratch first): the same values as the model, every row.
/// Column reductions (over dim 0) of tensors wide enough to span several column tiles of
/// every accumulator size (4-byte sums to 16-byte var/argmax accumulators), with a partial
/// last tile and more rows than one leaf: the model for every output.
#[test]
fn wide_column_reductions_across_tiles_match_the_model() {
    let (rows, cols) = (70, 17_000);
    let t = tensor_of(&values(rows * cols, DType::F32), &[rows, cols], DType::F32);
    let what = |op: &str| format!("{op} over dim 0 of [{rows}, {cols}]");
    check("sum", &t, &[0], false, 0.0, &t.sum(&[0], false).unwrap(), &what("sum"));
    check("amax", &t, &[0], false, 0.0, &t.amax(&[0], false).unwrap(), &what("amax"));
    check("logsumexp", &t, &[0], false, 0.0, &t.logsumexp(&[0], false).unwrap(), &what("logsumexp"));
    check("var", &t, &[0], false, 1.0, &t.var(&[0], 1, false).unwrap(), &what("var"));
    let arg = t.argmax(0, false).unwrap().to_vec::<i64>().unwrap();
    let vals = t.to_vec::<f32>().unwrap();
    for (c, &got) in arg.iter().enumerate() {
        let column = (0..rows).map(|r| vals[r * cols + c]);
        let want = column.enumerate().fold((0, f32::NEG_INFINITY), |b, (r, x)| if x > b.1 { (r, x) } else { b }).0;
        assert_eq!(got, want as i64, "argmax over dim 0, column {c}");
    }
}

#[test]
fn softmax_rows_larger_than_the_cache_are_streamed_right() {
    // Outputs of 16 MiB and more stream their rows out while the next row computes; odd row
    // lengths put every row's first aligned line at another offset. A NaN row and a −inf row
    // sit in the middle (their neighbours must not notice), and `_out` targets are poisoned.
    // f16/bf16 rows (computed in f32, written with plain stores) take the same cases.
    let cases = [
        (DType::F32, 256usize, 16387usize, 2e-6),
        (DType::F64, 128, 16389, 1e-13),
        (DType::F16, 64, 16387, 1e-3),
        (DType::BF16, 64, 16389, 4e-3),
    ];
    for (dtype, rows, len, tol) in cases {
        let mut xs: Vec<f64> = noise(rows * len, len as u64).iter().map(|&x| x as f64 * 20.0).collect();
        xs[7 * len + 5] = f64::NAN;
        xs[9 * len..10 * len].fill(f64::NEG_INFINITY);
        let t = Tensor::from_vec(xs, &[rows, len]).unwrap().to_dtype(dtype).unwrap();
        let vals = as_f64(&t);
        for log in [false, true] {
            let out = Tensor::full(&[rows, len], f64::NAN, dtype, Device::Cpu).unwrap();
            if log {
                tensor_ops::log_softmax_out(&t, 1, &out).unwrap();
            } else {
                tensor_ops::softmax_out(&t, 1, &out).unwrap();
            }
            let got = as_f64(&out);
            for r in 0..rows {
                let row = &vals[r * len..(r + 1) * len];
                let got = &got[r * len..(r + 1) * len];
                if r == 7 || r == 9 {
                    assert!(got.iter().all(|v| v.is_nan()), "{dtype} log {log}: row {r} must be NaN");
                    continue;
                }
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = row.iter().map(|y| (y - m).exp()).sum();
                for k in 0..len {
                    let (want, err) = if log {
                        let w = row[k] - m - s.ln();
                        (w, tol * w.abs().max(1.0) * 4.0)
                    } else {
                        let w = (row[k] - m).exp() / s;
                        (w, tol * (1.0 + (row[k] - m).abs()) * w + tiny(dtype))
                    };
                    assert!((got[k] - want).abs() <= err, "{dtype} log {log} row {r} at {k}: {} vs {want}", got[k]);
                }
            }
            // In place: the same bits.
            let own = Tensor::empty(&[rows, len], dtype, Device::Cpu).unwrap();
            own.copy_(&t).unwrap();
            if log {
                tensor_ops::log_softmax_out(&own, 1, &own).unwrap();
            } else {
                tensor_ops::softmax_out(&own, 1, &own).unwrap();
            }
            let same =
                as_f64(&own).iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
            assert!(same, "{dtype} log {log} in place");
        }
    }
}

/// Column folds over more rows than one leaf of every length (64 rows for sums, 256 for
/// argmax/argmin and var, whose column folds take two rows per sweep): an odd row count
/// leaves a last leaf of a few rows and a lone last row, values repeat (ties across leaves),
/// and for floats a column gets NaNs after row 300 (argmax/argmin pick the first of them).
#[test]
fn column_folds_over_several_long_leaves_match_the_model() {
    let (rows, cols) = (531, 24);
    for dtype in DTYPES {
        let mut vals = values(rows * cols, dtype);
        if dtype.is_float() {
            for r in [301, 420] {
                vals[r * cols + 5] = f64::NAN;
            }
        }
        let t = tensor_of(&vals, &[rows, cols], dtype);
        let flipped = t.flip(0).unwrap();
        for (layout, v) in [("contiguous", &t), ("flipped", &flipped)] {
            let what = |op: &str| format!("{op} {dtype} {layout} over dim 0 of [{rows}, {cols}]");
            check("argmax", v, &[0], false, 0.0, &v.argmax(0, false).unwrap(), &what("argmax"));
            check("argmin", v, &[0], false, 0.0, &v.argmin(0, false).unwrap(), &what("argmin"));
            check("var", v, &[0], false, 1.0, &v.var(&[0], 1, false).unwrap(), &what("var"));
            check("amax", v, &[0], true, 0.0, &v.amax(&[0], true).unwrap(), &what("amax"));
            check("sum", v, &[0], false, 0.0, &v.sum(&[0], false).unwrap(), &what("sum"));
        }
    }
}

/// The first index of the extreme (or of the first NaN) of `v`, one element at a time.
fn first_extreme(v: &[f64], max: bool) -> i64 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        let b = v[best];
        if b.is_nan() {
            break;
        }
        if x.is_nan() || (max && x > b) || (!max && x < b) {
            best = i;
        }
    }
    best as i64
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]
    /// Rows whose values come from a tiny set (ties everywhere: in one lane of the row scan,
    /// across its lanes, in its tail), with ±∞ and the dtype's extremes, sometimes a NaN,
    /// in every dtype and read forwards or flipped: argmax/argmin give the first extreme.
    #[test]
    fn argmax_and_argmin_of_rows_full_of_ties_match_the_model(
        len in 1usize..700,
        picks in proptest::collection::vec(0usize..6, 700),
        nan_at in proptest::option::of(0usize..700),
        dtype_at in 0usize..DTYPES.len(),
        flip in proptest::bool::ANY,
    ) {
        let dtype = DTYPES[dtype_at];
        let set: [f64; 6] = match dtype {
            DType::Bool => [0.0, 1.0, 0.0, 1.0, 1.0, 0.0],
            DType::U8 => [0.0, 255.0, 7.0, 3.0, 255.0, 0.0],
            DType::I8 => [-128.0, 127.0, 0.0, -1.0, 127.0, -128.0],
            d if d.is_float() => [f64::NEG_INFINITY, f64::INFINITY, 0.5, -0.25, 2.0, 0.5],
            _ => [-3.0, 9.0, 0.0, 9.0, -3.0, 1.0],
        };
        let mut v: Vec<f64> = picks[..len].iter().map(|&p| set[p]).collect();
        if let (Some(at), true) = (nan_at, dtype.is_float()) {
            v[at % len] = f64::NAN;
        }
        let t = tensor_of(&v, &[1, len], dtype);
        let (t, v) = if flip { (t.flip(1).unwrap(), v.iter().rev().copied().collect()) } else { (t, v) };
        let v = as_f64(&tensor_of(&v, &[len], dtype)); // the values as the dtype holds them
        for max in [true, false] {
            let got = if max { t.argmax(1, false) } else { t.argmin(1, false) }.unwrap().to_vec::<i64>().unwrap();
            proptest::prop_assert_eq!(got, vec![first_extreme(&v, max)], "{} max {} flip {}", dtype, max, flip);
        }
    }
}

/// amax/amin over rows long enough for the 16-lane scan and several blocks: a NaN in a lane,
/// in the tail or in a later block makes the row's result NaN (the row beside it keeps its
/// extreme), in every float dtype.
#[test]
fn amax_and_amin_propagate_a_nan_from_any_position_of_a_long_row() {
    const B: usize = tensor_kernels_cpu::reduce::ROW_LEAF;
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        for len in [16usize, 17, 100, B + 33] {
            for at in [0, 5, len / 2, len - 1] {
                let mut v: Vec<f64> = noise(2 * len, len as u64).iter().map(|&x| f64::from(x)).collect();
                v[at] = f64::NAN;
                let t = tensor_of(&v, &[2, len], dtype);
                let vals = as_f64(&t);
                let (lo, hi) =
                    vals[len..].iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
                for (max, want) in [(true, hi), (false, lo)] {
                    let got = as_f64(&if max { t.amax(&[1], false) } else { t.amin(&[1], false) }.unwrap());
                    assert!(got[0].is_nan(), "{dtype} len {len} NaN at {at}: max {max} gave {}", got[0]);
                    assert_eq!(got[1], want, "{dtype} len {len}: max {max} of the row without a NaN");
                }
            }
        }
    }
}
