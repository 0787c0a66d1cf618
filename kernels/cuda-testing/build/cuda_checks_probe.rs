// The build-script probe shared by the crates whose tests compile CUDA C with NVRTC or run
// it on the CPU shim or the driver stand-in (`include!`d by their build.rs): when this
// machine cannot run those tests, it sets `cfg(tops_cuda_checks_unavailable)`, and each
// such test is `#[cfg_attr(tops_cuda_checks_unavailable, ignore = "...")]` — reported as
// ignored with the one-line fix, never as a pass that did nothing. Under `CI` the cfg is
// never set: a missing NVRTC there fails the tests.
//
// What the tests need, looked for as `tensor_kernels_cuda::nvrtc` and `tensor_cuda_testing::shim` look:
// libnvrtc in `$TENSOR_OPS_NVRTC_DIR`, `<workspace>/.nvrtc/nvidia/cu13/lib` (where
// `.ci/install-nvrtc.sh` puts it) or `/usr/local/cuda/lib64`; `cuda_fp16.h` beside it
// (or in `$TENSOR_OPS_CUDA_INCLUDE`); and a host C++ compiler (`$CXX`, else `g++`).

use std::path::{Path, PathBuf};

/// Why the CUDA checks cannot run here, if they cannot.
fn cuda_checks_missing(workspace: &Path) -> Option<String> {
    let has_nvrtc = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so"))
        })
    };
    let mut libs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("TENSOR_OPS_NVRTC_DIR") {
        libs.push(PathBuf::from(d));
    }
    libs.push(workspace.join(".nvrtc/nvidia/cu13/lib"));
    libs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let Some(lib) = libs.iter().find(|d| has_nvrtc(d)) else {
        return Some("NVRTC is not installed".into());
    };
    let mut includes: Vec<PathBuf> =
        std::env::var_os("TENSOR_OPS_CUDA_INCLUDE").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    includes.extend(lib.parent().map(|p| p.join("include")));
    includes.push(PathBuf::from("/usr/local/cuda/include"));
    if !includes.iter().any(|d| d.join("cuda_fp16.h").is_file()) {
        return Some(format!("the CUDA headers (cuda_fp16.h) are not beside NVRTC in {}", lib.display()));
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let runs = std::process::Command::new(&cxx).arg("--version").output().is_ok_and(|o| o.status.success());
    if !runs {
        return Some(format!("no host C++ compiler ({cxx})"));
    }
    None
}

/// Emits the cfg and what should rerun the probe. `workspace`: the workspace root.
fn probe_cuda_checks(workspace: &Path) {
    println!("cargo::rustc-check-cfg=cfg(tops_cuda_checks_unavailable)");
    for var in ["TENSOR_OPS_NVRTC_DIR", "TENSOR_OPS_CUDA_INCLUDE", "CXX", "CI"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    // `.ci/install-nvrtc.sh` touches itself after an install, so the probe reruns then
    // (a path that does not exist yet would rerun it on every build).
    println!("cargo::rerun-if-changed={}", workspace.join(".ci/install-nvrtc.sh").display());
    let stamp = workspace.join(".nvrtc/.installed");
    if stamp.is_file() {
        println!("cargo::rerun-if-changed={}", stamp.display());
    }
    if std::env::var_os("CI").is_some() {
        return; // CI runs every check: a missing NVRTC fails there
    }
    if let Some(why) = cuda_checks_missing(workspace) {
        println!("cargo::rustc-cfg=tops_cuda_checks_unavailable");
        println!("cargo::warning=CUDA checks will be reported as ignored: {why} (run .ci/install-nvrtc.sh)");
    }
}
