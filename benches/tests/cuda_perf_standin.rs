//! `cuda-perf` end to end on the CPU-backed stand-in of the CUDA driver and NVRTC: the
//! binary opens the device, compiles and launches every case's kernels, times them with
//! events, and prints its table — saying that the figures mean nothing there and that the
//! gate is not applied. (On a GPU machine the same binary measures the GPU for real; this
//! test always uses the stand-in, which goes first on the library search path.)

use std::path::PathBuf;

use tensor_cuda_testing::standin;

/// The stand-in (built in the target dir, shared with `tests/tests/cuda_device.rs`); one
/// that cannot be built here fails the test with the fix.
fn standin() -> standin::Standin {
    match standin::build(&tensor_kernels_cuda::cache::target_dir()) {
        Ok(s) => s,
        Err(e) => panic!("the CUDA stand-in cannot be built here ({e}): run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)"),
    }
}

/// Runs `cuda-perf` under the stand-in, results into `out` below the test temp dir, with
/// `fail` as `TOPS_STANDIN_FAIL` when given.
fn cuda_perf(s: &standin::Standin, out: &str, fail: Option<&str>) -> std::process::Output {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(out);
    let mut cmd = s.command(env!("CARGO_BIN_EXE_cuda-perf"));
    cmd.args(["--out", &out_dir.display().to_string()]);
    if let Some(f) = fail {
        cmd.env("TOPS_STANDIN_FAIL", f);
    }
    cmd.output().expect("running cuda-perf")
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn cuda_perf_runs_end_to_end_on_the_standin() {
    let s = standin();
    let out = cuda_perf(&s, "cuda-perf-standin", None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}\n{stderr}");
    assert!(out.status.success(), "cuda-perf failed: {}", out.status);
    assert!(stdout.contains("figures") && stdout.contains("gate is not applied"), "no stand-in note");
    for key in [
        "memcpy_d2d",
        "add_out/f32",
        "transpose/f16",
        "sum_last",
        "sum_first",
        "fused_relu_mul_add",
        "fused_sq_diff_sum",
        "silu",
        "spmv/f32",
        "spmm/f32",
        "add_out/u8",
        "cast_f16/f32",
        "add_row/f32",
    ] {
        assert!(stdout.contains(key), "the table has no {key} row");
    }
    assert!(stdout.contains("stand-in run complete"), "the run did not finish");
}

/// The stand-in's fault injection from the environment (`TOPS_STANDIN_FAIL`): the third
/// kernel launch fails with the driver's error code, and `cuda-perf` reports it as an error
/// (exit 2, the driver's error named) instead of panicking.
#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn an_injected_launch_failure_is_an_error_in_cuda_perf() {
    let s = standin();
    let out = cuda_perf(&s, "cuda-perf-standin-fault", Some("launch:3"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(2), "cuda-perf should exit 2 on a driver error: {stderr}");
    assert!(stderr.contains("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), "the driver's error is not named: {stderr}");
    assert!(!stderr.contains("panicked"), "cuda-perf panicked: {stderr}");
}
