//! Compiles every generated CUDA kernel template (each layout class x dtype combination,
//! around sample device functions written as `#[tensor_op]` emits them, plus the copy,
//! cast, fill and transpose kernels: every cast pair, and every layout with every source
//! and destination dtype, as `coverage` samples them; all of them with
//! `TOPS_KERNEL_CHECK=all`) with NVRTC for compute_80 (PTX) and sm_90 (cubin).
//! Fails on any error, warning or register spill. Needs NVRTC, not a GPU: without NVRTC it
//! is reported as ignored
//! (`tops_cuda_checks_unavailable`, set by the build script) with the fix; where it runs, a
//! missing NVRTC fails it (CI installs NVRTC).

use tensor_cuda_testing::check::{compile_specs, KernelReport};
use tensor_cuda_testing::coverage::{self, Coverage};
use tensor_cuda_testing::samples;
use tensor_kernels_cuda::codegen::{self, KernelSpec, MapLayout};
use tensor_kernels_cuda::nvrtc;

/// Prints which NVRTC runs; a missing one fails the test with the fix.
fn require_nvrtc() {
    match nvrtc::nvrtc() {
        Ok(lib) => {
            println!("NVRTC {}.{} from {:?}, includes {:?}", lib.version.0, lib.version.1, lib.path, lib.include_dirs)
        }
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    }
}

fn print_summary(reports: &[KernelReport]) {
    let cubins: Vec<&KernelReport> = reports.iter().filter(|r| r.arch.starts_with("sm_")).collect();
    for r in &cubins {
        println!("{:>3} registers  {}  {}", r.registers, r.arch, r.name);
    }
    let max = cubins.iter().max_by_key(|r| r.registers);
    println!(
        "{} kernels x {} archs compiled; max registers {:?}",
        cubins.len(),
        reports.len() / cubins.len().max(1),
        max.map(|r| (r.registers, &r.name))
    );
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn every_map_template_compiles_without_warnings_or_spills() {
    require_nvrtc();
    let fns = samples::sample_functions();
    let mut specs: Vec<KernelSpec<'_>> = Vec::new();
    for f in &fns {
        specs.extend(codegen::map_kernels_for(f.func(), f.dtype, f.arity));
    }
    // Mixed storage: f16 and i32 inputs into an f32 add, output stored as bf16; and a
    // comparison of bf16 inputs stored into u8.
    let add_f32 = fns.iter().find(|f| f.name == "tensor_op_add_f32").expect("sample add_f32");
    let lt_bf16 = fns.iter().find(|f| f.name == "tensor_op_lt_bf16").expect("sample lt_bf16");
    for layout in MapLayout::ALL {
        use tensor_core::DType::*;
        specs.push(KernelSpec::Map { func: add_f32.func(), inputs: vec![F16, I32], out: BF16, layout, quant: 0 });
        specs.push(KernelSpec::Map { func: lt_bf16.func(), inputs: vec![BF16, BF16], out: U8, layout, quant: 0 });
    }
    let checked = coverage::select(&specs, Coverage::from_env());
    assert!(coverage::uncovered(&specs, &checked).is_empty());
    let reports = compile_specs(&checked).unwrap_or_else(|e| panic!("{e}"));
    print_summary(&reports);
    assert_eq!(reports.len(), checked.len() * 2);
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn every_copy_cast_fill_and_transpose_kernel_compiles() {
    require_nvrtc();
    let specs = codegen::data_movement_kernels();
    let checked = coverage::select(&specs, Coverage::from_env());
    assert!(coverage::uncovered(&specs, &checked).is_empty());
    let reports = compile_specs(&checked).unwrap_or_else(|e| panic!("{e}"));
    print_summary(&reports);
    assert_eq!(reports.len(), checked.len() * 2);
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn compile_errors_are_values_with_the_log() {
    require_nvrtc();
    let err = nvrtc::compile("extern \"C\" __global__ void k() { undeclared(); }", "sm_90", &[]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("undeclared"), "{msg}");
}
