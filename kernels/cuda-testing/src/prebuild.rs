//! Prebuilt kernels for a process running under the CUDA stand-in ([`crate::standin`]).
//!
//! The backend compiles each kernel as its own program at the kernel's first launch; under
//! the stand-in that is one host-compiler run per kernel (about 0.3 s of CPU each, most of
//! it the run's fixed cost), and a test binary that launches every op's kernels starts
//! thousands of them. [`prebuild`] builds many kernels per compiler run instead and tells
//! the stand-in's NVRTC, for each kernel, the exact program text the backend will hand it:
//! that compile then loads the prebuilt library. The kernels' code, their argument blocks
//! and the stand-in's checks are unchanged; only the number of compiler runs drops.

use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::shim::ShimError;
use crate::standin;
use tensor_kernels_cuda::codegen::{self, Generated, KernelSpec};
use tensor_kernels_cuda::nvrtc;
use tensor_kernels_cuda::reduce_codegen::ReducePass;

/// Kernels per prebuilt program: large enough that a compiler run's fixed cost is small
/// beside its kernels, small enough that two cores stay busy to the end.
const GROUP: usize = 64;

/// `tops_standin_prebuild` of the stand-in's `libnvrtc.so.13` (`standin/nvrtc.cpp`).
type PrebuildFn = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *const *const c_char,
    c_int,
    *const *const c_char,
    *mut c_char,
    u64,
) -> c_int;

/// Builds the kernels of `specs` in programs of many kernels, a compiler run per program
/// on every core, and has the stand-in remember each kernel's own program as built by one
/// of them. Kernels built before (by an earlier run) cost only a cache lookup. Returns how
/// many kernels were prebuilt.
///
/// Only in a process running under the stand-in ([`standin::active`]); elsewhere an
/// [`ShimError::Unavailable`].
///
/// ```no_run
/// use tensor_cuda_testing::{check, prebuild};
/// use tensor_core::registry::KernelRow;
/// # fn rows() -> Vec<&'static KernelRow> { Vec::new() }
/// let specs = check::specs_for(rows().into_iter());
/// let n = prebuild::prebuild(&specs).expect("the stand-in builds every kernel");
/// println!("{n} kernels prebuilt");
/// ```
pub fn prebuild(specs: &[KernelSpec<'_>]) -> Result<usize, ShimError> {
    let dir = standin::active().ok_or_else(|| ShimError::Unavailable("not running under the CUDA stand-in".into()))?;
    let failed = |e: String| ShimError::Failed(format!("prebuilding kernels under the stand-in: {e}"));
    let generated: Vec<Generated> =
        specs.iter().map(codegen::generate).collect::<tensor_core::Result<_>>().map_err(|e| failed(e.to_string()))?;
    let real = nvrtc::nvrtc().map_err(|e| failed(e.to_string()))?;
    // What the backend passes NVRTC (the stand-in keys prebuilt programs by their include
    // directories; the architecture is the stand-in device's).
    let mut options = vec!["--gpu-architecture=sm_90".to_string(), "-std=c++17".into(), "--fmad=false".into()];
    options.extend(real.include_dirs.iter().map(|d| format!("-I{}", d.display())));
    let options: Vec<CString> =
        options.into_iter().map(CString::new).collect::<Result<_, _>>().map_err(|e| failed(e.to_string()))?;
    // SAFETY: under the stand-in its `libnvrtc.so.13` is the one this process loaded (by
    // name from the same directory): loading it again runs no initialiser twice.
    let lib = unsafe { libloading::Library::new(dir.join("libnvrtc.so.13")) }.map_err(|e| failed(e.to_string()))?;
    // SAFETY: a symbol lookup; `PrebuildFn` is the signature `standin/nvrtc.cpp` exports.
    let build = unsafe { lib.get::<PrebuildFn>(b"tops_standin_prebuild") }.map_err(|e| failed(e.to_string()))?;
    let groups: Vec<&[Generated]> = generated.chunks(GROUP).collect();
    let next = AtomicUsize::new(0);
    let problems = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, groups.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(group) = groups.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(e) = build_group(*build, group, &options) {
                        problems.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                    }
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap_or_else(|e| e.into_inner());
    if problems.is_empty() {
        Ok(generated.len())
    } else {
        Err(failed(problems.join("\n")))
    }
}

/// The kernels `specs` leave out that a run of them launches too: a small-extent
/// reduction ([`ReducePass::Small`]) runs at every power-of-two bound up to the largest,
/// which alone is in [`crate::check::specs_for`] (its check covers the template).
///
/// ```
/// use tensor_cuda_testing::prebuild::small_extent_variants;
/// assert!(small_extent_variants(&[]).is_empty());
/// ```
pub fn small_extent_variants<'a>(specs: &[KernelSpec<'a>]) -> Vec<KernelSpec<'a>> {
    let mut more = Vec::new();
    for spec in specs {
        if let KernelSpec::Reduce { reducer, input, pass: ReducePass::Small { extent } } = *spec {
            let smaller = [2u8, 4, 8].into_iter().filter(|&e| e < extent);
            more.extend(smaller.map(|e| KernelSpec::Reduce { reducer, input, pass: ReducePass::Small { extent: e } }));
        }
    }
    more
}

/// One prebuilt program: `group`'s kernels together, each remembered by its own program.
fn build_group(build: PrebuildFn, group: &[Generated], options: &[CString]) -> Result<(), String> {
    let options: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let cstring = |s: String| CString::new(s).map_err(|_| "a generated program contains a NUL byte".to_string());
    let program = cstring(codegen::program(group))?;
    let singles: Vec<CString> = group.iter().map(|g| cstring(g.program())).collect::<Result<_, _>>()?;
    let single_ptrs: Vec<*const c_char> = singles.iter().map(|s| s.as_ptr()).collect();
    let mut log = vec![0u8; 1 << 16];
    // SAFETY: every pointer is a live NUL-terminated string for the call (`program`,
    // `options`, `singles`), the counts are those of the arrays, and `log` is writable for
    // the length passed.
    let status = unsafe {
        build(
            program.as_ptr(),
            options.len() as c_int,
            options.as_ptr(),
            single_ptrs.len() as c_int,
            single_ptrs.as_ptr(),
            log.as_mut_ptr().cast(),
            log.len() as u64,
        )
    };
    if status == 0 {
        return Ok(());
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let first = group.first().map_or("", |g| g.name.as_str());
    Err(format!("the group starting with {first} (NVRTC status {status}): {}", String::from_utf8_lossy(&log[..end])))
}
