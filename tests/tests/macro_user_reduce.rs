//! User-defined reductions in a crate of their own: `l2_norm`, a Welford variance (three
//! accumulators), an argmax that sees the element's index, `count_nonzero`, and a param —
//! each checked on every listed dtype against a naive model and against the built-ins.

use tensor_ops::prelude::*;

mod user_reduce;
use user_reduce::*;

fn data(dtype: DType) -> Tensor {
    let v: Vec<f64> =
        (0..60).map(|i| ((i * 7919 + 3) % 13) as f64 - if dtype == DType::U8 { 0.0 } else { 6.0 }).collect();
    let v: Vec<f64> = if dtype == DType::Bool { v.iter().map(|x| (*x > 0.0) as i32 as f64).collect() } else { v };
    Tensor::from_vec(v, &[3, 4, 5]).unwrap().to_dtype(dtype).unwrap().permute(&[2, 0, 1]).unwrap()
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.contiguous().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn l2_norm_on_every_dtype() {
    for dtype in DType::ALL {
        let t = data(dtype);
        let got = l2_norm(&t, &[1, 2], false).unwrap();
        let want_dtype = if dtype.is_float() { dtype } else { DType::F32 };
        assert_eq!(got.dtype(), want_dtype, "{dtype}");
        let sq = t.to_dtype(DType::F64).unwrap();
        let want = f64s(&sq.mul(&sq).unwrap().sum(&[1, 2], false).unwrap().sqrt().unwrap());
        let tol = tolerance(dtype);
        for (g, w) in f64s(&got).iter().zip(&want) {
            assert!((g - w).abs() <= tol * w.max(1.0), "{dtype}: {g} vs {w}");
        }
        assert_eq!(l2_norm_all(&t).unwrap().shape(), &[] as &[usize]);
    }
}

#[test]
fn welford_matches_the_built_in_var() {
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32] {
        let t = data(dtype);
        for dims in [&[0][..], &[1], &[0, 2], &[0, 1, 2]] {
            let got = f64s(&welford_var(&t, dims, true).unwrap());
            let want = f64s(&t.var(dims, 0, true).unwrap());
            for (g, w) in got.iter().zip(&want) {
                let tol = if matches!(dtype, DType::F16 | DType::BF16) { 2e-2 } else { 1e-5 };
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{dtype} {dims:?}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn user_argmax_sees_logical_indices_and_matches_the_built_in() {
    for dtype in DType::ALL {
        let t = data(dtype);
        for dim in 0..3 {
            let got = my_argmax(&t, &[dim], false).unwrap();
            assert_eq!(got.dtype(), DType::I64);
            assert_eq!(
                got.to_vec::<i64>().unwrap(),
                t.argmax(dim, false).unwrap().to_vec::<i64>().unwrap(),
                "{dtype} {dim}"
            );
            let flipped = t.flip(dim).unwrap();
            assert_eq!(
                my_argmax(&flipped, &[dim], false).unwrap().to_vec::<i64>().unwrap(),
                flipped.argmax(dim, false).unwrap().to_vec::<i64>().unwrap(),
                "{dtype} {dim} flipped"
            );
        }
    }
}

#[test]
fn count_nonzero_on_every_dtype() {
    for dtype in DType::ALL {
        let t = data(dtype);
        let got = count_nonzero(&t, &[0, 2], true).unwrap();
        assert_eq!((got.dtype(), got.shape()), (DType::I64, &[1, 3, 1][..]));
        let vals = f64s(&t);
        let want: Vec<i64> = (0..3)
            .map(|j| {
                (0..5)
                    .flat_map(|i| (0..4).map(move |k| (i, k)))
                    .filter(|&(i, k)| vals[i * 12 + j * 4 + k] != 0.0)
                    .count() as i64
            })
            .collect();
        assert_eq!(got.to_vec::<i64>().unwrap(), want, "{dtype}");
        let out = Tensor::full(&[1, 3, 1], 77.0, DType::F64, Device::Cpu).unwrap();
        count_nonzero_out(&t, &[0, 2], true, &out).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), want.iter().map(|&x| x as f64).collect::<Vec<_>>());
    }
}

#[test]
fn params_reach_the_fold_and_integers_widen() {
    let t = Tensor::from_vec(vec![1i32, 5, 9, i32::MAX, i32::MAX, 2], &[2, 3]).unwrap();
    let got = capped_sum(&t, &[1], false, 4.0).unwrap();
    assert_eq!(got.dtype(), DType::I64);
    assert_eq!(got.to_vec::<i64>().unwrap(), vec![9, 10]);
    let big = capped_sum(&t, &[0, 1], false, 1e12).unwrap();
    assert_eq!(big.to_vec::<i64>().unwrap(), vec![15 + 2 * i32::MAX as i64 + 2]);
    let f = Tensor::from_vec(vec![0.5f32, 7.0], &[2]).unwrap();
    assert_eq!(capped_sum_all(&f, 1.0).unwrap().to_vec::<f32>().unwrap(), vec![1.5]);
    // Errors come from the one call path, named after the op.
    let e = capped_sum(&t, &[2], false, 1.0).unwrap_err().to_string();
    assert!(e.contains("capped_sum") && e.contains("out of range"), "{e}");
    assert!(tensor_ops::registry().lookup("capped_sum", Device::Cpu, Layout::Strided, DType::Bool).is_err());
}

#[test]
fn a_reduction_calls_user_map_ops() {
    for dtype in DType::ALL {
        let t = data(dtype);
        let got = sum_sq_shifted(&t, &[1, 2], false, 1.5).unwrap();
        let want_dtype = if dtype.is_float() { dtype } else { DType::F32 };
        assert_eq!(got.dtype(), want_dtype, "{dtype}");
        // The naive model: the elements in f64, in the order `contiguous` gives them.
        let x = f64s(&t);
        let per = x.len() / 5;
        let tol = tolerance(dtype);
        for (i, g) in f64s(&got).iter().enumerate() {
            let w: f64 = x[i * per..(i + 1) * per].iter().map(|v| (v - 1.5f64).max(0.0).powi(2)).sum();
            assert!((g - w).abs() <= tol * w.max(1.0), "{dtype}: {g} vs {w}");
        }
        let all = sum_sq_shifted_all(&t, 1.5).unwrap();
        assert_eq!(all.shape(), &[] as &[usize]);
    }
}

/// Relative tolerance of a reduction's result in `dtype`: the narrow floats round once (half
/// an ulp: f8 E4M3 3 mantissa bits, E5M2 2), the rest accumulate f32/f64 rounding.
fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F8E4M3 => 0.07,
        DType::F8E5M2 => 0.13,
        DType::F16 | DType::BF16 => 1e-2,
        _ => 1e-6,
    }
}
