//! NVRTC: finding and loading the library, compiling CUDA C to a cubin (`sm_XX`) or PTX
//! (`compute_XX`), and reading per-kernel register and spill counts from the ptxas log.
//!
//! The library is looked for in `$TENSOR_OPS_NVRTC_DIR`, then in `<workspace>/.nvrtc`
//! (where `.ci/install-nvrtc.sh` puts the PyPI wheels), then wherever the system loader
//! finds it. It is loaded once by absolute path and kept loaded, so cudarc's own lookup by
//! name finds the same library. A missing NVRTC is an [`Error::Cuda`], never a panic.

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudarc::nvrtc::{result as nv, sys};
use tensor_core::{Error, Result};

use super::cache;
pub use super::compiled::{parse_ptxas_log, Compiled, KernelResources};

/// Where the wheels of `.ci/install-nvrtc.sh` put the library, below the install dir.
const WHEEL_LIB: &str = "nvidia/cu13/lib";

/// The loaded NVRTC library.
#[derive(Debug)]
pub struct Nvrtc {
    _lib: Option<libloading::Library>,
    /// The library file loaded by path (None: found by the system loader).
    pub path: Option<PathBuf>,
    /// `(major, minor)` version.
    pub version: (i32, i32),
    /// Include dirs for `cuda_fp16.h` / `cuda_bf16.h`.
    pub include_dirs: Vec<PathBuf>,
}

fn workspace_root() -> PathBuf {
    // kernels/cuda → the workspace root, two folders up.
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).map(Path::to_path_buf).unwrap_or_default()
}

/// Directories to look for the library in, best first.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("TENSOR_OPS_NVRTC_DIR") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(workspace_root().join(".nvrtc").join(WHEEL_LIB));
    if let Ok(cwd) = std::env::current_dir() {
        dirs.extend(cwd.ancestors().map(|a| a.join(".nvrtc").join(WHEEL_LIB)));
    }
    dirs
}

/// The NVRTC library file in `dir`, preferring the CUDA 13 soname.
fn library_in(dir: &Path) -> Option<PathBuf> {
    let exact = dir.join("libnvrtc.so.13");
    if exact.is_file() {
        return Some(exact);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libnvrtc.so")))
        .collect();
    found.sort();
    found.into_iter().next()
}

fn include_dirs_for(lib_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(extra) = std::env::var_os("TENSOR_OPS_CUDA_INCLUDE") {
        roots.extend(std::env::split_paths(&extra));
    }
    if let Some(lib) = lib_dir.and_then(Path::parent) {
        roots.push(lib.join("include"));
    }
    roots.push(PathBuf::from("/usr/local/cuda/include"));
    let mut dirs = Vec::new();
    for r in roots.into_iter().filter(|r| r.join("cuda_fp16.h").is_file()) {
        let cccl = r.join("cccl");
        dirs.push(r);
        if cccl.is_dir() {
            dirs.push(cccl);
        }
    }
    dirs
}

fn load() -> std::result::Result<Nvrtc, String> {
    let mut tried = Vec::new();
    let mut loaded = None;
    for dir in candidate_dirs() {
        if let Some(path) = library_in(&dir) {
            // SAFETY: loading NVRTC runs its initialisers, which have no preconditions; the
            // library is kept loaded for the life of the process (stored in a static).
            match unsafe { libloading::Library::new(&path) } {
                Ok(lib) => {
                    loaded = Some((lib, path));
                    break;
                }
                Err(e) => tried.push(format!("{} ({e})", path.display())),
            }
        } else {
            tried.push(format!("{} (no libnvrtc.so*)", dir.display()));
        }
    }
    // SAFETY: only probes dlopen by name; no NVRTC function is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(format!(
            "NVRTC is not installed: no libnvrtc found (looked in {} and the system library path); \
             run .ci/install-nvrtc.sh or set TENSOR_OPS_NVRTC_DIR to the directory holding libnvrtc.so",
            tried.join(", ")
        ));
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above), so cudarc's symbol lookup succeeds;
    // both pointers are valid for writes.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }.result().map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
    let (lib, path) = match loaded {
        Some((l, p)) => (Some(l), Some(p)),
        None => (None, None),
    };
    let include_dirs = include_dirs_for(path.as_deref().and_then(Path::parent));
    Ok(Nvrtc { _lib: lib, path, version: (major, minor), include_dirs })
}

/// Loads NVRTC once; later calls return the same library (or the same readable error).
pub fn nvrtc() -> Result<&'static Nvrtc> {
    static LIB: OnceLock<std::result::Result<Nvrtc, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| Error::Cuda(e.clone()))
}

/// True when NVRTC can be loaded.
pub fn is_available() -> bool {
    nvrtc().is_ok()
}

/// Compiles `source` for `arch` (`"sm_90"` gives a cubin with ptxas `-v` resources,
/// `"compute_80"` gives PTX) with extra NVRTC `opts`, through the memory and disk cache.
/// Compile errors come back as [`Error::Cuda`] holding the log.
pub fn compile(source: &str, arch: &str, opts: &[&str]) -> Result<Arc<Compiled>> {
    let lib = nvrtc()?;
    let version = format!("{}.{}", lib.version.0, lib.version.1);
    let joined = opts.join("\u{1}");
    let key = cache::key(&[source.as_bytes(), arch.as_bytes(), joined.as_bytes(), version.as_bytes()]);
    if let Some(hit) = cache::get(key, arch) {
        return Ok(hit);
    }
    let compiled = Arc::new(compile_uncached(lib, source, arch, opts)?);
    cache::put(key, compiled.clone());
    Ok(compiled)
}

fn compile_uncached(lib: &Nvrtc, source: &str, arch: &str, opts: &[&str]) -> Result<Compiled> {
    if !(arch.starts_with("sm_") || arch.starts_with("compute_")) {
        return Err(Error::Cuda(format!("unknown CUDA arch {arch:?}: use sm_XX (cubin) or compute_XX (PTX)")));
    }
    let cubin = arch.starts_with("sm_");
    let src = CString::new(source).map_err(|_| Error::Cuda("CUDA source contains a NUL byte".into()))?;
    let mut options = vec![format!("--gpu-architecture={arch}"), "-std=c++17".into(), "--fmad=false".into()];
    if cubin {
        options.push("--ptxas-options=-v".into());
    }
    options.extend(lib.include_dirs.iter().map(|d| format!("-I{}", d.display())));
    options.extend(opts.iter().map(|o| o.to_string()));
    if options.iter().any(|o| o.contains('\0')) {
        return Err(Error::Cuda("an NVRTC option contains a NUL byte".into()));
    }
    let prog = nv::create_program(&src, None).map_err(|e| Error::Cuda(format!("nvrtcCreateProgram: {e:?}")))?;
    // SAFETY: `prog` was just created and is destroyed exactly once below; `src` outlives it.
    let status = unsafe { nv::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { nv::get_program_log(prog) }.map(|l| c_chars_to_string(&l)).unwrap_or_default();
    let image = match status {
        // SAFETY: as above; compilation succeeded so the image exists.
        Ok(()) => unsafe {
            if cubin {
                get_cubin(prog)
            } else {
                get_ptx(prog)
            }
        },
        Err(e) => Err(Error::Cuda(format!("NVRTC failed to compile for {arch} ({e:?}):\n{log}"))),
    };
    // SAFETY: `prog` is live and not used afterwards.
    let _ = unsafe { nv::destroy_program(prog) };
    Ok(Compiled::from_parts(image?, arch, log))
}

fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// # Safety
/// `prog` is a live, successfully compiled program.
unsafe fn get_ptx(prog: sys::nvrtcProgram) -> Result<Vec<u8>> {
    // SAFETY: forwarded from the caller.
    let ptx = unsafe { nv::get_ptx(prog) }.map_err(|e| Error::Cuda(format!("nvrtcGetPTX: {e:?}")))?;
    Ok(ptx.into_iter().map(|c| c as u8).collect())
}

/// # Safety
/// `prog` is a live program successfully compiled for a real `sm_XX` arch.
unsafe fn get_cubin(prog: sys::nvrtcProgram) -> Result<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: forwarded from the caller; `size` is valid for writes.
    unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .map_err(|e| Error::Cuda(format!("nvrtcGetCUBINSize: {e:?}")))?;
    let mut image = vec![0u8; size];
    // SAFETY: `image` holds exactly the `size` bytes NVRTC reported.
    unsafe { sys::nvrtcGetCUBIN(prog, image.as_mut_ptr() as *mut c_char) }
        .result()
        .map_err(|e| Error::Cuda(format!("nvrtcGetCUBIN: {e:?}")))?;
    Ok(image)
}
