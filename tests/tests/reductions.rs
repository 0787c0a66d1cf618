//! Every built-in reduction × dtype × keepdim × layout (contiguous, permuted, stepped,
//! flipped, expanded) against the naive model in `reduce/reference.rs`; `_out` into
//! poisoned targets; empty extents, NaN rules and every error case of the contract.

#[path = "reduce/reference.rs"]
mod reference;

use tensor_ops::prelude::*;

const DTYPES: [DType; 10] = DType::ALL;

/// Deterministic small values, exact in every dtype (quarters for floats).
fn values(n: usize, dtype: DType) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let v = ((i * 7919 + 3) % 13) as f64;
            match dtype {
                DType::Bool => (i % 3 == 0) as i32 as f64,
                DType::U8 => v,
                d if d.is_float() => (v - 6.0) * 0.25,
                _ => v - 6.0,
            }
        })
        .collect()
}

fn tensor_of(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(vals.to_vec(), shape).unwrap().to_dtype(dtype).unwrap()
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.contiguous().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The [3, 4, 5] input in five layouts: (name, view, its logical values).
fn layouts(dtype: DType) -> Vec<(&'static str, Tensor)> {
    let shape = [3, 4, 5];
    let base = tensor_of(&values(60, dtype), &shape, dtype);
    let permuted = tensor_of(&values(60, dtype), &[5, 3, 4], dtype).permute(&[1, 2, 0]).unwrap();
    let stepped =
        tensor_of(&values(240, dtype), &[6, 4, 10], dtype).slice(0, 0, 6, 2).unwrap().slice(2, 1, 10, 2).unwrap();
    let flipped = base.flip(2).unwrap().flip(0).unwrap();
    let expanded = tensor_of(&values(15, dtype), &[3, 1, 5], dtype).expand(&shape).unwrap();
    vec![
        ("contiguous", base),
        ("permuted", permuted),
        ("stepped", stepped),
        ("flipped", flipped),
        ("expanded", expanded),
    ]
}

fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2e-3,
        DType::BF16 => 1e-2,
        DType::F64 => 1e-12,
        _ => 2e-6,
    }
}

fn close(got: f64, want: f64, dtype: DType) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= tolerance(dtype) * want.abs().max(1.0)
}

/// Checks `got` (the result of `op` over `dims`) against the model.
fn check(op: &str, input: &Tensor, dims: &[usize], keepdim: bool, correction: f64, got: &Tensor, what: &str) {
    let shape = input.shape().to_vec();
    let vals = as_f64(input);
    let ints = !input.dtype().is_float();
    let mut want_shape: Vec<usize> = Vec::new();
    for (d, &s) in shape.iter().enumerate() {
        if !dims.contains(&d) {
            want_shape.push(s);
        } else if keepdim {
            want_shape.push(1);
        }
    }
    assert_eq!(got.shape(), &want_shape[..], "{what}: shape");
    let got_vals = as_f64(got);
    let result_dtype = got.dtype();
    for (k, idx) in reference::outputs(&shape, dims).iter().enumerate() {
        let xs = reference::gather(&shape, &vals, dims, idx);
        let want = reference::reduce(op, &xs, ints, correction);
        // The model's value as the result dtype would hold it.
        let want = as_f64(&Tensor::from_vec(vec![want], &[1]).unwrap().to_dtype(result_dtype).unwrap())[0];
        let tol_dtype = if input.dtype().is_float() { input.dtype() } else { result_dtype };
        assert!(close(got_vals[k], want, tol_dtype), "{what}: output {idx:?}: got {}, want {want}", got_vals[k]);
    }
}

const DIM_SETS: [&[usize]; 6] = [&[0], &[1], &[2], &[0, 2], &[1, 2], &[0, 1, 2]];

#[test]
fn dims_reductions_match_the_model_for_every_dtype_and_layout() {
    for dtype in DTYPES {
        for (layout, t) in layouts(dtype) {
            for dims in DIM_SETS {
                for keepdim in [false, true] {
                    let what = |op: &str| format!("{op} {dtype} {layout} dims {dims:?} keepdim {keepdim}");
                    check("sum", &t, dims, keepdim, 0.0, &t.sum(dims, keepdim).unwrap(), &what("sum"));
                    check("prod", &t, dims, keepdim, 0.0, &t.prod(dims, keepdim).unwrap(), &what("prod"));
                    check("mean", &t, dims, keepdim, 0.0, &t.mean(dims, keepdim).unwrap(), &what("mean"));
                    check("amax", &t, dims, keepdim, 0.0, &t.amax(dims, keepdim).unwrap(), &what("amax"));
                    check("amin", &t, dims, keepdim, 0.0, &t.amin(dims, keepdim).unwrap(), &what("amin"));
                    check("all", &t, dims, keepdim, 0.0, &t.all(dims, keepdim).unwrap(), &what("all"));
                    check("any", &t, dims, keepdim, 0.0, &t.any(dims, keepdim).unwrap(), &what("any"));
                    let lse = t.logsumexp(dims, keepdim).unwrap();
                    check("logsumexp", &t, dims, keepdim, 0.0, &lse, &what("logsumexp"));
                    for c in [0, 1, 3] {
                        check("var", &t, dims, keepdim, c as f64, &t.var(dims, c, keepdim).unwrap(), &what("var"));
                        check("std", &t, dims, keepdim, c as f64, &t.std(dims, c, keepdim).unwrap(), &what("std"));
                    }
                }
            }
        }
    }
}

#[test]
fn result_dtypes_follow_the_contract() {
    for dtype in DTYPES {
        let t = tensor_of(&values(6, dtype), &[2, 3], dtype);
        let int = !dtype.is_float();
        let widen = if int { DType::I64 } else { dtype };
        let float = if int { DType::F32 } else { dtype };
        assert_eq!(t.sum(&[1], false).unwrap().dtype(), widen);
        assert_eq!(t.prod(&[1], false).unwrap().dtype(), widen);
        for r in [t.mean(&[1], false), t.logsumexp(&[1], false), t.var(&[1], 1, false), t.std(&[1], 1, false)] {
            assert_eq!(r.unwrap().dtype(), float);
        }
        assert_eq!(t.softmax(1).unwrap().dtype(), float);
        assert_eq!(t.log_softmax(1).unwrap().dtype(), float);
        assert_eq!(t.amax(&[1], false).unwrap().dtype(), dtype);
        assert_eq!(t.amin(&[1], false).unwrap().dtype(), dtype);
        assert_eq!(t.argmax(1, false).unwrap().dtype(), DType::I64);
        assert_eq!(t.argmin(1, false).unwrap().dtype(), DType::I64);
        assert_eq!(t.all(&[1], false).unwrap().dtype(), DType::Bool);
        assert_eq!(t.any(&[1], false).unwrap().dtype(), DType::Bool);
    }
}

#[test]
fn argmax_and_argmin_match_the_model_on_every_dim_and_layout() {
    for dtype in DTYPES {
        for (layout, t) in layouts(dtype) {
            for dim in 0..3 {
                for keepdim in [false, true] {
                    let what = |op: &str| format!("{op} {dtype} {layout} dim {dim} keepdim {keepdim}");
                    check("argmax", &t, &[dim], keepdim, 0.0, &t.argmax(dim, keepdim).unwrap(), &what("argmax"));
                    check("argmin", &t, &[dim], keepdim, 0.0, &t.argmin(dim, keepdim).unwrap(), &what("argmin"));
                }
            }
        }
    }
}

#[test]
fn softmax_and_log_softmax_match_the_model() {
    for dtype in DTYPES {
        for (layout, t) in layouts(dtype) {
            let vals = as_f64(&t);
            let shape = t.shape().to_vec();
            for dim in 0..3 {
                let sm = as_f64(&t.softmax(dim).unwrap());
                let lsm = as_f64(&t.log_softmax(dim).unwrap());
                // The model: per element, e^(x - max) / Σ e^(y - max) over its row along dim.
                let strides = [shape[1] * shape[2], shape[2], 1];
                for (lin, &x) in vals.iter().enumerate() {
                    let base = lin - (lin / strides[dim] % shape[dim]) * strides[dim];
                    let row: Vec<f64> = (0..shape[dim]).map(|k| vals[base + k * strides[dim]]).collect();
                    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let s: f64 = row.iter().map(|y| (y - m).exp()).sum();
                    let want = (x - m).exp() / s;
                    let tol = if dtype.is_float() { dtype } else { DType::F32 };
                    assert!(
                        close(sm[lin], want, tol),
                        "softmax {dtype} {layout} dim {dim} at {lin}: {} vs {want}",
                        sm[lin]
                    );
                    let want_log = x - m - s.ln();
                    assert!(
                        close(lsm[lin], want_log, tol),
                        "log_softmax {dtype} {layout} dim {dim}: {} vs {want_log}",
                        lsm[lin]
                    );
                }
            }
        }
    }
}

#[test]
fn softmax_of_a_row_of_negative_infinities_is_nan() {
    let t = Tensor::from_vec(vec![f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0, 1.0], &[2, 2]).unwrap();
    let s = t.softmax(1).unwrap().to_vec::<f32>().unwrap();
    assert!(s[0].is_nan() && s[1].is_nan());
    assert!((s[2] - 0.268_941_43).abs() < 1e-6 && (s[3] - 0.731_058_6).abs() < 1e-6);
    let big = Tensor::from_vec(vec![1000.0f32, 1000.0], &[2]).unwrap();
    assert_eq!(big.softmax(0).unwrap().to_vec::<f32>().unwrap(), vec![0.5, 0.5]);
}

#[test]
fn all_forms_reduce_every_element_into_a_0_dim_tensor() {
    let t = tensor_of(&values(60, DType::F64), &[3, 4, 5], DType::F64).permute(&[2, 0, 1]).unwrap();
    let all: Vec<f64> = as_f64(&t);
    let sum = t.sum_all().unwrap();
    assert_eq!(sum.shape(), &[] as &[usize]);
    assert!((sum.to_vec::<f64>().unwrap()[0] - all.iter().sum::<f64>()).abs() < 1e-12);
    assert_eq!(t.amax_all().unwrap().to_vec::<f64>().unwrap()[0], all.iter().cloned().fold(f64::MIN, f64::max));
    assert_eq!(t.amin_all().unwrap().to_vec::<f64>().unwrap()[0], all.iter().cloned().fold(f64::MAX, f64::min));
    let mean = t.mean_all().unwrap().to_vec::<f64>().unwrap()[0];
    assert!((mean - all.iter().sum::<f64>() / 60.0).abs() < 1e-12);
    // A 0-dim tensor reduces its one element.
    let s = Tensor::scalar(2.5, DType::F32).unwrap();
    assert_eq!(s.sum_all().unwrap().to_vec::<f32>().unwrap(), vec![2.5]);
    assert_eq!(s.amax_all().unwrap().to_vec::<f32>().unwrap(), vec![2.5]);
    assert!(s.sum(&[0], false).is_err(), "a 0-dim tensor has no dim 0");
}

#[test]
fn out_forms_write_poisoned_targets_and_cast() {
    let t = tensor_of(&values(60, DType::F32), &[3, 4, 5], DType::F32);
    let want = t.sum(&[1], false).unwrap().to_vec::<f32>().unwrap();
    let out = Tensor::full(&[3, 5], f32::NAN, DType::F32, Device::Cpu).unwrap();
    tensor_ops::sum_out(&t, &[1], false, &out).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), want);
    // Cast into a wider float; into a transposed target.
    let out64 = Tensor::full(&[3, 5], f64::NAN, DType::F64, Device::Cpu).unwrap();
    tensor_ops::sum_out(&t, &[1], false, &out64).unwrap();
    assert_eq!(out64.to_vec::<f64>().unwrap(), want.iter().map(|&x| x as f64).collect::<Vec<_>>());
    let outt = Tensor::full(&[5, 3], -7.0, DType::F32, Device::Cpu).unwrap().t().unwrap();
    tensor_ops::sum_out(&t, &[1], false, &outt).unwrap();
    assert_eq!(outt.contiguous().unwrap().to_vec::<f32>().unwrap(), want);
    // var/argmax/softmax _out forms.
    let v = Tensor::full(&[3, 1, 5], 99.0, DType::F32, Device::Cpu).unwrap();
    tensor_ops::var_out(&t, &[1], 1, true, &v).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), t.var(&[1], 1, true).unwrap().to_vec::<f32>().unwrap());
    let am = Tensor::full(&[3, 5], 99, DType::I64, Device::Cpu).unwrap();
    tensor_ops::argmax_out(&t, 1, false, &am).unwrap();
    assert_eq!(am.to_vec::<i64>().unwrap(), t.argmax(1, false).unwrap().to_vec::<i64>().unwrap());
    let sm = Tensor::full(&[3, 4, 5], f32::NAN, DType::F32, Device::Cpu).unwrap();
    tensor_ops::softmax_out(&t, 2, &sm).unwrap();
    assert_eq!(sm.to_vec::<f32>().unwrap(), t.softmax(2).unwrap().to_vec::<f32>().unwrap());
    // Integer sums into an integer out of another width: wraps by the cast.
    let i = tensor_of(&values(60, DType::I32), &[3, 4, 5], DType::I32);
    let oi = Tensor::full(&[3], 5, DType::I32, Device::Cpu).unwrap();
    tensor_ops::sum_out(&i, &[1, 2], false, &oi).unwrap();
    let wi: Vec<i32> = i.sum(&[1, 2], false).unwrap().to_vec::<i64>().unwrap().iter().map(|&x| x as i32).collect();
    assert_eq!(oi.to_vec::<i32>().unwrap(), wi);
}

#[test]
fn out_forms_refuse_wrong_shapes_dtypes_and_devices() {
    let t = tensor_of(&values(12, DType::F32), &[3, 4], DType::F32);
    let wrong = Tensor::zeros(&[4], DType::F32, Device::Cpu).unwrap();
    let e = tensor_ops::sum_out(&t, &[1], false, &wrong).unwrap_err().to_string();
    assert!(e.contains("[3]") && e.contains("[4]"), "{e}");
    let keep = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    assert!(tensor_ops::sum_out(&t, &[1], true, &keep).is_err(), "keepdim needs [3, 1]");
    let int_out = Tensor::zeros(&[3], DType::I32, Device::Cpu).unwrap();
    let e = tensor_ops::mean_out(&t, &[1], false, &int_out).unwrap_err().to_string();
    assert!(e.contains("f32") && e.contains("i32"), "{e}");
    let bool_out = Tensor::zeros(&[3], DType::Bool, Device::Cpu).unwrap();
    assert!(tensor_ops::argmax_out(&t, 1, false, &bool_out).is_err());
    let overlapping = Tensor::zeros(&[1], DType::F32, Device::Cpu).unwrap().expand(&[3]).unwrap();
    assert!(tensor_ops::sum_out(&t, &[1], false, &overlapping).is_err());
    let sm = Tensor::zeros(&[3, 3], DType::F32, Device::Cpu).unwrap();
    assert!(tensor_ops::softmax_out(&t, 1, &sm).is_err());
}

#[test]
fn bad_dims_are_errors_naming_the_op_and_shape() {
    let t = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    for (dims, needle) in [(&[][..], "at least one dim"), (&[2][..], "out of range"), (&[1, 1][..], "twice")] {
        let e = t.sum(dims, false).unwrap_err().to_string();
        assert!(e.contains("sum") && e.contains("[2, 3]") && e.contains(needle), "{e}");
    }
    assert!(t.argmax(2, false).is_err());
    assert!(t.softmax(2).is_err());
    assert!(t.log_softmax(5).is_err());
    assert!(t.var(&[0, 0], 1, false).is_err());
}

#[test]
fn empty_extents_give_identities_or_errors() {
    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(e.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(e.prod(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 3]);
    assert!(e.mean(&[0], false).unwrap().to_vec::<f32>().unwrap().iter().all(|x| x.is_nan()));
    assert!(e.var(&[0], 1, false).unwrap().to_vec::<f32>().unwrap().iter().all(|x| x.is_nan()));
    assert!(e.std(&[0], 0, false).unwrap().to_vec::<f32>().unwrap().iter().all(|x| x.is_nan()));
    assert_eq!(e.all(&[0], false).unwrap().to_vec::<bool>().unwrap(), vec![true; 3]);
    assert_eq!(e.any(&[0], false).unwrap().to_vec::<bool>().unwrap(), vec![false; 3]);
    assert_eq!(e.logsumexp(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![f32::NEG_INFINITY; 3]);
    for r in [e.amax(&[0], false), e.amin(&[0], false), e.argmax(0, false), e.argmin(0, false), e.amax_all()] {
        let msg = r.unwrap_err().to_string();
        assert!(msg.contains("empty"), "{msg}");
    }
    // An empty output is fine.
    assert_eq!(e.amax(&[1], false).unwrap().shape(), &[0]);
    assert_eq!(e.argmax(1, true).unwrap().shape(), &[0, 1]);
    assert_eq!(e.sum_all().unwrap().to_vec::<f32>().unwrap(), vec![0.0]);
    let ints = Tensor::zeros(&[2, 0], DType::I32, Device::Cpu).unwrap();
    assert_eq!(ints.sum(&[1], false).unwrap().to_vec::<i64>().unwrap(), vec![0, 0]);
}

#[test]
fn nan_rules() {
    let t = Tensor::from_vec(vec![1.0f32, f32::NAN, 5.0, f32::NAN, 2.0, 7.0, 7.0, 0.0], &[2, 4]).unwrap();
    let mx = t.amax(&[1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(mx[0].is_nan() && mx[1] == 7.0);
    assert!(t.amin(&[1], false).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
    assert_eq!(t.argmax(1, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 1]);
    assert_eq!(t.argmin(1, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 3]);
    // Down columns (the column engine): first NaN, first of ties.
    assert_eq!(t.argmax(0, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 1, 0]);
    assert_eq!(t.argmin(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 0, 0]);
    let ties = Tensor::from_vec(vec![3.0f32, 3.0, 3.0, 1.0, 3.0, 9.0], &[3, 2]).unwrap();
    assert_eq!(ties.argmax(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 2]);
    assert_eq!(ties.argmin(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 1]);
    assert_eq!(ties.flip(0).unwrap().argmax(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 0]);
    let mx0 = t.amax(&[0], false).unwrap().to_vec::<f32>().unwrap();
    assert!(mx0[1].is_nan() && mx0[3].is_nan() && mx0[0] == 2.0 && mx0[2] == 7.0);
    // all/any: NaN is non-zero.
    let n = Tensor::from_vec(vec![f32::NAN, 1.0], &[2]).unwrap();
    assert_eq!(n.all(&[0], false).unwrap().to_vec::<bool>().unwrap(), vec![true]);
    // Flipped: the first NaN / first maximum in logical order.
    let f = Tensor::from_vec(vec![3.0f64, 9.0, 9.0, 1.0, f64::NAN, f64::NAN], &[6]).unwrap().flip(0).unwrap();
    assert_eq!(f.argmax(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0]);
    let g = Tensor::from_vec(vec![3.0f64, 9.0, 9.0, 1.0], &[4]).unwrap().flip(0).unwrap();
    assert_eq!(g.argmax(0, false).unwrap().to_vec::<i64>().unwrap(), vec![1]);
    assert_eq!(g.argmin(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0]);
}

#[test]
fn integer_sums_wrap_in_i64_and_bool_reduces() {
    let t = Tensor::from_vec(vec![i64::MAX, 1, 2], &[3]).unwrap();
    assert_eq!(t.sum(&[0], false).unwrap().to_vec::<i64>().unwrap(), vec![i64::MIN + 2]);
    let b = Tensor::from_vec(vec![true, false, true, true], &[2, 2]).unwrap();
    assert_eq!(b.sum(&[1], false).unwrap().to_vec::<i64>().unwrap(), vec![1, 2]);
    assert_eq!(b.amax(&[1], false).unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
    assert_eq!(b.amin(&[1], false).unwrap().to_vec::<bool>().unwrap(), vec![false, true]);
    assert_eq!(b.argmax(1, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 0]);
    assert_eq!(b.argmin(1, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 0]);
    let u = Tensor::from_vec(vec![200u8, 100, 50], &[3]).unwrap();
    assert_eq!(u.sum_all().unwrap().to_vec::<i64>().unwrap(), vec![350]);
}

/// Deterministic pseudo-random floats in [-1, 1).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

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

#[test]
fn fused_softmax_rows_match_the_model_in_place_too() {
    for (dtype, tol) in [(DType::F32, 2e-6), (DType::F64, 1e-13)] {
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
                        (sm[r * len + k] - want).abs() <= rel * want + 1e-37,
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
    let naive = |v: &[f32], max: bool| -> i64 {
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
    };
    let base: Vec<f32> = noise(5000, 11);
    let mut cases: Vec<Vec<f32>> = vec![base.clone()];
    let mut ties = base.clone();
    ties[100] = 5.0;
    ties[3100] = 5.0; // the same maximum in a later block: the first wins
    ties[200] = -5.0;
    ties[4200] = -5.0;
    cases.push(ties.clone());
    let mut late_nan = ties.clone();
    late_nan[4500] = f32::NAN;
    cases.push(late_nan);
    let mut two_nans = ties;
    two_nans[1500] = f32::NAN;
    two_nans[2500] = f32::NAN;
    cases.push(two_nans);
    for v in cases {
        let t = Tensor::from_vec(v.clone(), &[1, 5000]).unwrap();
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
    for (dtype, rows, len, tol) in [(DType::F32, 256usize, 16387usize, 2e-6), (DType::F64, 128, 16389, 1e-13)] {
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
                        (w, tol * (1.0 + (row[k] - m).abs()) * w + 1e-37)
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
