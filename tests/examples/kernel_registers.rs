//! Registers and spills of the generated CUDA kernels whose names contain a filter, as
//! ptxas reports them for `sm_90` (NVRTC only: no GPU needed). The tool for tuning a kernel
//! template without a GPU: how many registers a thread holds decides how many threads an
//! SM keeps resident, and so how many loads are in flight.
//!
//! ```sh
//! .ci/install-nvrtc.sh   # once
//! cargo run -p tensor-tests --example kernel_registers -- argmax columns
//! ```
//! Every word must occur in the kernel's name; no words lists every kernel. `--ptx` prints
//! the matching kernels' PTX for `compute_90` instead; `--cubin DIR` writes their `sm_90`
//! cubins into `DIR` (one `NAME.cubin` each), for `nvdisasm` (PyPI `nvidia-cuda-nvdisasm`)
//! to show the SASS the GPU would run.

use tensor_core::registry::KernelRow;
use tensor_core::DeviceKind;
use tensor_cuda_testing::check;
use tensor_kernels_cuda::codegen;

fn main() {
    // (links the ops crate, whose rows the inventory holds)
    let _ = tensor_ops::prelude::DType::F32;
    let mut words: Vec<String> = std::env::args().skip(1).collect();
    let ptx = words.iter().any(|w| w == "--ptx");
    words.retain(|w| w != "--ptx");
    let cubin_dir = words.iter().position(|w| w == "--cubin").map(|i| {
        let dir = words.get(i + 1).cloned().unwrap_or_else(|| ".".into());
        words.drain(i..(i + 2).min(words.len()));
        std::path::PathBuf::from(dir)
    });
    let rows = inventory::iter::<KernelRow>.into_iter().filter(|r| r.device == DeviceKind::Cuda);
    let (specs, generated): (Vec<_>, Vec<_>) = check::specs_for(rows)
        .into_iter()
        .filter_map(|s| codegen::generate(&s).ok().map(|g| (s, g)))
        .filter(|(_, g)| words.iter().all(|w| g.name.contains(w.as_str())))
        .unzip();
    println!("{} kernels match {words:?}", specs.len());
    if let Some(dir) = cubin_dir {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            println!("{}: {e}", dir.display());
            return;
        }
        for g in generated {
            let name = g.name.clone();
            match tensor_kernels_cuda::nvrtc::compile(&codegen::program(&[g]), "sm_90", &[]) {
                Ok(c) => match std::fs::write(dir.join(format!("{name}.cubin")), &c.image) {
                    Ok(()) => println!("{}", dir.join(format!("{name}.cubin")).display()),
                    Err(e) => println!("{name}: {e}"),
                },
                Err(e) => println!("{e}"),
            }
        }
        return;
    }
    if ptx {
        for g in generated {
            match tensor_kernels_cuda::nvrtc::compile(&codegen::program(&[g]), "compute_90", &[]) {
                Ok(c) => println!("{}", String::from_utf8_lossy(&c.image)),
                Err(e) => println!("{e}"),
            }
        }
        return;
    }
    match check::compile_specs(&specs) {
        Ok(reports) => {
            for r in reports.iter().filter(|r| r.arch.starts_with("sm_")) {
                println!("{:>4} regs  {:>4} spill  {}", r.registers, r.spill_stores + r.spill_loads, r.name);
            }
        }
        Err(e) => println!("{e}"),
    }
}
