//! Sets `cfg(tops_cuda_checks_unavailable)` where the CUDA checks among this crate's tests
//! (NVRTC compiles, the CPU shim, the driver stand-in) cannot run, so that they are reported
//! as ignored with the fix rather than passing without doing anything.

include!("../kernels/cuda-testing/build/cuda_checks_probe.rs");

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    probe_cuda_checks(&Path::new(&manifest).join(".."));
}
