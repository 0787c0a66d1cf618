//! Integer arithmetic in `#[tensor_op]` bodies is total (issue 9): `+ - *` and unary `-`
//! wrap, `/` by zero gives 0 and `MIN / -1` gives `MIN`, in params, in constants and in
//! element values, on every integer dtype, on the CPU (SIMD vectors and the one-lane tail)
//! and in the generated CUDA C (run on the CPU shim, compiled by NVRTC). The tests run in
//! debug builds, where a raw Rust `/ 0` or an overflowing `*` panics.

mod common;
mod shim;

use common::{values, V};
use tensor_ops::prelude::*;

// ------------------------------------------------------------------ the ops

/// `n / d` on i64 params.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn it_pdiv<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64(n / d)
}

/// `n * d` on i64 params.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn it_pmul<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64(n * d)
}

/// `n + d` on i64 params.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn it_padd<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64(n + d)
}

/// `n - d` and `-n` on i64 params.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn it_psub<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64(n - d - -n)
}

/// Params mixed with literals: `(n * 3 + 1) / (d - 1)`.
#[tensor_op(dtypes = [int, f64])]
pub fn it_pmix<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64((n * 3 + 1) / (d - 1))
}

/// Element `/`.
#[tensor_op(dtypes = [int])]
pub fn it_ediv<T: Num>(x: T, y: T) -> T {
    x / y
}

/// Element `*`.
#[tensor_op(dtypes = [int])]
pub fn it_emul<T: Num>(x: T, y: T) -> T {
    x * y
}

/// Element `+`.
#[tensor_op(dtypes = [int])]
pub fn it_eadd<T: Num>(x: T, y: T) -> T {
    x + y
}

/// Element `-` and unary `-`.
#[tensor_op(dtypes = [int])]
pub fn it_esub<T: Num>(x: T, y: T) -> T {
    x - y + -y
}

/// Element values divided by a param and by constants (`0` constant divisor in a value:
/// the element type's division, total).
#[tensor_op(dtypes = [int])]
pub fn it_eparam<T: Num>(x: T, #[param] d: i64) -> T {
    x / T::from_i64(d) + x * T::zero() / T::zero()
}

/// Literal constants at the ends of i64: `-9223372036854775808` is i64::MIN.
#[tensor_op(dtypes = [i64, f64])]
pub fn it_consts<T: Num>(x: T) -> T {
    x + T::from_i64(-9223372036854775808 / 2 + (9223372036854775807 - 1) / 2 * 1)
}

// ------------------------------------------------------------------ references

fn wdiv(n: i64, d: i64) -> i64 {
    if d == 0 {
        0
    } else {
        n.wrapping_div(d)
    }
}

/// A reference of an i64 param op: `(n, d) -> result`.
type ParamRef = fn(i64, i64) -> i64;

const PARAM_OPS: [(&str, ParamRef); 5] = [
    ("it_pdiv", wdiv),
    ("it_pmul", i64::wrapping_mul),
    ("it_padd", i64::wrapping_add),
    ("it_psub", |n, d| n.wrapping_sub(d).wrapping_sub(n.wrapping_neg())),
    ("it_pmix", |n, d| wdiv(n.wrapping_mul(3).wrapping_add(1), d.wrapping_sub(1))),
];

const PARAM_CASES: [(i64, i64); 14] = [
    (7, 0),
    (0, 0),
    (i64::MIN, 0),
    (i64::MIN, -1),
    (i64::MAX, -1),
    (i64::MIN, 1),
    (i64::MAX, 2),
    (i64::MAX, i64::MAX),
    (i64::MIN, i64::MIN),
    (i64::MIN, -2),
    (-7, 2),
    (7, -2),
    (3_074_457_345_618_258_603, 1), // n * 3 + 1 overflows
    (123_456_789, 1000),
];

/// `r` as a value of `dtype` with Rust `as` rules.
fn as_dtype(r: i64, dtype: DType) -> V {
    match dtype {
        DType::U8 => V::I(r as u8 as i128),
        DType::I8 => V::I(r as i8 as i128),
        DType::I16 => V::I(r as i16 as i128),
        DType::I32 => V::I(r as i32 as i128),
        DType::I64 => V::I(r as i128),
        DType::F32 => V::F(r as f32 as f64),
        DType::F64 => V::F(r as f64),
        d => unreachable!("{d}"),
    }
}

fn spec(name: &str) -> &'static tensor_core::registry::OpSpec {
    tensor_ops::registry().op(name).unwrap_or_else(|| panic!("{name} is not registered"))
}

fn call(name: &str, inputs: &[&Tensor], params: &[Scalar]) -> Tensor {
    tensor_ops::by_spec::call_map_new(spec(name), inputs, params).unwrap_or_else(|e| panic!("{name}: {e}"))
}

const INT_DTYPES: [DType; 5] = [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64];

// ------------------------------------------------------------------ params (CPU)

#[test]
fn param_arithmetic_is_total_on_the_cpu() {
    for dtype in INT_DTYPES.into_iter().chain([DType::F32, DType::F64]) {
        // 67 elements: full vectors and a one-lane tail on every dtype
        let x = Tensor::zeros(&[67], dtype, Device::Cpu).unwrap();
        for (name, f) in PARAM_OPS {
            if name == "it_pmix" && dtype == DType::F32 {
                continue;
            }
            for (n, d) in PARAM_CASES {
                let got = values(&call(name, &[&x], &[Scalar::Int(n), Scalar::Int(d)]));
                let want = as_dtype(f(n, d), dtype);
                assert!(got.iter().all(|&g| g == want), "{name}({n}, {d}) on {dtype}: got {:?}, want {want:?}", got[0]);
            }
        }
    }
}

#[test]
fn integer_literal_constants_reach_both_ends_of_i64() {
    let x = Tensor::zeros(&[3], DType::I64, Device::Cpu).unwrap();
    let want = i64::MIN / 2 + (i64::MAX - 1) / 2;
    assert_eq!(call("it_consts", &[&x], &[]).to_vec::<i64>().unwrap(), vec![want; 3]);
}

// ------------------------------------------------------------------ element values (CPU)

macro_rules! edge_values {
    ($t:ty) => {{
        let mut v: Vec<$t> = vec![<$t>::MIN, <$t>::MIN.wrapping_add(1), 0, 1, 2, 7, <$t>::MAX - 1, <$t>::MAX];
        if <$t>::MIN != 0 {
            v.extend([(0 as $t).wrapping_sub(1), (0 as $t).wrapping_sub(2)]);
        }
        v
    }};
}

/// Every pair of edge values of `$t` as two tensors, and the wrapping references.
macro_rules! element_case {
    ($t:ty, $dtype:expr) => {{
        let e = edge_values!($t);
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for &a in &e {
            for &b in &e {
                xs.push(a);
                ys.push(b);
            }
        }
        let n = xs.len();
        let refs: Vec<(&str, Vec<i128>)> = vec![
            (
                "it_ediv",
                xs.iter().zip(&ys).map(|(&a, &b)| if b == 0 { 0 } else { a.wrapping_div(b) } as i128).collect(),
            ),
            ("it_emul", xs.iter().zip(&ys).map(|(&a, &b)| a.wrapping_mul(b) as i128).collect()),
            ("it_eadd", xs.iter().zip(&ys).map(|(&a, &b)| a.wrapping_add(b) as i128).collect()),
            (
                "it_esub",
                xs.iter().zip(&ys).map(|(&a, &b)| a.wrapping_sub(b).wrapping_add(b.wrapping_neg()) as i128).collect(),
            ),
        ];
        let x = Tensor::from_vec(xs, &[n]).unwrap();
        let y = Tensor::from_vec(ys, &[n]).unwrap();
        assert_eq!(x.dtype(), $dtype);
        (x, y, refs)
    }};
}

fn element_cases(dtype: DType) -> (Tensor, Tensor, Vec<(&'static str, Vec<i128>)>) {
    match dtype {
        DType::U8 => element_case!(u8, dtype),
        DType::I8 => element_case!(i8, dtype),
        DType::I16 => element_case!(i16, dtype),
        DType::I32 => element_case!(i32, dtype),
        DType::I64 => element_case!(i64, dtype),
        d => unreachable!("{d}"),
    }
}

fn ints(v: &[i128]) -> Vec<V> {
    v.iter().map(|&i| V::I(i)).collect()
}

#[test]
fn element_arithmetic_is_total_on_the_cpu() {
    for dtype in INT_DTYPES {
        let (x, y, refs) = element_cases(dtype);
        for (name, want) in &refs {
            let got = values(&call(name, &[&x, &y], &[]));
            assert_eq!(got, ints(want), "{name} on {dtype}, contiguous");
            // the staged (strided) path and a single element (one-lane value)
            let got = values(&call(name, &[&x.flip(0).unwrap(), &y.flip(0).unwrap()], &[]));
            let mut rev = want.clone();
            rev.reverse();
            assert_eq!(got, ints(&rev), "{name} on {dtype}, flipped");
            for i in [0, want.len() / 2, want.len() - 1] {
                let (xi, yi) = (x.narrow(0, i, 1).unwrap(), y.narrow(0, i, 1).unwrap());
                assert_eq!(values(&call(name, &[&xi, &yi], &[])), ints(&want[i..=i]), "{name} on {dtype}, element {i}");
            }
        }
        // element / param, element / constant zero
        let d_cases = [0i64, -1, 1, 2, -2];
        for d in d_cases {
            let got = values(&call("it_eparam", &[&x], &[Scalar::Int(d)]));
            let xv = values(&x);
            for (g, xi) in got.iter().zip(&xv) {
                let V::I(a) = *xi else { unreachable!() };
                let want = match as_dtype(d, dtype) {
                    V::I(0) => 0,
                    V::I(b) => wrap(a / b, dtype),
                    _ => unreachable!(),
                };
                assert_eq!(*g, V::I(want), "it_eparam({a}, {d}) on {dtype}");
            }
        }
    }
}

/// `v` wrapped into `dtype`'s range.
fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::U8 => v as u8 as i128,
        DType::I8 => v as i8 as i128,
        DType::I16 => v as i16 as i128,
        DType::I32 => v as i32 as i128,
        _ => v as i64 as i128,
    }
}

// ------------------------------------------------------------------ CUDA C (shim, NVRTC)

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cuda_c_integer_arithmetic_is_total_like_the_cpu() {
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for dtype in INT_DTYPES.into_iter().chain([DType::F32, DType::F64]) {
        let x = Tensor::zeros(&[67], dtype, Device::Cpu).unwrap();
        for (name, _) in PARAM_OPS {
            if name == "it_pmix" && dtype == DType::F32 {
                continue;
            }
            for (n, d) in PARAM_CASES {
                let params = [Scalar::Int(n), Scalar::Int(d)];
                wants.push(values(&call(name, &[&x], &params)));
                calls.push(shim::plan_call(
                    format!("{name}({n}, {d}) {dtype}"),
                    spec(name),
                    dtype,
                    &[&x],
                    &params,
                    dtype,
                ));
            }
        }
        if !dtype.is_int() {
            continue;
        }
        let (x, y, refs) = element_cases(dtype);
        for (name, _) in &refs {
            for (a, b) in [(x.clone(), y.clone()), (x.flip(0).unwrap(), y.flip(0).unwrap())] {
                wants.push(values(&call(name, &[&a, &b], &[])));
                calls.push(shim::plan_call(format!("{name} {dtype}"), spec(name), dtype, &[&a, &b], &[], dtype));
            }
        }
        for d in [0i64, -1, 2] {
            wants.push(values(&call("it_eparam", &[&x], &[Scalar::Int(d)])));
            calls.push(shim::plan_call(
                format!("it_eparam {d} {dtype}"),
                spec("it_eparam"),
                dtype,
                &[&x],
                &[Scalar::Int(d)],
                dtype,
            ));
        }
    }
    let x = Tensor::zeros(&[5], DType::I64, Device::Cpu).unwrap();
    wants.push(values(&call("it_consts", &[&x], &[])));
    calls.push(shim::plan_call("it_consts", spec("it_consts"), DType::I64, &[&x], &[], DType::I64));
    shim::run_all(&calls);
    for (c, want) in calls.iter().zip(&wants) {
        assert_eq!(&values(&c.out), want, "{}: shim (CUDA C) != CPU", c.what);
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cuda_c_of_the_integer_ops_compiles_with_nvrtc() {
    shim::nvrtc_compiles(&[
        "it_pdiv",
        "it_pmul",
        "it_padd",
        "it_psub",
        "it_pmix",
        "it_ediv",
        "it_emul",
        "it_eadd",
        "it_esub",
        "it_eparam",
        "it_consts",
    ]);
}
