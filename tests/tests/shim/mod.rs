//! Runs single calls of registered ops through their CUDA rows on the CPU shim: the plan the
//! CUDA launcher would make (`tensor_kernels_cuda::plan::plan_map`), over the generated CUDA
//! C compiled by the host C++ compiler. Used by tests that compare exact values of CPU and
//! CUDA (params, integer edge cases). Without g++ or the CUDA headers the runs report
//! `false` (skipped), except under `CI`, where that fails.
#![allow(dead_code)]

use std::path::PathBuf;

use tensor_core::registry::RawTensor;
use tensor_core::registry::{registry, OpSpec};
use tensor_core::{lock_many, Access, Tensor};
use tensor_cuda_testing::{check, shim};
use tensor_kernels_cuda::kernel::CudaMapKernel;
use tensor_kernels_cuda::{codegen, nvrtc, plan};
use tensor_ops::prelude::*;

/// One planned call: running its steps writes `out`.
pub struct Planned {
    /// What it is, for messages.
    pub what: String,
    /// The launches.
    pub steps: Vec<plan::Step>,
    /// The output (host memory standing in for device memory).
    pub out: Tensor,
    _keep: Vec<Tensor>,
}

/// Plans `op(inputs..., params...)` into a new output of `out_dtype` with `op`'s CUDA row
/// for `dtype` (inputs are broadcast to the first input's shape).
pub fn plan_call(
    what: impl Into<String>,
    spec: &'static OpSpec,
    dtype: DType,
    inputs: &[&Tensor],
    params: &[Scalar],
    out_dtype: DType,
) -> Planned {
    let what = what.into();
    let row = registry()
        .lookup(spec.name, Device::Cuda(0), Layout::Strided, dtype)
        .unwrap_or_else(|e| panic!("{what}: no CUDA row: {e}"));
    let Some(k) = row.kernel.as_any().downcast_ref::<CudaMapKernel>() else {
        panic!("{what}: not a CUDA elementwise row")
    };
    let shape = inputs[0].shape().to_vec();
    // A quantized output has scale 1 and zero point 0, as the common helpers make inputs.
    let out = if out_dtype.is_quantized() {
        let q = tensor_ops::Quantizer::per_tensor(out_dtype, 1.0, 0).unwrap();
        Tensor::empty_quantized(&shape, &q, Device::Cpu).unwrap()
    } else {
        Tensor::empty(&shape, out_dtype, Device::Cpu).unwrap()
    };
    let staged: Vec<Tensor> = inputs.iter().map(|t| t.broadcast_to(&shape).unwrap()).collect();
    // Quantized operands' arithmetic, output first (what the call path hands the kernel).
    let mut quant: tensor_core::quant::OperandAffines = Default::default();
    for (slot, t) in quant.iter_mut().zip(std::iter::once(&out).chain(&staged)) {
        *slot = t.quantizer().map(|q| q.affine(0));
    }
    let quant = quant.iter().any(Option::is_some).then_some(&quant);
    let steps = with_raw(&out, &staged, |out_raw, in_raw| plan::plan_map(k, out_raw, in_raw, params, quant, 3))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    Planned { what, steps, out, _keep: staged }
}

/// Runs `f` on the raw views of `out` and `inputs` under their locks (what a planner needs
/// to address host memory standing in for device memory).
pub fn with_raw<R>(out: &Tensor, inputs: &[Tensor], f: impl FnOnce(&RawTensor<'_>, &[RawTensor<'_>]) -> R) -> R {
    let mut wants: Vec<_> = inputs.iter().map(|t| (t.storage(), Access::Read)).collect();
    wants.push((out.storage(), Access::Write));
    let locks = lock_many(&wants).unwrap();
    let out_raw = out.raw(locks.base(out.storage()));
    let in_raw: Vec<_> = inputs.iter().map(|t| t.raw(locks.base(t.storage()))).collect();
    f(&out_raw, &in_raw)
}

/// A planned call from steps the caller made (`out` and `keep` own the memory they address).
pub fn planned(what: impl Into<String>, steps: Vec<plan::Step>, out: Tensor, keep: Vec<Tensor>) -> Planned {
    Planned { what: what.into(), steps, out, _keep: keep }
}

/// Compiles `specs` with NVRTC (errors, warnings and spills fail, and so does a missing
/// NVRTC).
pub fn nvrtc_compiles_specs(specs: &[codegen::KernelSpec<'static>]) {
    nvrtc_available();
    let reports = check::compile_specs(specs).unwrap_or_else(|e| panic!("{e}"));
    println!("{} kernels compiled by NVRTC ({} reports)", specs.len(), reports.len());
}

/// Fails the test, with the fix, when NVRTC does not load (the tests that need it are
/// `#[cfg_attr(tops_cuda_checks_unavailable, ignore)]`, so this runs only where the build
/// found NVRTC, or under `CI`).
pub fn nvrtc_available() {
    match nvrtc::nvrtc() {
        Ok(_) => {}
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    }
}

/// Builds one shim library for every kernel of `calls` and runs them (a shim that cannot be
/// built here fails the test, with the fix).
pub fn run_all(calls: &[Planned]) {
    let specs: Vec<_> = calls
        .iter()
        .flat_map(|c| c.steps.iter())
        .filter_map(|s| if let plan::Step::Kernel(l) = s { Some(l.spec.clone()) } else { None })
        .collect();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    let lib = match shim::build(&specs, &dir) {
        Ok(lib) => lib,
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    };
    for c in calls {
        // SAFETY: the plans address the host storages of `c`'s tensors, alive in `c`.
        unsafe { lib.run(&c.steps) }.unwrap_or_else(|e| panic!("{}: {e}", c.what));
    }
    println!("{} calls ran on the shim ({} kernels, {})", calls.len(), specs.len(), lib.path.display());
}

/// Compiles every kernel (each layout class) of the CUDA rows of the ops named in `ops`
/// with NVRTC, failing on errors, warnings, spills and a missing NVRTC.
pub fn nvrtc_compiles(ops: &[&str]) {
    nvrtc_available();
    let mut specs = Vec::new();
    for (op, device, layout, dtypes) in registry().entries() {
        // (the rows under the sparse layouts hold the strided rows' kernels)
        if device != tensor_core::DeviceKind::Cuda || layout != tensor_core::Layout::Strided || !ops.contains(&op) {
            continue;
        }
        let set = registry().row_set(op, device, layout).unwrap();
        for d in dtypes {
            let row = set.get(d).unwrap();
            if let Some(k) = row.kernel.as_any().downcast_ref::<CudaMapKernel>() {
                let func = codegen::DeviceFn::from_kernel(k, set.op.params.len());
                specs.extend(codegen::map_kernels_for(func, d, set.op.arity));
            }
        }
    }
    assert!(!specs.is_empty(), "no CUDA rows for {ops:?}");
    let reports = check::compile_specs(&specs).unwrap_or_else(|e| panic!("{e}"));
    println!("{} kernels compiled by NVRTC ({} reports)", specs.len(), reports.len());
}
