//! Op params reach the kernels exactly, in their declared types (issue 9): an i64 param of
//! 16777217 (not an f32) and an f64 param of 0.1 (not an f32) give the same bits on the CPU
//! and in the generated CUDA C (run on the CPU shim), and those bits are the exact results.

mod shim;

use tensor_ops::prelude::*;

/// `x + k`, an i64 param.
#[tensor_op(dtypes = [i32, i64, f32, f64])]
pub fn px_add_k<T: Num>(x: T, #[param] k: i64) -> T {
    x + T::from_i64(k)
}

/// `x * s`, an f64 param.
#[tensor_op(dtypes = [f32, f64])]
pub fn px_scale<T: Float>(x: T, #[param] s: f64) -> T {
    x * T::from_f64(s)
}

/// `x * s`, an f32 param.
#[tensor_op(dtypes = [f32, f64])]
pub fn px_scale32<T: Float>(x: T, #[param] s: f32) -> T {
    x * T::from_f32(s)
}

/// Four params of four types (the most an op may have), each used exactly.
#[tensor_op(dtypes = [i64, f64])]
pub fn px_four<T: Num>(x: T, #[param] k: i64, #[param] s: f64, #[param] on: bool, #[param] h: f32) -> T {
    if on {
        x + T::from_i64(k)
    } else {
        x * T::from_f64(s) + T::from_f32(h) + T::from_bool(on)
    }
}

fn spec(name: &str) -> &'static tensor_core::registry::OpSpec {
    tensor_ops::registry().op(name).unwrap_or_else(|| panic!("{name} is not registered"))
}

/// The raw bits of every element (f32/f64 as IEEE bits, integers as themselves).
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(|v| v as u64).collect(),
        DType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(|v| v as u64).collect(),
        DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(|v| v.to_bits() as u64).collect(),
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        d => unreachable!("{d}"),
    }
}

fn i64s() -> Tensor {
    Tensor::from_vec(vec![0i64, 1, -1, -16_777_217, 1 << 40, i64::MAX - 16_777_216, 7], &[7]).unwrap()
}

fn f64s() -> Tensor {
    Tensor::from_vec(vec![1.0f64, 3.0, 7.0, -0.3, 1e300, 123_456.789, 2.5e-310, 10.0, 0.7], &[9]).unwrap()
}

#[test]
fn cpu_params_are_exact_in_their_declared_types() {
    let got = px_add_k(&i64s(), 16_777_217).unwrap().to_vec::<i64>().unwrap();
    let want: Vec<i64> = i64s().to_vec::<i64>().unwrap().iter().map(|v| v.wrapping_add(16_777_217)).collect();
    assert_eq!(got, want);
    let big = (1i64 << 53) + 1; // not an f64 either
    let got = px_add_k(&i64s(), big).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(got, i64s().to_vec::<i64>().unwrap().iter().map(|v| v.wrapping_add(big)).collect::<Vec<_>>());
    let got = px_scale(&f64s(), 0.1).unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = f64s().to_vec::<f64>().unwrap().iter().map(|v| v * 0.1).collect();
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // an f32 param on f64 tensors is the f32 value, widened exactly
    let got = px_scale32(&f64s(), 0.1f32).unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = f64s().to_vec::<f64>().unwrap().iter().map(|v| v * (0.1f32 as f64)).collect();
    assert_eq!(got, want);
    let got = px_four(&i64s(), big, 0.5, true, 2.0).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(got, i64s().to_vec::<i64>().unwrap().iter().map(|v| v.wrapping_add(big)).collect::<Vec<_>>());
    let got = px_four(&f64s(), big, 0.1, false, 0.1).unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = f64s().to_vec::<f64>().unwrap().iter().map(|v| v * 0.1 + 0.1f32 as f64 + 0.0).collect();
    assert_eq!(got, want);
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cuda_params_match_the_cpu_bit_for_bit() {
    let big = (1i64 << 53) + 1;
    let f32s = f64s().to_dtype(DType::F32).unwrap();
    let i32s = Tensor::from_vec(vec![0i32, 1, -1, i32::MAX, 99], &[5]).unwrap();
    let cases: Vec<(&str, Tensor, Vec<Scalar>)> = vec![
        ("px_add_k", i64s(), vec![Scalar::Int(16_777_217)]),
        ("px_add_k", i64s(), vec![Scalar::Int(big)]),
        ("px_add_k", i64s(), vec![Scalar::Int(i64::MIN)]),
        ("px_add_k", i32s.clone(), vec![Scalar::Int(16_777_217)]),
        ("px_add_k", f64s(), vec![Scalar::Int(big)]),
        ("px_add_k", f32s.clone(), vec![Scalar::Int(16_777_217)]),
        ("px_scale", f64s(), vec![Scalar::Float(0.1)]),
        ("px_scale", f64s(), vec![Scalar::Float(1.0 / 3.0)]),
        ("px_scale", f32s.clone(), vec![Scalar::Float(0.1)]),
        ("px_scale32", f64s(), vec![Scalar::from(0.1f32)]),
        ("px_scale32", f32s, vec![Scalar::from(0.1f32)]),
        ("px_four", i64s(), vec![Scalar::Int(big), Scalar::Float(0.1), Scalar::Bool(true), Scalar::from(0.1f32)]),
        ("px_four", f64s(), vec![Scalar::Int(big), Scalar::Float(0.1), Scalar::Bool(false), Scalar::from(0.1f32)]),
        // kinds that differ from the declared types convert with `as` rules on both sides
        ("px_four", i64s(), vec![Scalar::Float(-3.7e19), Scalar::Int(3), Scalar::Int(2), Scalar::Int(16_777_217)]),
        ("px_four", f64s(), vec![Scalar::Bool(true), Scalar::Int(big), Scalar::Float(0.0), Scalar::Float(1e300)]),
    ];
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for (name, x, params) in &cases {
        let cpu = tensor_ops::by_spec::call_map_new(spec(name), &[x], params).unwrap();
        wants.push(bits(&cpu));
        let what = format!("{name} {} {params:?}", x.dtype());
        calls.push(shim::plan_call(what, spec(name), x.dtype(), &[x], params, x.dtype()));
    }
    // the strided and 64-bit index kernels carry the params too
    let x = f64s().view(&[3, 3]).unwrap().t().unwrap();
    let cpu = tensor_ops::by_spec::call_map_new(spec("px_scale"), &[&x], &[Scalar::Float(0.1)]).unwrap();
    wants.push(bits(&cpu.contiguous().unwrap()));
    calls.push(shim::plan_call(
        "px_scale transposed",
        spec("px_scale"),
        DType::F64,
        &[&x],
        &[Scalar::Float(0.1)],
        DType::F64,
    ));
    let mut wide =
        shim::plan_call("px_scale 64-bit", spec("px_scale"), DType::F64, &[&x], &[Scalar::Float(0.1)], DType::F64);
    wide.steps = tensor_kernels_cuda::plan::widen_index(&wide.steps);
    wants.push(bits(&cpu.contiguous().unwrap()));
    calls.push(wide);
    shim::run_all(&calls);
    for (c, want) in calls.iter().zip(&wants) {
        assert_eq!(&bits(&c.out), want, "{}: CUDA C (shim) != CPU", c.what);
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cuda_c_of_the_param_ops_compiles_with_nvrtc() {
    shim::nvrtc_compiles(&["px_add_k", "px_scale", "px_scale32", "px_four"]);
}
