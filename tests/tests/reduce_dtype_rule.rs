//! The reduction dtype rule exists once (the spec's `ReduceOutput`, in the core): every
//! reduction row in the registry — CPU and CUDA, built-in and `#[tensor_op(reduce)]` — stores
//! the dtype the rule gives, and every built-in has a row for every dtype on each device that
//! has any.

use tensor_core::call::ReduceDims;
use tensor_core::registry::{KernelRow, ReduceSpec};
use tensor_kernels_cuda::kernel::CudaReduceKernel;
use tensor_ops::by_spec::call_reduce_new;
use tensor_ops::prelude::*;
use tensor_ops::specs;
use tensor_ops::tensor_core::DeviceKind;

mod user_reduce;
use user_reduce::*;

/// The built-in reductions' specs (softmax's log-sum-exp pass included).
fn builtins() -> Vec<&'static ReduceSpec> {
    vec![
        &specs::SUM,
        &specs::PROD,
        &specs::MEAN,
        &specs::AMAX,
        &specs::AMIN,
        &specs::ALL,
        &specs::ANY,
        &specs::LOGSUMEXP,
        &specs::VAR,
        &specs::STD,
        &specs::ARGMAX,
        &specs::ARGMIN,
        &specs::SOFTMAX_LSE,
    ]
}

/// The reductions the tests crate defines.
fn user_defined() -> Vec<&'static ReduceSpec> {
    vec![&l2_norm::SPEC, &welford_var::SPEC, &my_argmax::SPEC, &count_nonzero::SPEC, &capped_sum::SPEC]
}

/// Every (device kind, dtype, row) of `spec`.
fn rows_of(spec: &'static ReduceSpec) -> Vec<(DeviceKind, DType, &'static KernelRow)> {
    let reg = tensor_ops::registry();
    let mut rows = Vec::new();
    for kind in [DeviceKind::Cpu, DeviceKind::Cuda] {
        if let Some(set) = reg.row_set(spec.op.name, kind, Layout::Strided) {
            assert!(std::ptr::eq(set.op, &spec.op), "{} is registered by another spec", spec.op.name);
            for dtype in set.dtypes() {
                rows.push((kind, dtype, set.get(dtype).unwrap()));
            }
        }
    }
    rows
}

/// Checks one row against the rule: a CUDA row by its declared dtypes, a CPU row by running
/// it (its driver refuses an output dtype other than its reducer's).
fn check_row(spec: &'static ReduceSpec, kind: DeviceKind, dtype: DType, row: &KernelRow) {
    let name = spec.op.name;
    let want = spec.output.result(dtype);
    match kind {
        DeviceKind::Cuda => {
            let k = row.kernel.as_any().downcast_ref::<CudaReduceKernel>().expect("a CUDA reduction row");
            assert_eq!(k.output, want, "{name} cuda {dtype}: output");
            assert_eq!(k.compute, spec.output.accumulate(dtype), "{name} cuda {dtype}: accumulate");
        }
        _ => {
            let t = Tensor::ones(&[2, 3], dtype, Device::Cpu).unwrap();
            let params: Vec<Scalar> = spec.op.params.iter().map(|_| Scalar::Int(0)).collect();
            let r = call_reduce_new(spec, &t, ReduceDims::All, false, &params)
                .unwrap_or_else(|e| panic!("{name} cpu {dtype}: {e}"));
            assert_eq!(r.dtype(), want, "{name} cpu {dtype}: output");
        }
    }
}

#[test]
fn every_reduction_row_stores_the_dtype_of_its_rule() {
    let mut checked = 0;
    for spec in builtins().into_iter().chain(user_defined()) {
        let rows = rows_of(spec);
        assert!(rows.iter().any(|r| r.0 == DeviceKind::Cpu), "{} has no CPU rows", spec.op.name);
        for (kind, dtype, row) in rows {
            check_row(spec, kind, dtype, row);
            checked += 1;
        }
    }
    assert!(checked > 13 * 10, "only {checked} rows checked");
}

#[test]
fn every_builtin_reduction_has_every_dtype_on_each_device_it_has() {
    let reg = tensor_ops::registry();
    for spec in builtins() {
        for kind in [DeviceKind::Cpu, DeviceKind::Cuda] {
            if let Some(set) = reg.row_set(spec.op.name, kind, Layout::Strided) {
                assert_eq!(set.dtypes(), DType::ALL.to_vec(), "{} on {kind}", spec.op.name);
            } else {
                assert_eq!(kind, DeviceKind::Cuda, "{} has no CPU rows", spec.op.name);
            }
        }
    }
    // The CUDA backend is linked into the tests (tensor-ops' default `cuda` feature).
    assert!(reg.row_set("sum", DeviceKind::Cuda, Layout::Strided).is_some());
}

#[test]
fn the_rule_gives_the_documented_dtypes() {
    use tensor_core::registry::{Accumulate, ReduceOutput};
    assert_eq!(specs::SUM.output.result(DType::U8), DType::I64);
    assert_eq!(specs::MEAN.output.result(DType::I32), DType::F32);
    assert_eq!(specs::AMAX.output.result(DType::F16), DType::F16);
    assert_eq!(specs::AMAX.output.accumulate(DType::F16), DType::F32);
    assert_eq!(specs::ARGMAX.output, ReduceOutput::Fixed(Accumulate::Same, DType::I64));
    assert_eq!(specs::SOFTMAX_LSE.output.accumulate(DType::I8), DType::F32);
    assert_eq!(specs::SOFTMAX_LSE.output.result(DType::F32), DType::F64);
    assert_eq!(count_nonzero::SPEC.output.result(DType::F32), DType::I64);
    assert_eq!(capped_sum::SPEC.output.result(DType::I16), DType::I64);
}
