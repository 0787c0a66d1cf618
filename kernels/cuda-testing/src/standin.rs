//! Test harness (not a stable API): the CPU-backed stand-in for the CUDA driver and NVRTC
//! (`kernels/cuda-testing/standin/`), so every `Device::Cuda` path — context and stream setup, the
//! caching allocator, transfers, the module cache, argument marshalling, launches, errors —
//! runs on machines without a GPU.
//!
//! [`build`] compiles it (host C++ compiler) into a directory holding `libcuda.so` and
//! `libnvrtc.so.13`; [`Standin::command`] runs a program with that directory first on the
//! library search path (`LD_LIBRARY_PATH`) and as `TENSOR_OPS_NVRTC_DIR`, so cudarc and
//! [`tensor_kernels_cuda::nvrtc`] load the stand-in by name exactly as they load the real libraries: the
//! backend has no branch for it. [`Control`] reaches its test controls (fault injection,
//! the checks that fired, live allocations) from inside such a process.
//!
//! What it checks that a CPU would not notice, and its fault injection, are described in
//! `kernels/cuda-testing/standin/driver.cpp`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::shim::{self, ShimError};
use crate::SHIM_HEADER;
use tensor_kernels_cuda::cache;
use tensor_kernels_cuda::codegen::PRELUDE;
use tensor_kernels_cuda::nvrtc;

/// The variable that marks a process running under the stand-in (its directory).
pub const ACTIVE_VAR: &str = "TOPS_STANDIN_DIR";

/// Flags kernels are built with (those of the shim, `-Og` for compile time), and the
/// precompiled header with them.
const KERNEL_FLAGS: &str = "-std=c++20 -pthread -Og -fPIC -fno-strict-aliasing -ffp-contract=off -w";

const SOURCES: [(&str, &str); 5] = [
    ("standin.h", include_str!("../standin/standin.h")),
    ("kernel.h", include_str!("../standin/kernel.h")),
    ("kernel_prelude.h", include_str!("../standin/kernel_prelude.h")),
    ("driver.cpp", include_str!("../standin/driver.cpp")),
    ("nvrtc.cpp", include_str!("../standin/nvrtc.cpp")),
];

/// A built stand-in.
#[derive(Debug, Clone)]
pub struct Standin {
    /// The directory holding `libcuda.so`, `libnvrtc.so.13` and the built kernels.
    pub dir: PathBuf,
}

/// The stand-in directory of the running process, when it runs under one.
pub fn active() -> Option<PathBuf> {
    std::env::var_os(ACTIVE_VAR).map(PathBuf::from)
}

/// True when a CUDA driver other than the stand-in can be loaded by name (in a process not
/// running under the stand-in: there, it finds the stand-in).
pub fn real_driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda by its usual names; no driver function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Builds the stand-in below `root` (or finds it built there) for this machine's C++
/// compiler and the CUDA headers that come with NVRTC.
pub fn build(root: &Path) -> Result<Standin, ShimError> {
    let cxx = shim::compiler()?;
    let real = nvrtc::nvrtc().map_err(|e| ShimError::Unavailable(format!("the CUDA headers come with NVRTC: {e}")))?;
    if real.include_dirs.is_empty() {
        return Err(ShimError::Unavailable("cuda_fp16.h / cuda_bf16.h not found next to NVRTC".into()));
    }
    let includes: Vec<String> = real.include_dirs.iter().map(|d| d.display().to_string()).collect();
    let mut parts: Vec<&[u8]> = SOURCES.iter().map(|(_, s)| s.as_bytes()).collect();
    parts.extend([SHIM_HEADER.as_bytes(), PRELUDE.as_bytes(), cxx.as_bytes(), KERNEL_FLAGS.as_bytes()]);
    parts.extend(includes.iter().map(|s| s.as_bytes()));
    let key = cache::key(&parts);
    let dir = root.join(format!("cuda-standin-{key:016x}"));
    // One build at a time in this process (threads of one test binary share its temp name);
    // other processes build under their own pid and the first rename wins.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    if dir.join("libcuda.so").is_file() && dir.join("libnvrtc.so.13").is_file() {
        return Ok(Standin { dir });
    }
    let fail = |what: String| ShimError::Failed(what);
    let tmp = root.join(format!("cuda-standin-{key:016x}.tmp{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("kernels")).map_err(|e| fail(format!("creating {}: {e}", tmp.display())))?;
    for (name, text) in SOURCES.iter().copied().chain([("shim.h", SHIM_HEADER), ("prelude.cuh", PRELUDE)]) {
        std::fs::write(tmp.join(name), text).map_err(|e| fail(format!("writing {name}: {e}")))?;
    }
    let quoted = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut search = vec![dir.display().to_string()];
    search.extend(includes.iter().cloned());
    let compile = |args: Vec<String>| -> Result<(), ShimError> {
        let out = Command::new(&cxx).args(&args).output().map_err(|e| fail(format!("running {cxx}: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(fail(format!(
                "building the CUDA stand-in failed ({cxx} {}):\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    };
    let lib = |soname: &str, source: &str, defines: Vec<String>| -> Vec<String> {
        let mut a: Vec<String> = ["-std=c++20", "-O1", "-fPIC", "-shared", "-pthread"].map(String::from).to_vec();
        a.extend(defines);
        a.push(format!("-Wl,-soname,{soname}"));
        a.extend(["-o".into(), tmp.join(soname).display().to_string(), tmp.join(source).display().to_string()]);
        a.push("-ldl".into());
        a
    };
    compile(lib("libcuda.so", "driver.cpp", Vec::new()))?;
    compile(lib(
        "libnvrtc.so.13",
        "nvrtc.cpp",
        vec![
            format!("-DTOPS_STANDIN_CXX={}", quoted(&cxx)),
            format!("-DTOPS_STANDIN_INCLUDE={}", quoted(&search.join(":"))),
            format!("-DTOPS_STANDIN_CACHE={}", quoted(&dir.join("kernels").display().to_string())),
            format!("-DTOPS_STANDIN_PRELUDE={}", quoted(&dir.join("prelude.cuh").display().to_string())),
            format!("-DTOPS_STANDIN_FLAGS={}", quoted(KERNEL_FLAGS)),
        ],
    ))?;
    // The shim, CUDA and prelude headers every kernel starts with, parsed once.
    for header in ["kernel.h", "kernel_prelude.h"] {
        let mut pch: Vec<String> = KERNEL_FLAGS.split(' ').map(String::from).collect();
        pch.push(format!("-I{}", tmp.display()));
        pch.extend(includes.iter().map(|d| format!("-I{d}")));
        pch.extend(["-x", "c++-header"].map(String::from));
        let gch = tmp.join(format!("{header}.gch"));
        pch.extend([tmp.join(header).display().to_string(), "-o".into(), gch.display().to_string()]);
        compile(pch)?;
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {}
        Err(_) if dir.join("libnvrtc.so.13").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp); // another process built it first
        }
        Err(e) => return Err(fail(format!("renaming {} to {}: {e}", tmp.display(), dir.display()))),
    }
    Ok(Standin { dir })
}

impl Standin {
    /// The environment that makes a process load the stand-in: its directory first on the
    /// library search path and as NVRTC's directory, its own compile cache, the marker.
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        let mut path = self.dir.clone().into_os_string();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|o| !o.is_empty()) {
            path.push(":");
            path.push(old);
        }
        vec![
            ("LD_LIBRARY_PATH".into(), path),
            ("TENSOR_OPS_NVRTC_DIR".into(), self.dir.clone().into_os_string()),
            ("TENSOR_OPS_CACHE_DIR".into(), self.dir.join("nvrtc-cache").into_os_string()),
            (ACTIVE_VAR.into(), self.dir.clone().into_os_string()),
        ]
    }

    /// `program` set up to run under the stand-in.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.envs(self.environment());
        c
    }
}

/// A kind of call the stand-in can be told to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `cuMemAlloc`/`cuMemAllocAsync` (fails with `CUDA_ERROR_OUT_OF_MEMORY`).
    Alloc = 0,
    /// `cuLaunchKernel` (`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`).
    Launch = 1,
    /// The memcpy/memset family (`CUDA_ERROR_INVALID_VALUE`).
    Copy = 2,
}

/// The stand-in's test controls, in a process running under it.
#[derive(Debug)]
pub struct Control {
    lib: libloading::Library,
}

impl Control {
    /// The controls of the loaded stand-in; `None` when this process does not run under one.
    pub fn get() -> Option<Control> {
        active()?;
        // SAFETY: under the stand-in, `libcuda.so` on the search path is the stand-in, whose
        // initialisers only set up C++ statics; loading it again returns the same library.
        let lib = unsafe { libloading::Library::new("libcuda.so") }.ok()?;
        // SAFETY: a symbol lookup only; the real driver has no such symbol.
        unsafe { lib.get::<unsafe extern "C" fn()>(b"tops_standin_live") }.ok()?;
        Some(Control { lib })
    }

    /// Makes the `nth` next call of `kind` (1 = the very next) and the `count - 1` after it
    /// fail; `nth` 0 turns injection of `kind` off.
    pub fn inject(&self, kind: Fault, nth: u64, count: u64) {
        type F = unsafe extern "C" fn(i32, i64, i64);
        // SAFETY: the stand-in exports this exact signature (driver.cpp).
        if let Ok(f) = unsafe { self.lib.get::<F>(b"tops_standin_inject") } {
            // SAFETY: plain integer arguments.
            unsafe { f(kind as i32, nth.min(i64::MAX as u64) as i64, count.min(i64::MAX as u64) as i64) }
        }
    }

    /// Labels the messages of the checks that fire from now on as expected (the running test
    /// provokes them on purpose), until called with `false`.
    pub fn expect_checks(&self, on: bool) {
        type F = unsafe extern "C" fn(i32);
        // SAFETY: the stand-in exports this exact signature (driver.cpp).
        if let Ok(f) = unsafe { self.lib.get::<F>(b"tops_standin_expect_checks") } {
            // SAFETY: a plain integer argument.
            unsafe { f(i32::from(on)) }
        }
    }

    /// The checks that fired since the last call (and clears them).
    pub fn take_violations(&self) -> Vec<String> {
        type F = unsafe extern "C" fn(*mut u8, usize) -> i32;
        // SAFETY: the stand-in exports this exact signature (driver.cpp).
        let Ok(f) = (unsafe { self.lib.get::<F>(b"tops_standin_take_violations") }) else {
            return vec!["the stand-in has no tops_standin_take_violations".into()];
        };
        let mut buf = vec![0u8; 1 << 16];
        // SAFETY: `buf` is writable for its length, which is passed.
        let n = unsafe { f(buf.as_mut_ptr(), buf.len()) };
        if n == 0 {
            return Vec::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).lines().map(String::from).collect()
    }

    /// While `on`, the stand-in's streams start no queued work (turning it off resumes them).
    pub fn hold_streams(&self, on: bool) {
        type F = unsafe extern "C" fn(i32);
        // SAFETY: the stand-in exports this exact signature (driver.cpp).
        if let Ok(f) = unsafe { self.lib.get::<F>(b"tops_standin_hold") } {
            // SAFETY: a plain integer argument.
            unsafe { f(on as i32) }
        }
    }

    /// `cuMemFree` of `ptr` right now, bypassing the caching allocator: the driver's
    /// error code on refusal.
    ///
    /// # Safety
    /// When the driver accepts it, `ptr` is freed: nothing may use it afterwards.
    pub unsafe fn free_now(&self, ptr: u64) -> Result<(), i32> {
        type F = unsafe extern "C" fn(u64) -> i32;
        // SAFETY: the driver API's signature of cuMemFree_v2.
        let f = unsafe { self.lib.get::<F>(b"cuMemFree_v2") }.map_err(|_| -1)?;
        // SAFETY: the caller's contract.
        match unsafe { f(ptr) } {
            0 => Ok(()),
            e => Err(e),
        }
    }

    /// Live device allocations of the stand-in: (count, bytes).
    pub fn live(&self) -> (u64, u64) {
        type F = unsafe extern "C" fn(*mut u64, *mut u64);
        let (mut n, mut b) = (0u64, 0u64);
        // SAFETY: the stand-in exports this exact signature; both pointers are valid.
        if let Ok(f) = unsafe { self.lib.get::<F>(b"tops_standin_live") } {
            unsafe { f(&mut n, &mut b) }
        }
        (n, b)
    }
}
