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
//! (every registered CUDA row).

mod common;
mod user_reduce;

use std::path::PathBuf;

use common::{make, poison, values, Lay, V};
use tensor_ops::__private::tensor_core::call::{reduction_plan, ReduceDims};
use tensor_ops::__private::tensor_core::registry::{KernelRow, OpSpec, RawTensor};
use tensor_ops::__private::tensor_core::{lock_many, Access, DeviceKind};
use tensor_ops::__private::tensor_kernels_cuda::kernel::CudaReduceKernel;
use tensor_ops::__private::tensor_kernels_cuda::plan::Step;
use tensor_ops::__private::tensor_kernels_cuda::{reduce_plan, shim};
use tensor_ops::prelude::*;

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Every CUDA reduction row: (op, dtype, kernel).
fn reduce_rows() -> Vec<Row> {
    common::cuda_rows_of::<CudaReduceKernel>()
        .into_iter()
        .filter_map(|(op, d, row)| Some((op, d, row.kernel.as_any().downcast_ref::<CudaReduceKernel>()?)))
        .collect()
}

/// The CPU result of op `name` (the public API), for comparison. `softmax` is the row of
/// softmax's log-sum-exp pass: compared with `logsumexp` over the input.
fn cpu_result(name: &str, a: &Tensor, dims: Option<&[usize]>, keepdim: bool) -> Tensor {
    let r = match (name, dims) {
        ("sum", Some(d)) => tensor_ops::sum(a, d, keepdim),
        ("sum", None) => tensor_ops::sum_all(a),
        ("prod", Some(d)) => tensor_ops::prod(a, d, keepdim),
        ("prod", None) => tensor_ops::prod_all(a),
        ("mean", Some(d)) => tensor_ops::mean(a, d, keepdim),
        ("mean", None) => tensor_ops::mean_all(a),
        ("amax", Some(d)) => tensor_ops::amax(a, d, keepdim),
        ("amax", None) => tensor_ops::amax_all(a),
        ("amin", Some(d)) => tensor_ops::amin(a, d, keepdim),
        ("amin", None) => tensor_ops::amin_all(a),
        ("all", Some(d)) => tensor_ops::all(a, d, keepdim),
        ("any", Some(d)) => tensor_ops::any(a, d, keepdim),
        ("logsumexp" | "softmax", Some(d)) => tensor_ops::logsumexp(a, d, keepdim),
        ("logsumexp" | "softmax", None) => tensor_ops::logsumexp_all(a),
        ("var", Some(d)) => tensor_ops::var(a, d, 1, keepdim),
        ("std", Some(d)) => tensor_ops::std(a, d, 1, keepdim),
        ("argmax", Some([d])) => tensor_ops::argmax(a, *d, keepdim),
        ("argmin", Some([d])) => tensor_ops::argmin(a, *d, keepdim),
        ("l2_norm", Some(d)) => user_reduce::l2_norm(a, d, keepdim),
        ("l2_norm", None) => user_reduce::l2_norm_all(a),
        ("welford_var", Some(d)) => user_reduce::welford_var(a, d, keepdim),
        ("my_argmax", Some(d)) => user_reduce::my_argmax(a, d, keepdim),
        ("count_nonzero", Some(d)) => user_reduce::count_nonzero(a, d, keepdim),
        ("count_nonzero", None) => user_reduce::count_nonzero_all(a),
        ("capped_sum", Some(d)) => user_reduce::capped_sum(a, d, keepdim, CAP),
        ("capped_sum", None) => user_reduce::capped_sum_all(a, CAP),
        other => panic!("no CPU reference for {other:?}"),
    };
    r.unwrap_or_else(|e| panic!("{name} on the CPU: {e}"))
}

/// capped_sum's param.
const CAP: f64 = 2.5;

/// The user-defined reductions (their inputs have no NaN: `my_argmax` has no NaN rule, so
/// its answer with NaNs depends on the order of combination, on the CPU too).
fn user_op(name: &str) -> bool {
    matches!(name, "l2_norm" | "welford_var" | "my_argmax" | "count_nonzero" | "capped_sum")
}

/// Ops whose results do not depend on the order of combination.
fn order_free(name: &str, dtype: DType) -> bool {
    matches!(name, "amax" | "amin" | "all" | "any" | "argmax" | "argmin" | "my_argmax" | "count_nonzero")
        || (matches!(name, "sum" | "prod" | "capped_sum") && !dtype.is_float())
}

/// One planned reduction on the shim.
struct Case {
    what: String,
    name: &'static str,
    steps: Vec<Step>,
    got: Tensor,
    want: Tensor,
    /// Σ|x| over the largest reduced extent: the scale of a sum's rounding differences.
    scale: f64,
    _input: Tensor,
    _work: Vec<u128>,
    order_free: bool,
    compute: DType,
}

/// One CUDA reduction row: (op, dtype, kernel).
type Row = (&'static OpSpec, DType, &'static CudaReduceKernel);

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
    let abs: Vec<f64> = values(&input)
        .iter()
        .map(|v| match *v {
            V::F(x) if x.is_finite() => x.abs(),
            V::I(i) => i.unsigned_abs() as f64,
            _ => 0.0,
        })
        .collect();
    let scale = abs.iter().sum::<f64>().max(1.0);
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

/// The layouts and dims every row is run on: (shape, layout, dims, keepdim, max_blocks).
type Shape = (&'static [usize], Lay, Option<&'static [usize]>, bool, u32);
const SHAPES: [Shape; 12] = [
    (&[6, 37], Lay::Contiguous, Some(&[1]), false, 64),
    (&[6, 37], Lay::Offset, Some(&[1]), true, 64),
    (&[6, 37], Lay::Stepped, Some(&[1]), false, 64),
    (&[6, 37], Lay::Flipped, Some(&[0]), false, 64),
    (&[37, 6], Lay::Contiguous, Some(&[0]), true, 64),
    (&[6, 37], Lay::Transposed, Some(&[1]), false, 64),
    (&[4, 5, 9], Lay::Permuted, Some(&[0, 2]), false, 64),
    (&[4, 5, 9], Lay::Contiguous, Some(&[2, 0]), true, 64),
    (&[3, 4, 5], Lay::Flipped, None, false, 64),
    // A long extent with one output: sliced, partials combined by the second pass.
    (&[1, 9000], Lay::Offset, Some(&[1]), false, 5),
    // A long strided extent: column kernel, sliced.
    (&[700, 3], Lay::Contiguous, Some(&[0]), false, 5),
    // An empty reduced extent: the identity's finish everywhere.
    (&[3, 0], Lay::Contiguous, Some(&[1]), false, 64),
];

fn no_nan_for_users(name: &str, vals: Vec<V>) -> Vec<V> {
    if !user_op(name) {
        return vals;
    }
    vals.into_iter().map(|v| if matches!(v, V::F(x) if x.is_nan()) { V::F(1.5) } else { v }).collect()
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

fn close(c: &Case) {
    let (got, want) = (values(&c.got), values(&c.want));
    assert_eq!(got.len(), want.len(), "{}: length", c.what);
    // The rounding of the output dtype, or of the accumulate dtype when that is coarser
    // (softmax's log-sum-exp pass folds f32 into an f64 result).
    let rel_of = |d: DType| -> f64 {
        match d {
            DType::F16 => 2e-3,
            DType::BF16 => 1.6e-2,
            DType::F32 => 2e-6,
            _ => 1e-12,
        }
    };
    let rel = rel_of(c.got.dtype()).max(rel_of(c.compute));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = match (g, w) {
            (V::F(g), V::F(w)) if !c.order_free => {
                if w.is_nan() || w.is_infinite() {
                    g.is_nan() == w.is_nan() && (w.is_nan() || g == w)
                } else {
                    // Another summation order: within the dtype's rounding of the terms.
                    let tol = rel * (w.abs() + if c.name == "prod" { 0.0 } else { c.scale }) + 1e-30;
                    (g - w).abs() <= tol
                }
            }
            (V::F(g), V::F(w)) => g == w || g.is_nan() && w.is_nan(),
            (g, w) => g == w,
        };
        assert!(ok, "{}: element {i}: shim {g:?}, CPU {w:?}", c.what);
    }
}

#[test]
fn shim_runs_every_cuda_reduction_like_the_cpu() {
    let cases = cases();
    let rows = reduce_rows();
    assert!(rows.len() >= 13 * 10, "{} CUDA reduction rows", rows.len());
    for user in ["l2_norm", "welford_var", "my_argmax", "count_nonzero", "capped_sum"] {
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
        Err(shim::ShimError::Unavailable(e)) if !ci() => return println!("SKIPPED: {e}"),
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

/// A device copy of `t` with `t`'s strides and relative storage offset.
fn device_view(t: &Tensor, dev: Device) -> Tensor {
    let (lo, hi) = t.storage_span().unwrap();
    let flat = t.as_strided(&[hi - lo + 1], &[1], lo).unwrap();
    flat.to_device(dev).unwrap().as_strided(t.shape(), t.strides(), t.storage_offset() - lo).unwrap()
}

/// With a GPU (`cargo test --workspace -- --ignored` on a machine with one): every CUDA
/// reduction row through the public API on `Device::Cuda` — new results, `_out` into a
/// poisoned tensor, softmax — equals the CPU, including a split 2^22-element extent.
#[test]
#[ignore = "needs a CUDA device"]
fn gpu_reductions_match_the_cpu_for_every_op_and_dtype() {
    let dev = Device::Cuda(0);
    for (op, dtype, k) in reduce_rows() {
        if op.name == "softmax" {
            continue; // its pass is checked through softmax below
        }
        for (i, &(shape, lay, dims, keepdim, _)) in SHAPES.iter().enumerate() {
            let name = op.name;
            let arg = matches!(name, "argmax" | "argmin");
            if arg && dims.is_none_or(|d| d.len() != 1)
                || matches!(name, "all" | "any" | "var" | "std") && dims.is_none()
            {
                continue;
            }
            let n: usize = shape.iter().product();
            if n == 0 && matches!(name, "amax" | "amin" | "argmax" | "argmin") {
                continue;
            }
            let input = make(&common::gen_values(dtype, n, 3 + i as u64), shape, dtype, lay);
            let want = cpu_result(name, &input, dims, keepdim);
            let got = cpu_result(name, &device_view(&input, dev), dims, keepdim);
            let case = Case {
                what: format!("gpu {name} {dtype} {shape:?} {lay:?} dims {dims:?}"),
                name,
                steps: Vec::new(),
                got: got.to_device(Device::Cpu).unwrap(),
                want,
                scale: 1e3,
                _input: input,
                _work: Vec::new(),
                order_free: order_free(name, dtype),
                compute: k.compute,
            };
            close(&case);
        }
    }
    // A long extent: sliced over the device's blocks, combined by the second pass.
    let big = Tensor::from_vec((0..1u32 << 22).map(|i| (i % 1000) as f32 * 1e-3).collect(), &[1 << 22]).unwrap();
    let want = big.sum_all().unwrap().to_vec::<f32>().unwrap()[0];
    let got = big.to_device(dev).unwrap().sum_all().unwrap().to_vec::<f32>().unwrap()[0];
    assert!((got - want).abs() <= 1e-5 * want.abs(), "sum of 2^22: gpu {got}, cpu {want}");
    let x = make(&common::gen_values(DType::F32, 6 * 37, 9), &[6, 37], DType::F32, Lay::Transposed);
    let want = x.softmax(1).unwrap().to_vec::<f32>().unwrap();
    let got = device_view(&x, dev).softmax(1).unwrap().to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(g == w || (g - w).abs() <= 1e-6 * w.abs().max(1e-3) || g.is_nan() && w.is_nan(), "softmax: {g} vs {w}");
    }
}

/// NVRTC compiles the CUDA C translated from the user-defined reductions (every dtype, row,
/// column and finishing kernel) for `compute_80` and `sm_90`, warning- and spill-free (the
/// built-ins are compiled with every registered row in `cuda_kernels.rs`).
#[test]
fn user_reductions_compile_with_nvrtc() {
    use tensor_ops::__private::tensor_kernels_cuda::{check, nvrtc};
    if let Err(e) = nvrtc::nvrtc() {
        assert!(!ci(), "CI is set but NVRTC is missing: {e}");
        return println!("SKIPPED: {e}");
    }
    let rows = || {
        tensor_ops::__private::inventory::iter::<KernelRow>
            .into_iter()
            .filter(|r| r.device == DeviceKind::Cuda && user_op(r.op.name))
    };
    assert!(rows().count() >= 5 * 4, "user reductions have CUDA rows");
    let reports = check::compile_all(rows()).unwrap_or_else(|e| panic!("{e}"));
    println!("{} user-reduction kernels x archs compiled", reports.len());
}
