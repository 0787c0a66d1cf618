//! The fused CUDA softmax rows without a GPU: the CPU shim runs the launch that
//! `plan_softmax_rows` makes (a block per row: the row's maximum and Σ e^(x − max) through
//! warp shuffles and a shared-memory step, then the output) on host memory, and the results
//! are compared with the CPU's softmax / log_softmax: f32 and f64, rows shorter than a warp
//! and longer than a block, more rows than blocks (the grid-stride loop), rows holding NaN,
//! +∞, −∞ only, and huge values, into poisoned outputs and in place. NVRTC compiles the same
//! kernels with every registered row in `cuda_kernels.rs`; `cuda_device.rs` runs them on
//! `Device::Cuda` (a GPU, or the CPU-backed stand-in of the driver).

mod common;

use std::path::PathBuf;

use common::poison;
use tensor_ops::__private::tensor_core::{lock_many, Access};
use tensor_ops::__private::tensor_kernels_cuda::codegen::KernelSpec;
use tensor_ops::__private::tensor_kernels_cuda::plan::Step;
use tensor_ops::__private::tensor_kernels_cuda::shim;
use tensor_ops::__private::tensor_kernels_cuda::softmax_rows::plan_softmax_rows;
use tensor_ops::prelude::*;

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// `rows × n` values in [-10, 10], with (when there are rows enough) a NaN in row 0, +∞ in
/// row 1, a row of −∞ (row 2) and huge equal values (row 3).
fn values(rows: usize, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = (0..rows * n).map(|i| ((i * 7919 + 13) % 2001) as f64 / 100.0 - 10.0).collect();
    if rows >= 4 && n >= 2 {
        v[n - 1] = f64::NAN;
        v[n] = f64::INFINITY;
        v[2 * n..3 * n].fill(f64::NEG_INFINITY);
        v[3 * n..4 * n].fill(1000.0);
    }
    v
}

fn tensor(v: &[f64], rows: usize, n: usize, dtype: DType) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[rows, n]).unwrap().to_dtype(dtype).unwrap()
}

/// The device (host) address of a dense tensor's first element.
fn address(t: &Tensor) -> u64 {
    let locks = lock_many(&[(t.storage(), Access::Read)]).unwrap();
    locks.base(t.storage()).wrapping_add(t.storage_offset() * t.elem_size()) as usize as u64
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn assert_close(got: &[f64], want: &[f64], dtype: DType, what: &str) {
    let tol = if dtype == DType::F32 { 1e-6 } else { 1e-13 };
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1e-3);
        assert!(ok, "{what}: element {k}: {g} vs the CPU's {w}");
    }
}

#[test]
fn shim_runs_the_fused_softmax_rows_like_the_cpu() {
    // (rows, row length, most blocks): one element; under a warp; over a block; over a
    // block by one; long rows; more rows than blocks.
    let shapes = [(1, 1, 8), (5, 7, 8), (6, 33, 2), (4, 256, 8), (4, 257, 3), (5, 1000, 2), (2, 5000, 8)];
    let specs: Vec<KernelSpec<'static>> = [DType::F32, DType::F64]
        .into_iter()
        .flat_map(|dtype| [false, true].map(|log| KernelSpec::SoftmaxRows { dtype, log }))
        .collect();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    let lib = match shim::build(&specs, &dir) {
        Ok(lib) => lib,
        Err(shim::ShimError::Unavailable(e)) if !ci() => return println!("SKIPPED: {e}"),
        Err(e) => panic!("{e}"),
    };
    let mut launches = 0;
    for dtype in [DType::F32, DType::F64] {
        for log in [false, true] {
            for &(rows, n, max_blocks) in &shapes {
                let what = format!(
                    "{} {dtype} [{rows}, {n}] in at most {max_blocks} blocks",
                    if log { "log_softmax" } else { "softmax" }
                );
                let v = values(rows, n);
                let x = tensor(&v, rows, n, dtype);
                let want = if log { x.log_softmax(1) } else { x.softmax(1) }.unwrap();
                let want = as_f64(&want);
                let got = Tensor::empty(&[rows, n], dtype, Device::Cpu).unwrap();
                poison(&got);
                let steps = plan_softmax_rows(dtype, log, address(&got), address(&x), rows * n, n, max_blocks).unwrap();
                let Some(Step::Kernel(l)) = steps.first() else { panic!("{what}: no launch") };
                assert!(l.grid as usize <= rows.min(max_blocks as usize) && l.block.0 % 32 == 0, "{what}: {l:?}");
                // SAFETY: the steps address the host storages of `x` and `got`, alive here.
                unsafe { lib.run(&steps) }.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_close(&as_f64(&got), &want, dtype, &what);
                if rows >= 4 && n >= 2 {
                    let special = as_f64(&got);
                    for r in 0..3 {
                        assert!(special[r * n..(r + 1) * n].iter().all(|y| y.is_nan()), "{what}: row {r} is all NaN");
                    }
                    let huge = if log { -(n as f64).ln() } else { 1.0 / n as f64 };
                    assert!(
                        special[3 * n..4 * n].iter().all(|&y| (y - huge).abs() <= 1e-6 * huge.abs()),
                        "{what}: row 3"
                    );
                }
                // In place: the output is the input's memory.
                let inplace = tensor(&v, rows, n, dtype);
                let at = address(&inplace);
                let steps = plan_softmax_rows(dtype, log, at, at, rows * n, n, max_blocks).unwrap();
                // SAFETY: as above, one storage read and written.
                unsafe { lib.run(&steps) }.unwrap_or_else(|e| panic!("{what} in place: {e}"));
                assert_close(&as_f64(&inplace), &want, dtype, &format!("{what} in place"));
                launches += 2;
            }
        }
    }
    println!("{launches} fused softmax-rows launches on the shim");
}

/// The planner refuses what the kernel cannot take, as values.
#[test]
fn the_softmax_rows_planner_refuses_bad_shapes_and_dtypes() {
    assert!(plan_softmax_rows(DType::F16, false, 0x100, 0x200, 8, 4, 8).is_err());
    assert!(plan_softmax_rows(DType::F32, false, 0x100, 0x200, 9, 4, 8).is_err());
    assert!(plan_softmax_rows(DType::F32, true, 0x100, 0x200, 8, 0, 8).is_err());
    assert!(plan_softmax_rows(DType::F64, true, 0x100, 0x200, 0, 4, 8).unwrap().is_empty());
    let steps = plan_softmax_rows(DType::F32, false, 0x100, 0x200, 1 << 20, 1 << 10, 64).unwrap();
    let Some(Step::Kernel(l)) = steps.first() else { panic!("no launch") };
    assert_eq!((l.grid, l.block), (64, (256, 1)));
}

/// NVRTC compiles the registered fused softmax rows (f32 and f64, softmax and log_softmax)
/// for `compute_80` and `sm_90`, warning- and spill-free, and every one is registered.
#[test]
fn fused_softmax_rows_compile_with_nvrtc() {
    use tensor_ops::__private::tensor_core::registry::KernelRow;
    use tensor_ops::__private::tensor_core::DeviceKind;
    use tensor_ops::__private::tensor_kernels_cuda::{check, nvrtc};
    if let Err(e) = nvrtc::nvrtc() {
        assert!(!ci(), "CI is set but NVRTC is missing: {e}");
        return println!("SKIPPED: {e}");
    }
    let rows = || {
        tensor_ops::__private::inventory::iter::<KernelRow>
            .into_iter()
            .filter(|r| r.device == DeviceKind::Cuda && r.kernel.kind() == "cuda-softmax-rows")
    };
    let mut names: Vec<String> = rows().map(|r| format!("{} {}", r.op.name, r.dtype)).collect();
    names.sort();
    assert_eq!(names, ["log_softmax_rows f32", "log_softmax_rows f64", "softmax_rows f32", "softmax_rows f64"]);
    let specs: Vec<KernelSpec<'static>> =
        check::specs_for(rows()).into_iter().filter(|s| matches!(s, KernelSpec::SoftmaxRows { .. })).collect();
    assert_eq!(specs.len(), 4);
    let reports = check::compile_specs(&specs).unwrap_or_else(|e| panic!("{e}"));
    for r in &reports {
        println!("{} {}: {} registers", r.name, r.arch, r.registers);
    }
    assert_eq!(reports.len(), 4 * check::CHECK_ARCHS.len());
}
