//! The CUDA reductions, without a GPU: the CPU shim runs the launches the CUDA planner makes
//! (`tensor_kernels_cuda::reduce_plan`: row, column and second-pass kernels over the reducers
//! of `kernels/cuda/include/reduce.cuh`, warp shuffles included) on the core's canonical
//! reduction plans, and the results are compared with the CPU reductions for every
//! registered CUDA reduction row (op × dtype) on contiguous, misaligned, stepped, flipped,
//! transposed, permuted and expanded inputs, one dim / several dims / every dim, empty
//! extents and split extents (workspace + second pass), into poisoned outputs. The
//! user-defined reductions of `user_reduce/` (l2_norm, a Welford variance, an argmax seeing
//! the index, count_nonzero, a param) run through the CUDA C `#[tensor_op(reduce)]`
//! translated from their Rust bodies. NVRTC compiles the same kernels in `cuda_kernels.rs`
//! (every registered CUDA row); `cuda_device.rs` runs them end to end on `Device::Cuda` (a
//! GPU, or the CPU-backed stand-in of the driver).

mod common;
#[path = "reduce/cuda_rows.rs"]
mod cuda_rows;
#[path = "shim/mod.rs"]
mod shim_harness;
mod user_reduce;

use std::path::PathBuf;

use common::Lay;
use common::{make, poison};
use cuda_rows::{
    close, cpu_result, no_nan_for_users, order_free, reduce_rows, scale_of, user_op, Case, Row, CAP, SHAPES, SHIFT,
};
use tensor_core::call::{reduction_plan, ReduceDims};
use tensor_core::registry::{KernelRow, RawTensor};
use tensor_core::{lock_many, Access, DeviceKind};
use tensor_cuda_testing::shim;
use tensor_kernels_cuda::plan::Step;
use tensor_kernels_cuda::reduce_plan;
use tensor_ops::prelude::*;

fn plan_case(
    (op, dtype, k): Row,
    input: Tensor,
    dims: Option<&[usize]>,
    keepdim: bool,
    max_blocks: u32,
    what: String,
) -> Option<Case> {
    let name = op.name;
    let arg = matches!(name, "argmax" | "argmin");
    let dims_only = matches!(name, "all" | "any" | "var" | "std" | "welford_var" | "my_argmax");
    if arg && dims.is_none_or(|d| d.len() != 1) || dims_only && dims.is_none() {
        return None;
    }
    let empty = input.numel() == 0;
    if empty && matches!(name, "amax" | "amin" | "argmax" | "argmin") {
        return None;
    }
    let want = if name == "softmax" {
        // The log-sum-exp pass folds in its accumulate dtype and keeps the f64 result.
        cpu_result(name, &input.to_dtype(k.compute).unwrap(), dims, keepdim)
    } else {
        cpu_result(name, &input, dims, keepdim)
    };
    let want = if want.dtype() == k.output { want } else { want.to_dtype(k.output).unwrap() };
    let got = Tensor::empty(want.shape(), k.output, Device::Cpu).unwrap();
    poison(&got);
    let plan = reduction_plan(&input, &got, dims.map_or(ReduceDims::All, ReduceDims::Dims), keepdim).unwrap();
    let params: Vec<Scalar> = match name {
        "var" | "std" => vec![Scalar::Int(1)],
        "capped_sum" => vec![Scalar::Float(CAP)],
        "sum_sq_shifted" => vec![Scalar::Float(SHIFT as f64)],
        _ => vec![],
    };
    let wants = [(input.storage(), Access::Read), (got.storage(), Access::Write)];
    let locks = lock_many(&wants).unwrap();
    let at = |t: &Tensor| locks.base(t.storage()).wrapping_add(t.storage_offset() * t.elem_size());
    let out_raw =
        RawTensor { ptr: at(&got), dtype: k.output, shape: &plan.shape, strides: &plan.output, device: Device::Cpu };
    let in_raw = RawTensor { ptr: at(&input), dtype, shape: &plan.shape, strides: &plan.input, device: Device::Cpu };
    let mut planned = reduce_plan::plan_reduce(k, &out_raw, &in_raw, &plan.index, &params, max_blocks)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    drop(locks);
    let mut work = vec![0u128; planned.workspace_bytes.div_ceil(16)];
    planned.bind_workspace(work.as_mut_ptr() as usize as u64);
    let scale = scale_of(&input);
    Some(Case {
        what,
        name,
        steps: planned.steps,
        got,
        want,
        scale,
        _input: input,
        _work: work,
        order_free: order_free(name, dtype),
        compute: k.compute,
    })
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for (op, dtype, k) in reduce_rows() {
        for (i, &(shape, lay, dims, keepdim, max_blocks)) in SHAPES.iter().enumerate() {
            let n: usize = shape.iter().product();
            let vals = no_nan_for_users(op.name, common::gen_values(dtype, n, 17 + i as u64));
            let input = make(&vals, shape, dtype, lay);
            let what = format!("{} {dtype} {shape:?} {lay:?} dims {dims:?} keepdim {keepdim}", op.name);
            cases.extend(plan_case((op, dtype, k), input, dims, keepdim, max_blocks, what));
        }
        // An expanded input (stride 0 along the reduced dim).
        let vals = no_nan_for_users(op.name, common::gen_values(dtype, 33, 5));
        let row = make(&vals, &[1, 33], dtype, Lay::Contiguous);
        let what = format!("{} {dtype} expanded [7, 33] dims [0]", op.name);
        cases.extend(plan_case((op, dtype, k), row.expand(&[7, 33]).unwrap(), Some(&[0]), false, 64, what));
    }
    cases
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn shim_runs_every_cuda_reduction_like_the_cpu() {
    let cases = cases();
    let rows = reduce_rows();
    assert!(rows.len() >= 13 * 10, "{} CUDA reduction rows", rows.len());
    for user in ["l2_norm", "welford_var", "my_argmax", "count_nonzero", "capped_sum", "sum_sq_shifted"] {
        assert!(rows.iter().any(|(op, _, _)| op.name == user), "{user} has CUDA rows");
    }
    let specs: Vec<_> = cases
        .iter()
        .flat_map(|c| c.steps.iter())
        .filter_map(|s| if let Step::Kernel(l) = s { Some(l.spec.clone()) } else { None })
        .collect();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    let lib = match shim::build(&specs, &dir) {
        Ok(lib) => lib,
        Err(e) => panic!("{e}"),
    };
    let mut split = 0;
    for c in &cases {
        split += (c.steps.len() == 2) as usize;
        // SAFETY: the plans address the host storages of `c`'s tensors and workspace.
        unsafe { lib.run(&c.steps) }.unwrap_or_else(|e| panic!("{}: {e}", c.what));
        close(c);
    }
    assert!(split >= rows.len(), "every row ran a split (two-pass) case: {split}");
    println!("{} cases ({split} split) over {} rows, {} kernel launches", cases.len(), rows.len(), specs.len());
}

/// NVRTC compiles the CUDA C translated from the user-defined reductions (every dtype, row,
/// column and finishing kernel) for `compute_80` and `sm_90`, warning- and spill-free (the
/// built-ins are compiled with every registered row in `cuda_kernels.rs`).
#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn user_reductions_compile_with_nvrtc() {
    use tensor_cuda_testing::check;
    shim_harness::nvrtc_available();
    let rows =
        || inventory::iter::<KernelRow>.into_iter().filter(|r| r.device == DeviceKind::Cuda && user_op(r.op.name));
    assert!(rows().count() >= 5 * 4, "user reductions have CUDA rows");
    let reports = check::compile_all(rows()).unwrap_or_else(|e| panic!("{e}"));
    println!("{} user-reduction kernels x archs compiled", reports.len());
}
