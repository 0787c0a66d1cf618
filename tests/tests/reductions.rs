//! Every built-in reduction × dtype × keepdim × layout (contiguous, permuted, stepped,
//! flipped, expanded) against the naive model in `reduce/reference.rs`; `_out` into
//! poisoned targets; empty extents, NaN rules and every error case of the contract.

#[path = "reduce/model.rs"]
mod model;
#[path = "reduce/reference.rs"]
mod reference;

use model::{as_f64, check, close, tensor_of, values, DTYPES};
use tensor_ops::prelude::*;

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

/// Found against numpy: a column of one NaN or ±∞ had variance 0 (the column engine started
/// Σ(x − mean)² at 0, not at Welford's `(x − x)²`), and a softmax down a strided dim of a
/// row holding +∞ gave 0 beside the ∞'s NaN where the max-subtracted form gives all NaN.
#[test]
fn non_finite_values_follow_numpy_in_var_and_softmax() {
    let data = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2.0, 2.0, 3.0];
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let row = Tensor::from_vec(data.clone(), &[1, 6]).unwrap().to_dtype(dtype).unwrap();
        for (name, t, dim) in [("row", row.clone(), 0), ("transposed", row.t().unwrap(), 1)] {
            for correction in [0, 1] {
                let v = as_f64(&t.var(&[dim], correction, false).unwrap());
                let s = as_f64(&t.std(&[dim], correction, true).unwrap());
                for (k, (v, s)) in v.iter().zip(&s).enumerate() {
                    // One element: NaN for a non-finite one, else 0 (correction 0) or NaN (0/0).
                    let want_nan = !data[k].is_finite() || correction == 1;
                    assert_eq!(v.is_nan(), want_nan, "{dtype:?} {name} var c={correction} col {k}: {v}");
                    assert_eq!(s.is_nan(), want_nan, "{dtype:?} {name} std c={correction} col {k}: {s}");
                    if !want_nan {
                        assert_eq!((*v, *s), (0.0, 0.0));
                    }
                }
            }
        }
        // +∞ in the reduced extent: every softmax / log_softmax output of it is NaN, along the
        // last dim (the row engine) and down a strided dim (log-sum-exp, then the map).
        let x = Tensor::from_vec(vec![1.0f32, f32::INFINITY, 0.5, 2.0, 1.0, 3.0], &[2, 3]).unwrap();
        let x = x.to_dtype(dtype).unwrap();
        for (t, dim) in [(x.clone(), 1), (x.t().unwrap().contiguous().unwrap(), 0), (x.t().unwrap(), 0)] {
            for log in [false, true] {
                let y = if log { t.log_softmax(dim) } else { t.softmax(dim) }.unwrap();
                // The extent holding +∞, and the other one.
                let (inf_row, finite_row) = (y.select(1 - dim, 0).unwrap(), y.select(1 - dim, 1).unwrap());
                let (y, finite_row) = (as_f64(&inf_row), as_f64(&finite_row));
                assert!(y.iter().all(|v| v.is_nan()), "{dtype:?} log={log} dim {dim}: {y:?}");
                assert!(finite_row.iter().all(|v| v.is_finite()), "{dtype:?} log={log}: {finite_row:?}");
            }
        }
    }
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

/// NaN placed in every kind of block of the row engines (blocks of `ROW_LEAF` elements: one
/// whose maximum is finite, +∞ or −∞, and an all-NaN one) gives NaN from logsumexp and from
/// every softmax output of its row; rows without NaN keep their ±∞ results (against a naive
/// model: NaN if any NaN, else +∞ if any +∞, −∞ if all −∞, else finite).
#[test]
fn nan_in_any_block_makes_logsumexp_and_softmax_nan() {
    const B: usize = tensor_kernels_cpu::reduce::ROW_LEAF;
    const LEN: usize = 2 * B + B / 2 - 13; // three blocks, the last one short
    let fill = |row: &mut [f32], from: usize, v: f32| row[from..(from + B).min(LEN)].fill(v);
    let mut rows: Vec<Vec<f32>> = Vec::new();
    for block in 0..3 {
        let base: Vec<f32> = (0..LEN).map(|i| (i % 17) as f32 * 0.25 - 2.0).collect();
        // NaN beside a finite maximum, beside +∞, among −∞, and a block of NaN only.
        let mut r = base.clone();
        r[block * B + 5] = f32::NAN;
        rows.push(r);
        let mut r = base.clone();
        r[block * B + 7] = f32::INFINITY;
        r[block * B + 9] = f32::NAN;
        rows.push(r);
        let mut r = base.clone();
        fill(&mut r, block * B, f32::NEG_INFINITY);
        r[block * B + 3] = f32::NAN;
        rows.push(r);
        let mut r = base.clone();
        fill(&mut r, block * B, f32::NAN);
        rows.push(r);
        // And without NaN: +∞ in one block, and a whole block of −∞.
        let mut r = base.clone();
        r[block * B + 11] = f32::INFINITY;
        rows.push(r);
        let mut r = base;
        fill(&mut r, block * B, f32::NEG_INFINITY);
        rows.push(r);
    }
    rows.push(vec![f32::NEG_INFINITY; LEN]);
    let n = rows.len();
    let x = Tensor::from_vec(rows.concat(), &[n, LEN]).unwrap();
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let x = x.to_dtype(dtype).unwrap();
        let lse = as_f64(&x.logsumexp(&[1], false).unwrap());
        let sm = as_f64(&x.softmax(1).unwrap());
        let lsm = as_f64(&x.log_softmax(1).unwrap());
        for (k, row) in rows.iter().enumerate() {
            let nan = row.iter().any(|v| v.is_nan());
            // The exact result for the non-finite cases; `None`: any finite value.
            let want = if nan {
                Some(f64::NAN)
            } else if row.contains(&f32::INFINITY) {
                Some(f64::INFINITY)
            } else if row.iter().all(|&v| v == f32::NEG_INFINITY) {
                Some(f64::NEG_INFINITY)
            } else {
                None
            };
            let got = lse[k];
            let ok = match want {
                None => got.is_finite(),
                Some(w) if w.is_nan() => got.is_nan(),
                Some(w) => got == w,
            };
            assert!(ok, "{dtype:?} row {k}: logsumexp {got}, want {want:?} (None: finite)");
            // NaN anywhere (or +∞, or all −∞): every softmax output of the row is NaN.
            let all_nan = nan || want.is_some_and(f64::is_infinite);
            for out in [&sm, &lsm] {
                let r = &out[k * LEN..(k + 1) * LEN];
                assert_eq!(r.iter().all(|v| v.is_nan()), all_nan, "{dtype:?} row {k}: softmax NaN pattern");
            }
        }
    }
}
