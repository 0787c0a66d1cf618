//! Every built-in elementwise op × every dtype it lists × layouts (contiguous, transposed,
//! permuted 3-D, stepped slice, flipped, offset, broadcast, size-0, 0-dim, parallel-sized)
//! × output modes (new, in place, `_out` into a poisoned tensor), against an independent
//! scalar reference model.

mod common;

use common::*;
use tensor_ops::prelude::*;

type NewFn = fn(&[&Tensor]) -> tensor_ops::Result<Tensor>;
type InplaceFn = fn(&[&Tensor]) -> tensor_ops::Result<()>;
type OutFn = fn(&[&Tensor], &Tensor) -> tensor_ops::Result<()>;
type RefFn = fn(&[V], DType) -> V;

struct Case {
    name: &'static str,
    arity: usize,
    dtypes: &'static [DType],
    /// Result exactly determined (arithmetic); otherwise compared with a tolerance.
    exact: bool,
    new: NewFn,
    inplace: Option<InplaceFn>,
    out: OutFn,
    reference: RefFn,
}

const FLOAT: &[DType] = &[DType::F16, DType::BF16, DType::F32, DType::F64];
const NUMERIC: &[DType] =
    &[DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];
const ALL: &[DType] = &[
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

fn wrap(v: i128, d: DType) -> V {
    V::I(match d {
        DType::U8 => v as u8 as i128,
        DType::I8 => v as i8 as i128,
        DType::I16 => v as i16 as i128,
        DType::I32 => v as i32 as i128,
        _ => v as i64 as i128,
    })
}
fn fl(v: V) -> f64 {
    match v {
        V::F(x) => x,
        V::I(i) => i as f64,
        V::B(b) => b as u8 as f64,
    }
}
fn it(v: V) -> i128 {
    match v {
        V::I(i) => i,
        V::B(b) => b as i128,
        V::F(x) => x as i128,
    }
}
fn float_or_int(a: &[V], d: DType, f: fn(f64, f64) -> f64, i: fn(i128, i128) -> i128) -> V {
    if d.is_float() {
        V::F(f(fl(a[0]), a.get(1).map_or(0.0, |&b| fl(b))))
    } else {
        wrap(i(it(a[0]), a.get(1).map_or(0, |&b| it(b))), d)
    }
}
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}
fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}
fn int_pow(a: i128, b: i128) -> i128 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 => {
                if b % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let mut r: i128 = 1;
    for _ in 0..(b.min(130)) {
        r = (r.wrapping_mul(a)) & 0xFFFF_FFFF_FFFF_FFFF; // keep the low 64 bits, wrap later
        r = r as i64 as i128;
    }
    r
}
fn cmp(a: &[V], d: DType, f: fn(std::cmp::Ordering) -> bool, ne: bool) -> V {
    if d.is_float() {
        let (x, y) = (fl(a[0]), fl(a[1]));
        match x.partial_cmp(&y) {
            Some(o) => V::B(f(o)),
            None => V::B(ne),
        }
    } else {
        V::B(f(it(a[0]).cmp(&it(a[1]))))
    }
}

macro_rules! unary {
    ($name:ident, $inp:ident, $out:ident, $dtypes:expr, $exact:expr, $r:expr) => {
        Case {
            name: stringify!($name),
            arity: 1,
            dtypes: $dtypes,
            exact: $exact,
            new: |a| tensor_ops::$name(a[0]),
            inplace: Some(|a| tensor_ops::$inp(a[0])),
            out: |a, o| tensor_ops::$out(a[0], o),
            reference: $r,
        }
    };
}
macro_rules! binary {
    ($name:ident, $inp:ident, $out:ident, $dtypes:expr, $exact:expr, $r:expr) => {
        Case {
            name: stringify!($name),
            arity: 2,
            dtypes: $dtypes,
            exact: $exact,
            new: |a| tensor_ops::$name(a[0], a[1]),
            inplace: Some(|a| tensor_ops::$inp(a[0], a[1])),
            out: |a, o| tensor_ops::$out(a[0], a[1], o),
            reference: $r,
        }
    };
}
macro_rules! compare {
    ($name:ident, $out:ident, $r:expr) => {
        Case {
            name: stringify!($name),
            arity: 2,
            dtypes: ALL,
            exact: true,
            new: |a| tensor_ops::$name(a[0], a[1]),
            inplace: None,
            out: |a, o| tensor_ops::$out(a[0], a[1], o),
            reference: $r,
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        unary!(neg, neg_, neg_out, NUMERIC, true, |a, d| float_or_int(a, d, |x, _| -x, |x, _| -x)),
        unary!(abs, abs_, abs_out, NUMERIC, true, |a, d| float_or_int(
            a,
            d,
            |x, _| x.abs(),
            |x, _| {
                // wrapping abs of the dtype's MIN is MIN
                x.abs()
            }
        )),
        unary!(exp, exp_, exp_out, FLOAT, false, |a, _| V::F(fl(a[0]).exp())),
        unary!(log, log_, log_out, FLOAT, false, |a, _| V::F(fl(a[0]).ln())),
        unary!(sqrt, sqrt_, sqrt_out, FLOAT, false, |a, _| V::F(fl(a[0]).sqrt())),
        unary!(relu, relu_, relu_out, NUMERIC, true, |a, d| float_or_int(
            a,
            d,
            |x, _| if x < 0.0 { 0.0 } else { x },
            |x, _| x.max(0)
        )),
        unary!(sigmoid, sigmoid_, sigmoid_out, FLOAT, false, |a, _| V::F(1.0 / (1.0 + (-fl(a[0])).exp()))),
        unary!(tanh, tanh_, tanh_out, FLOAT, false, |a, _| V::F(fl(a[0]).tanh())),
        unary!(sin, sin_, sin_out, FLOAT, false, |a, _| V::F(fl(a[0]).sin())),
        unary!(cos, cos_, cos_out, FLOAT, false, |a, _| V::F(fl(a[0]).cos())),
        binary!(add, add_, add_out, NUMERIC, true, |a, d| float_or_int(a, d, |x, y| x + y, |x, y| x + y)),
        binary!(sub, sub_, sub_out, NUMERIC, true, |a, d| float_or_int(a, d, |x, y| x - y, |x, y| x - y)),
        binary!(mul, mul_, mul_out, NUMERIC, true, |a, d| float_or_int(a, d, |x, y| x * y, |x, y| x.wrapping_mul(y))),
        binary!(div, div_, div_out, FLOAT, true, |a, _| V::F(fl(a[0]) / fl(a[1]))),
        binary!(maximum, maximum_, maximum_out, NUMERIC, true, |a, d| float_or_int(a, d, nan_max, |x, y| x.max(y))),
        binary!(minimum, minimum_, minimum_out, NUMERIC, true, |a, d| float_or_int(a, d, nan_min, |x, y| x.min(y))),
        binary!(pow, pow_, pow_out, NUMERIC, false, |a, d| float_or_int(a, d, f64::powf, int_pow)),
        compare!(eq, eq_out, |a, d| cmp(a, d, |o| o.is_eq(), false)),
        compare!(ne, ne_out, |a, d| cmp(a, d, |o| o.is_ne(), true)),
        compare!(lt, lt_out, |a, d| cmp(a, d, |o| o.is_lt(), false)),
        compare!(le, le_out, |a, d| cmp(a, d, |o| o.is_le(), false)),
        compare!(gt, gt_out, |a, d| cmp(a, d, |o| o.is_gt(), false)),
        compare!(ge, ge_out, |a, d| cmp(a, d, |o| o.is_ge(), false)),
    ]
}

/// Expected values of `case` on inputs (already promoted to `dtype`), rounded to `result`.
fn expected(case: &Case, ins: &[Vec<V>], dtype: DType, result: DType, n: usize) -> Vec<V> {
    (0..n)
        .map(|i| {
            let args: Vec<V> = ins.iter().map(|v| v[i]).collect();
            let r = (case.reference)(&args, dtype);
            // Integer mul in the reference is exact in i128; wrap to the dtype.
            let r = match r {
                V::I(x) if !dtype.is_float() => wrap(x, dtype),
                r => r,
            };
            round_to(r, result)
        })
        .collect()
}

/// For pow on integers, keep exponents small and non-negative-ish so references stay exact.
fn adjust_inputs(case: &Case, dtype: DType, vals: &mut [Vec<V>]) {
    if case.name == "pow" && !dtype.is_float() {
        for v in vals[1].iter_mut() {
            // Unsigned exponents cannot be negative: 255u8 means 255, not -1.
            *v = V::I(if dtype == DType::U8 { it(*v).rem_euclid(4) } else { it(*v).rem_euclid(5) - 1 });
        }
    }
}

fn shapes() -> Vec<Vec<usize>> {
    vec![vec![5, 7], vec![3, 4, 5], vec![0, 3], vec![]]
}

#[test]
fn every_op_every_dtype_every_layout() {
    for case in cases() {
        for &dtype in case.dtypes {
            for shape in shapes() {
                let n: usize = shape.iter().product();
                for (li, &lay) in LAYOUTS.iter().enumerate() {
                    let mut vals: Vec<Vec<V>> =
                        (0..case.arity).map(|k| gen_values(dtype, n, 1 + k as u64 * 7919 + li as u64)).collect();
                    adjust_inputs(&case, dtype, &mut vals);
                    // Second operand gets a different layout than the first.
                    let lay_b = LAYOUTS[(li + 2) % LAYOUTS.len()];
                    let ins: Vec<Tensor> = vals
                        .iter()
                        .enumerate()
                        .map(|(k, v)| make(v, &shape, dtype, if k == 0 { lay } else { lay_b }))
                        .collect();
                    let refs: Vec<&Tensor> = ins.iter().collect();
                    let what = format!("{}({dtype}, shape {shape:?}, {lay:?}/{lay_b:?})", case.name);
                    let got = (case.new)(&refs).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let result = got.dtype();
                    let want = expected(&case, &vals, dtype, result, n);
                    assert_eq!(got.shape(), shape.as_slice(), "{what}");
                    assert_close(&values(&got), &want, result, case.exact, &what);

                    // _out into a poisoned tensor of another layout.
                    let out = empty_with(LAYOUTS[(li + 1) % LAYOUTS.len()], &shape, result);
                    poison(&out);
                    (case.out)(&refs, &out).unwrap_or_else(|e| panic!("{what} out: {e}"));
                    assert_close(&values(&out), &want, result, case.exact, &format!("{what} out"));

                    // In place into the first input when the result fits its dtype.
                    if let Some(inplace) = case.inplace
                        && result == dtype
                    {
                        inplace(&refs).unwrap_or_else(|e| panic!("{what} in place: {e}"));
                        assert_close(&values(&ins[0]), &want, result, case.exact, &format!("{what} in place"));
                    }
                }
            }
        }
    }
}

#[test]
fn broadcasting_and_scalars() {
    for case in cases().into_iter().filter(|c| c.arity == 2) {
        for &dtype in case.dtypes {
            // [4, 1, 5] with [3, 1] → [4, 3, 5]; and with a 0-dim tensor.
            let va = gen_values(dtype, 20, 11);
            let mut vb = gen_values(dtype, 3, 12);
            let mut pair = vec![va.clone(), vb.clone()];
            adjust_inputs(&case, dtype, &mut pair);
            vb = pair[1].clone();
            let a = make(&va, &[4, 1, 5], dtype, Lay::Flipped);
            let b = make(&vb, &[3, 1], dtype, Lay::Contiguous);
            let got = (case.new)(&[&a, &b]).unwrap();
            assert_eq!(got.shape(), &[4, 3, 5]);
            let mut want = Vec::new();
            for i in 0..4 {
                for &bj in vb.iter().take(3) {
                    for k in 0..5 {
                        want.push(round_to(
                            match (case.reference)(&[va[i * 5 + k], bj], dtype) {
                                V::I(x) if !dtype.is_float() => wrap(x, dtype),
                                r => r,
                            },
                            got.dtype(),
                        ));
                    }
                }
            }
            assert_close(&values(&got), &want, got.dtype(), case.exact, &format!("{} broadcast {dtype}", case.name));

            let s = make(&vb[..1], &[], dtype, Lay::Contiguous);
            let got = (case.new)(&[&a, &s]).unwrap();
            assert_eq!(got.shape(), &[4, 1, 5]);
            let want: Vec<V> = va
                .iter()
                .map(|&x| {
                    round_to(
                        match (case.reference)(&[x, vb[0]], dtype) {
                            V::I(x) if !dtype.is_float() => wrap(x, dtype),
                            r => r,
                        },
                        got.dtype(),
                    )
                })
                .collect();
            assert_close(&values(&got), &want, got.dtype(), case.exact, &format!("{} scalar {dtype}", case.name));
        }
    }
}

#[test]
fn large_inputs_take_the_parallel_path() {
    // Above the parallel grain, contiguous and transposed, f32 and i64.
    for &dtype in &[DType::F32, DType::I64, DType::F16] {
        let shape = [300usize, 400];
        let n = 120_000;
        let va = gen_values(dtype, n, 5);
        let vb = gen_values(dtype, n, 6);
        for lay in [Lay::Contiguous, Lay::Transposed, Lay::Stepped] {
            let a = make(&va, &shape, dtype, lay);
            let b = make(&vb, &shape, dtype, Lay::Contiguous);
            let got = a.add(&b).unwrap();
            let want: Vec<V> = (0..n)
                .map(|i| round_to(float_or_int(&[va[i], vb[i]], dtype, |x, y| x + y, |x, y| x + y), dtype))
                .collect();
            assert_close(&values(&got), &want, dtype, true, &format!("large add {dtype} {lay:?}"));
        }
    }
}

#[test]
fn transposed_operands_at_dram_size_use_tall_tiles() {
    // 1000 x 1100 f32 with one transposed input: partial tiles on
    // both edges, rows not a multiple of the tile height.
    let (r, c) = (1000usize, 1100usize);
    let bt =
        Tensor::arange(0, (r * c) as i64, 1, DType::F32, Device::Cpu).unwrap().view(&[c as isize, r as isize]).unwrap();
    let b = bt.t().unwrap();
    let a = Tensor::full(&[r, c], 0.25, DType::F32, Device::Cpu).unwrap();
    let out = Tensor::empty(&[r, c], DType::F32, Device::Cpu).unwrap();
    poison(&out);
    tensor_ops::add_out(&a, &b, &out).unwrap();
    let v = out.to_vec::<f32>().unwrap();
    for i in 0..r {
        for j in 0..c {
            assert_eq!(v[i * c + j], (j * r + i) as f32 + 0.25, "element ({i}, {j})");
        }
    }
    // Mixed dtypes through the same walk: i32 transposed + f64.
    let bi = bt.to_dtype(DType::I32).unwrap().t().unwrap();
    let d = Tensor::full(&[r, c], 0.5, DType::F64, Device::Cpu).unwrap().add(&bi).unwrap();
    assert_eq!(d.dtype(), DType::F64);
    let v = d.to_vec::<f64>().unwrap();
    assert!(v.iter().enumerate().all(|(k, x)| *x == ((k % c) * r + k / c) as f64 + 0.5));
}

#[test]
fn outputs_above_the_streaming_threshold_are_complete() {
    // 4.5M f32 = 18 MiB of output: written with non-temporal stores from block buffers.
    let n = 4_500_000usize;
    let a = Tensor::arange(0, n as i64, 1, DType::F32, Device::Cpu).unwrap();
    let b = Tensor::full(&[n], 0.5, DType::F32, Device::Cpu).unwrap();
    let out = Tensor::empty(&[n], DType::F32, Device::Cpu).unwrap();
    poison(&out);
    tensor_ops::add_out(&a, &b, &out).unwrap();
    let v = out.to_vec::<f32>().unwrap();
    for (i, x) in v.iter().enumerate() {
        assert_eq!(*x, i as f32 + 0.5, "element {i}");
    }
    // Same through a new output with a broadcast scalar and a dtype conversion.
    let c = a.mul(&Tensor::scalar(2, DType::I64).unwrap()).unwrap();
    assert_eq!(c.dtype(), DType::F32);
    let v = c.to_vec::<f32>().unwrap();
    assert!(v.iter().enumerate().all(|(i, x)| *x == (i as f32) * 2.0));
}
