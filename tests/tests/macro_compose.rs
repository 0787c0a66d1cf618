//! Composition in `#[tensor_op]` bodies (issue 12, level 1): a body calls other ops —
//! built-in ones from `tensor_ops` (another crate) and this crate's own — on element values.
//! Checked against naive per-element models and the eager chain, on the CPU and through the
//! generated CUDA C (CPU shim, NVRTC).

mod common;
mod shim;

use common::{assert_close, from_values, gen_values, values, V};
use tensor_ops::prelude::*;

/// A user op that the composed ones below call (same crate).
#[tensor_op(dtypes = [f16, bf16, f32, f64])]
pub fn cp_leaky<T: Float>(x: T, #[param] slope: f32) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::from_f32(slope)
    }
}

/// `x · sigmoid(k·x)` (GELU's sigmoid approximation for k = 1.702): a built-in of another
/// crate, called with a param of this op folded into its argument.
#[tensor_op(dtypes = [f16, bf16, f32, f64])]
pub fn cp_sig_gelu<T: Float>(x: T, #[param] k: f32) -> T {
    x * tensor_ops::sigmoid(x * T::from_f32(k))
}

/// A user op called twice: once passing this op's param through, once with a literal param.
#[tensor_op(dtypes = [f32, f64])]
pub fn cp_leaky_twice<T: Float>(x: T, #[param] slope: f32) -> T {
    cp_leaky(cp_leaky(x, slope), 0.5)
}

/// Integer dtypes: `relu(x) + 1` and a literal as a tensor argument of `maximum`.
#[tensor_op(dtypes = [i8, i32, i64, f32])]
pub fn cp_relu_plus<T: Num>(x: T, y: T) -> T {
    tensor_ops::relu(x) + tensor_ops::maximum(y, 3) - T::one()
}

/// A predicate op called as a condition.
#[tensor_op(dtypes = [i32, f32, f64])]
pub fn cp_pick<T: Num>(x: T, y: T) -> T {
    if tensor_ops::gt(x, y) {
        x - y
    } else {
        tensor_ops::neg(y)
    }
}

/// Transitive: `silu` (itself `x · sigmoid(x)`) twice and `sigmoid` directly: one copy of
/// each CUDA function in the kernel.
#[tensor_op(dtypes = [f32, f64])]
pub fn cp_silu_mix<T: Float>(x: T) -> T {
    let s = tensor_ops::silu(x);
    s * tensor_ops::silu(x * T::from_f64(0.5)) + tensor_ops::sigmoid(s)
}

fn f64_of(v: &V) -> f64 {
    match v {
        V::F(f) => *f,
        V::I(i) => *i as f64,
        V::B(b) => *b as u8 as f64,
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn check_unary(got: &Tensor, x: &Tensor, model: impl Fn(f64) -> f64, what: &str) {
    let want: Vec<V> = values(x).iter().map(|v| V::F(model(f64_of(v)))).collect();
    assert_close(&values(got), &want, got.dtype(), false, what);
}

#[test]
fn builtin_silu_is_x_times_sigmoid_and_matches_the_eager_chain_bit_for_bit() {
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let x = from_values(&gen_values(dtype, 1000, 7), &[10, 100], dtype);
        let got = tensor_ops::silu(&x).unwrap();
        check_unary(&got, &x, |v| v * sigmoid(v), &format!("silu {dtype}"));
        if matches!(dtype, DType::F32 | DType::F64) {
            // one rounding per op in both: the composed body computes what the chain does
            let eager = x.mul(&tensor_ops::sigmoid(&x).unwrap()).unwrap();
            assert_eq!(common::bits(&got), common::bits(&eager), "silu {dtype} vs x * sigmoid(x)");
        }
    }
    let i = Tensor::from_vec(vec![-2i32, 0, 3], &[3]).unwrap();
    let got = tensor_ops::silu(&i).unwrap();
    assert_eq!(got.dtype(), DType::F32, "float-only ops compute integers in f32");
    check_unary(&got, &i.to_dtype(DType::F32).unwrap(), |v| v * sigmoid(v), "silu i32");
}

#[test]
fn user_ops_compose_builtins_and_each_other_with_params_and_literals() {
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let x = from_values(&gen_values(dtype, 777, 3), &[777], dtype);
        let got = cp_sig_gelu(&x, 1.702).unwrap();
        let k = 1.702f32 as f64;
        check_unary(&got, &x, |v| v * sigmoid(v * k), &format!("cp_sig_gelu {dtype}"));
    }
    for dtype in [DType::F32, DType::F64] {
        let x = from_values(&gen_values(dtype, 500, 4), &[5, 100], dtype).t().unwrap();
        let got = cp_leaky_twice(&x, 0.25).unwrap();
        let leaky = |v: f64, s: f64| if v > 0.0 { v } else { v * s };
        check_unary(&got, &x, |v| leaky(leaky(v, 0.25), 0.5), &format!("cp_leaky_twice {dtype}"));
        let eager = cp_leaky(&cp_leaky(&x, 0.25).unwrap(), 0.5).unwrap();
        assert_eq!(common::bits(&got), common::bits(&eager), "cp_leaky_twice {dtype} vs its chain");
        let got = cp_silu_mix(&x).unwrap();
        check_unary(
            &got,
            &x,
            |v| {
                let s = v * sigmoid(v);
                s * (0.5 * v * sigmoid(0.5 * v)) + sigmoid(s)
            },
            &format!("cp_silu_mix {dtype}"),
        );
    }
    for dtype in [DType::I8, DType::I32, DType::I64, DType::F32] {
        let x = from_values(&gen_values(dtype, 300, 5), &[300], dtype);
        let y = from_values(&gen_values(dtype, 300, 6), &[300], dtype);
        let got = cp_relu_plus(&x, &y).unwrap();
        let eager = tensor_ops::relu(&x)
            .unwrap()
            .add(&tensor_ops::maximum(&y, &Tensor::scalar(3i64, dtype).unwrap()).unwrap())
            .unwrap()
            .sub(&Tensor::scalar(1i64, dtype).unwrap())
            .unwrap();
        assert_eq!(common::bits(&got), common::bits(&eager), "cp_relu_plus {dtype} vs its chain");
    }
    for dtype in [DType::I32, DType::F32, DType::F64] {
        let x = from_values(&gen_values(dtype, 300, 8), &[300], dtype);
        let y = from_values(&gen_values(dtype, 300, 9), &[300], dtype);
        let got = cp_pick(&x, &y).unwrap();
        let want: Vec<V> = values(&x)
            .iter()
            .zip(values(&y))
            .map(|(a, b)| match (a, b) {
                (V::I(a), V::I(b)) => {
                    V::I(if *a > b { (*a as i32).wrapping_sub(b as i32) } else { (b as i32).wrapping_neg() } as i128)
                }
                (a, b) => {
                    let (a, b) = (f64_of(a), f64_of(&b));
                    V::F(if a > b { a - b } else { -b })
                }
            })
            .collect();
        assert_close(&values(&got), &want, dtype, dtype == DType::I32, &format!("cp_pick {dtype}"));
    }
}

#[test]
fn composed_cuda_sources_hold_each_callee_once_behind_a_guard() {
    let src = tensor_ops::silu::CUDA_SOURCE_F32;
    assert_eq!(src.matches("tensor_op_sigmoid_f32(float x) {").count(), 1, "{src}");
    assert!(src.contains("tops_mul(x, tensor_op_sigmoid_f32(x))"), "{src}");
    let mix = __tensor_op_cp_silu_mix::CUDA_SOURCE_F64;
    // sigmoid's definition is spliced twice (through silu and directly) but guarded
    let guard = mix.lines().find(|l| l.starts_with("#ifndef TOPS_FN_tensor_op_sigmoid_f64")).unwrap();
    assert_eq!(mix.matches(guard).count(), 2, "{mix}");
    assert_eq!(__tensor_op_cp_leaky_twice::CUDA_FUNCTIONS[0].1, "tensor_op_cp_leaky_twice_f32");
}

const COMPOSED: [&str; 6] = ["cp_sig_gelu", "cp_leaky_twice", "cp_relu_plus", "cp_pick", "cp_silu_mix", "silu"];

/// The CPU dtypes an op lists.
fn dtypes_of(name: &str) -> Vec<DType> {
    let rows = tensor_ops::registry().entries();
    rows.into_iter().find(|(op, d, ..)| *op == name && *d == tensor_core::DeviceKind::Cpu).unwrap().3
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn composed_cuda_c_runs_on_the_shim_like_the_cpu() {
    let spec = |name: &str| tensor_ops::registry().op(name).unwrap();
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for name in COMPOSED {
        for dtype in dtypes_of(name) {
            let x = from_values(&gen_values(dtype, 257, 11), &[257], dtype);
            let y = from_values(&gen_values(dtype, 257, 12), &[257], dtype);
            let inputs: Vec<&Tensor> = if spec(name).arity == 2 { vec![&x, &y] } else { vec![&x] };
            let params: Vec<Scalar> = spec(name).params.iter().map(|_| Scalar::Float(0.3)).collect();
            let cpu = tensor_ops::by_spec::call_map_new(spec(name), &inputs, &params).unwrap();
            let what = format!("{name} {dtype}");
            calls.push(shim::plan_call(&what, spec(name), dtype, &inputs, &params, cpu.dtype()));
            wants.push((what, cpu));
        }
    }
    shim::run_all(&calls);
    for (c, (what, cpu)) in calls.iter().zip(&wants) {
        let exact = !cpu.dtype().is_float();
        assert_close(&values(&c.out), &values(cpu), cpu.dtype(), exact, what);
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn composed_cuda_c_compiles_with_nvrtc() {
    shim::nvrtc_compiles(&COMPOSED);
}
