//! The fused CUDA softmax rows without a GPU: the CPU shim runs the launch that
//! `plan_softmax_rows` makes (a block per row: the row's maximum and Σ e^(x − max) through
//! warp shuffles and a shared-memory step, then the output) on host memory, and the results
//! are compared with the CPU's softmax / log_softmax: f16, bf16, f32 and f64, rows shorter than a warp
//! and longer than a block, more rows than blocks (the grid-stride loop), rows holding NaN,
//! +∞, −∞ only, and huge values, into poisoned outputs and in place. NVRTC compiles the same
//! kernels with every registered row in `cuda_kernels.rs`; `cuda_device.rs` runs them on
//! `Device::Cuda` (a GPU, or the CPU-backed stand-in of the driver).

mod common;
mod shim;

use common::poison;
use shim::{nvrtc_available, planned, run_all, with_raw, Planned};
use tensor_kernels_cuda::codegen::{KernelSpec, SoftmaxForm};
use tensor_kernels_cuda::plan::Step;
use tensor_kernels_cuda::softmax_rows::plan_softmax_rows;
use tensor_ops::prelude::*;

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

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The relative difference allowed between the CPU's and the kernel's results: f16/bf16
/// are computed in f32 on both sides and rounded once, so they may differ by one step of
/// their own precision.
fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        DType::F32 => 1e-6,
        _ => 1e-13,
    }
}

fn assert_close(got: &[f64], want: &[f64], dtype: DType, what: &str) {
    let tol = tolerance(dtype);
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1e-3);
        assert!(ok, "{what}: element {k}: {g} vs the CPU's {w}");
    }
}

/// The launch of the fused rows from `x` into `out` (`in_place`: `out` is `x`), planned on
/// their host addresses.
fn plan_rows(what: String, x: &Tensor, out: Tensor, in_place: bool, log: bool, max_blocks: u32) -> Planned {
    let (rows, n) = (x.shape()[0], x.shape()[1]);
    let inputs = if in_place { vec![] } else { vec![x.clone()] };
    let steps = with_raw(&out, &inputs, |o, i| {
        let from = i.first().unwrap_or(o).ptr as usize as u64;
        plan_softmax_rows(x.dtype(), log, o.ptr as usize as u64, from, rows * n, n, max_blocks)
    })
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let Some(Step::Kernel(l)) = steps.first() else { panic!("{what}: no launch") };
    assert!(l.grid as usize <= rows.min(max_blocks as usize) && l.block.0 % 32 == 0, "{what}: {l:?}");
    planned(what, steps, out, vec![x.clone()])
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn shim_runs_the_fused_softmax_rows_like_the_cpu() {
    // (rows, row length, most blocks): one element; under a warp (several rows a block);
    // many short rows (many groups a block, grid-strided);
    // over a warp; a length that is not a multiple of 16 bytes (scalar loads); long rows;
    // more rows than blocks; the longest register form for f32 (1024 lanes of 8 vectors);
    // rows longer than registers hold (the streaming form, every dtype).
    let shapes = [
        (1, 1, 8),
        (5, 7, 8),
        (6, 33, 2),
        (4, 256, 8),
        (4, 257, 3),
        // many short rows: several a block, grid-strided, the last step part-full
        (300, 128, 3),
        (1001, 32, 2),
        (77, 64, 5),
        (5, 1000, 2),
        (2, 5000, 8),
        (4, 32768, 2),
        (4, 33000, 3),
    ];
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        for log in [false, true] {
            for &(rows, n, max_blocks) in &shapes {
                let what = format!(
                    "{} {dtype} [{rows}, {n}] in at most {max_blocks} blocks",
                    if log { "log_softmax" } else { "softmax" }
                );
                let v = values(rows, n);
                let x = tensor(&v, rows, n, dtype);
                let want = as_f64(&if log { x.log_softmax(1) } else { x.softmax(1) }.unwrap());
                let got = Tensor::empty(&[rows, n], dtype, Device::Cpu).unwrap();
                poison(&got);
                calls.push(plan_rows(what.clone(), &x, got, false, log, max_blocks));
                // In place: the output is the input's memory.
                let inplace = tensor(&v, rows, n, dtype);
                calls.push(plan_rows(format!("{what} in place"), &inplace, inplace.clone(), true, log, max_blocks));
                wants.extend([(want.clone(), dtype, log, rows, n), (want, dtype, log, rows, n)]);
            }
        }
    }
    run_all(&calls);
    for (c, (want, dtype, log, rows, n)) in calls.iter().zip(wants) {
        let got = as_f64(&c.out);
        assert_close(&got, &want, dtype, &c.what);
        if rows >= 4 && n >= 2 {
            for r in 0..3 {
                assert!(got[r * n..(r + 1) * n].iter().all(|y| y.is_nan()), "{}: row {r} is all NaN", c.what);
            }
            let huge = if log { -(n as f64).ln() } else { 1.0 / n as f64 };
            let row3 = &got[3 * n..4 * n];
            let tol = tolerance(dtype).max(1e-6);
            assert!(row3.iter().all(|&y| (y - huge).abs() <= tol * huge.abs()), "{}: row 3", c.what);
        }
    }
    println!("{} fused softmax-rows launches on the shim", calls.len());
}

/// The planner refuses what the kernel cannot take, as values.
#[test]
fn the_softmax_rows_planner_refuses_bad_shapes_and_dtypes() {
    assert!(plan_softmax_rows(DType::I32, false, 0x100, 0x200, 8, 4, 8).is_err());
    assert!(plan_softmax_rows(DType::Bool, true, 0x100, 0x200, 8, 4, 8).is_err());
    assert!(plan_softmax_rows(DType::F32, false, 0x100, 0x200, 9, 4, 8).is_err());
    assert!(plan_softmax_rows(DType::F32, true, 0x100, 0x200, 8, 0, 8).is_err());
    assert!(plan_softmax_rows(DType::F64, true, 0x100, 0x200, 0, 4, 8).unwrap().is_empty());
    // rows longer than the fused kernels take are the reduction's
    assert!(plan_softmax_rows(DType::F32, true, 0x100, 0x200, 1 << 17, 1 << 17, 8).is_err());
    // rows of 1024 f32: a warp a row, 4 rows a 128-thread block, capped at 64 blocks
    let steps = plan_softmax_rows(DType::F32, false, 0x100, 0x200, 1 << 20, 1 << 10, 64).unwrap();
    let Some(Step::Kernel(l)) = steps.first() else { panic!("no launch") };
    assert_eq!((l.grid, l.block), (64, (128, 1)));
    // a misaligned input: one element a load
    let steps = plan_softmax_rows(DType::F32, false, 0x100, 0x204, 1 << 20, 1 << 10, 64).unwrap();
    let Some(Step::Kernel(l)) = steps.first() else { panic!("no launch") };
    assert!(matches!(
        l.spec,
        KernelSpec::SoftmaxRows { form: SoftmaxForm::Registers { vec: 1, nv: 32, lanes: 32 }, .. }
    ));
    // 64 Ki columns: a block of 512 a row, streaming
    let steps = plan_softmax_rows(DType::F32, false, 0x100, 0x200, 1 << 20, 1 << 16, 64).unwrap();
    let Some(Step::Kernel(l)) = steps.first() else { panic!("no launch") };
    assert_eq!((l.grid, l.block), (16, (512, 1)));
    assert!(matches!(l.spec, KernelSpec::SoftmaxRows { form: SoftmaxForm::Streaming { vec: 4 }, .. }));
}

/// NVRTC compiles the registered fused softmax rows (f16, bf16, f32 and f64, softmax and
/// log_softmax; in registers at their widest and one element a load, for short rows, and
/// streamed) for `compute_80` and `sm_90`, warning- and spill-free, and every one is
/// registered.
#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_softmax_rows_compile_with_nvrtc() {
    use tensor_core::registry::KernelRow;
    use tensor_core::DeviceKind;
    use tensor_cuda_testing::check;
    nvrtc_available();
    let rows = || {
        inventory::iter::<KernelRow>
            .into_iter()
            .filter(|r| r.device == DeviceKind::Cuda && r.kernel.kind() == "cuda-softmax-rows")
    };
    let mut names: Vec<String> = rows().map(|r| format!("{} {}", r.op.name, r.dtype)).collect();
    names.sort();
    let want: Vec<String> = ["log_softmax_rows", "softmax_rows"]
        .iter()
        .flat_map(|op| ["bf16", "f16", "f32", "f64"].map(|d| format!("{op} {d}")))
        .collect();
    assert_eq!(names, want);
    let specs: Vec<KernelSpec<'static>> =
        check::specs_for(rows()).into_iter().filter(|s| matches!(s, KernelSpec::SoftmaxRows { .. })).collect();
    assert_eq!(specs.len(), 8 * 5);
    let reports = check::compile_specs(&specs).unwrap_or_else(|e| panic!("{e}"));
    for r in &reports {
        println!("{} {}: {} registers", r.name, r.arch, r.registers);
    }
    assert_eq!(reports.len(), 8 * 5 * check::CHECK_ARCHS.len());
}
