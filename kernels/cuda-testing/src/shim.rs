//! Test harness (not a stable API): runs generated CUDA C on the CPU. The same kernel
//! source is compiled by the host C++ compiler under `kernels/cuda-testing/include/shim.h` into a shared
//! library (split over a few translation units compiled in parallel, cached on disk by a
//! hash of the source), each kernel with an `extern "C"` launcher that runs its grid.
//! [`ShimLib::run`] executes the plans of [`tensor_kernels_cuda::plan`] on host memory, so the CPU sees
//! exactly the launches a GPU would.
//!
//! Needs `g++` (or `$CXX`) and NVIDIA's `cuda_fp16.h`/`cuda_bf16.h` (they come with the
//! NVRTC wheels): without them [`build`] says so with [`ShimError::Unavailable`].

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::SHIM_HEADER;
use tensor_kernels_cuda::cache;
use tensor_kernels_cuda::codegen::{self, ArgsKind, Generated, KernelSpec};
use tensor_kernels_cuda::nvrtc;
use tensor_kernels_cuda::plan::Step;

/// Why the shim library could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShimError {
    /// A tool or header is missing on this machine: tests skip (unless under CI).
    Unavailable(String),
    /// The generated code did not build, or a file could not be written: a real failure.
    Failed(String),
}

impl std::fmt::Display for ShimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShimError::Unavailable(s) => write!(f, "the CUDA shim is unavailable: {s}"),
            ShimError::Failed(s) => write!(f, "the CUDA shim failed: {s}"),
        }
    }
}

/// A loaded shim library.
#[derive(Debug)]
pub struct ShimLib {
    lib: libloading::Library,
    /// The library file.
    pub path: PathBuf,
}

/// The `extern "C"` launcher of a generated kernel: `launch__NAME(grid, bx, by, &args)`.
pub fn launcher(g: &Generated) -> String {
    format!(
        "extern \"C\" void launch__{name}(unsigned gx, unsigned bx, unsigned by, const {args}* a) {{\n\
         \x20   tops_shim_launch(dim3(gx), dim3(bx, by), {threaded}, [&] {{ {name}(*a); }});\n}}\n",
        name = g.name,
        args = g.args.c_name(),
        threaded = g.shared_memory
    )
}

const SIZEOF: &str = "extern \"C\" unsigned long long tops_sizeof(int k) {\n\
    switch (k) { case 0: return sizeof(tops_contig_args); case 1: return sizeof(tops_strided_args32);\n\
    case 2: return sizeof(tops_strided_args64); case 3: return sizeof(tops_transpose_args);\n\
    case 4: return sizeof(tops_reduce_args); case 6: return sizeof(tops_sparse_args);\n\
    default: return sizeof(tops_fused_reduce_args); }\n}\n";

/// `-Og`: about 30% less compile time per kernel than `-O1` (CI builds a thousand of them),
/// and the tests' grids are small enough that the run time does not notice.
const FLAGS: [&str; 7] = ["-std=c++20", "-pthread", "-Og", "-fPIC", "-fno-strict-aliasing", "-ffp-contract=off", "-w"];

/// The host C++ compiler (`$CXX`, else `g++`), when it runs.
pub fn compiler() -> Result<String, ShimError> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(cxx),
        _ => Err(ShimError::Unavailable(format!("no host C++ compiler ({cxx}) to run the shim"))),
    }
}

/// Builds (or finds in `dir`'s cache) the shim library holding every kernel of `specs`
/// (duplicates are fine) and loads it.
pub fn build(specs: &[KernelSpec<'_>], dir: &Path) -> Result<ShimLib, ShimError> {
    let cxx = compiler()?;
    let lib = nvrtc::nvrtc().map_err(|e| ShimError::Unavailable(format!("the CUDA headers come with NVRTC: {e}")))?;
    if lib.include_dirs.is_empty() {
        return Err(ShimError::Unavailable("cuda_fp16.h / cuda_bf16.h not found next to NVRTC".into()));
    }
    let mut generated: Vec<Generated> = specs
        .iter()
        .map(codegen::generate)
        .collect::<tensor_core::Result<_>>()
        .map_err(|e| ShimError::Failed(e.to_string()))?;
    generated.sort_by(|a, b| a.name.cmp(&b.name));
    generated.dedup_by(|a, b| a.name == b.name);
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    let per = generated.len().div_ceil(jobs).max(1);
    let mut units: Vec<String> = generated
        .chunks(per)
        .map(|chunk| {
            let mut src = String::from(SHIM_HEADER);
            src.push_str(&codegen::program(chunk));
            chunk.iter().for_each(|g| src.push_str(&launcher(g)));
            src
        })
        .collect();
    if units.is_empty() {
        units.push(format!("{SHIM_HEADER}{}", codegen::program(&[])));
    }
    units[0].push_str(SIZEOF);
    let key = cache::key(
        &units.iter().map(|u| u.as_bytes()).chain([cxx.as_bytes(), FLAGS.join(" ").as_bytes()]).collect::<Vec<_>>(),
    );
    let so = dir.join(format!("shim-{key:016x}.so"));
    if !so.is_file() {
        compile_units(&cxx, &lib.include_dirs, &units, dir, key, &so)?;
    }
    // SAFETY: the library was built from our own generated source; its initialisers only
    // set up C++ statics.
    let loaded = unsafe { libloading::Library::new(&so) }
        .map_err(|e| ShimError::Failed(format!("loading {}: {e}", so.display())))?;
    Ok(ShimLib { lib: loaded, path: so })
}

fn compile_units(
    cxx: &str,
    includes: &[PathBuf],
    units: &[String],
    dir: &Path,
    key: u64,
    so: &Path,
) -> Result<(), ShimError> {
    let fail = |what: String| ShimError::Failed(what);
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    let tag = format!("{key:016x}-{}", cache::unique_suffix());
    let mut children = Vec::new();
    let mut objects = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let cpp = dir.join(format!("shim-{tag}-{i}.cpp"));
        let obj = cpp.with_extension("o");
        std::fs::write(&cpp, unit).map_err(|e| fail(format!("writing {}: {e}", cpp.display())))?;
        let mut cmd = Command::new(cxx);
        cmd.args(FLAGS)
            .args(includes.iter().map(|d| format!("-I{}", d.display())))
            .arg("-c")
            .arg(&cpp)
            .arg("-o")
            .arg(&obj);
        let child =
            cmd.stderr(std::process::Stdio::piped()).spawn().map_err(|e| fail(format!("running {cxx}: {e}")))?;
        children.push((cpp, child));
        objects.push(obj);
    }
    let mut errors = Vec::new();
    for (cpp, child) in children {
        let out = child.wait_with_output().map_err(|e| fail(format!("waiting for {cxx}: {e}")))?;
        if !out.status.success() {
            errors.push(format!("{}:\n{}", cpp.display(), String::from_utf8_lossy(&out.stderr)));
        }
    }
    if !errors.is_empty() {
        return Err(fail(format!(
            "generated code does not build with {cxx} (a bug in codegen):\n{}",
            errors.join("\n")
        )));
    }
    let tmp = dir.join(format!("shim-{tag}.so.tmp"));
    let out = Command::new(cxx)
        .args(["-shared", "-pthread", "-o"])
        .arg(&tmp)
        .args(&objects)
        .output()
        .map_err(|e| fail(format!("linking with {cxx}: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!("linking the shim failed:\n{}", String::from_utf8_lossy(&out.stderr))));
    }
    std::fs::rename(&tmp, so).map_err(|e| fail(format!("renaming {}: {e}", tmp.display())))?;
    for obj in &objects {
        let _ = std::fs::remove_file(obj);
        let _ = std::fs::remove_file(obj.with_extension("cpp"));
    }
    Ok(())
}

impl ShimLib {
    /// Runs kernel `name` over a `grid` of `block` threads with argument block `args`.
    ///
    /// # Safety
    /// `args` points at the argument struct the kernel takes, and every pointer in it
    /// addresses host memory valid for each access the kernel makes.
    pub unsafe fn launch(&self, name: &str, grid: u32, block: (u32, u32), args: *const c_void) -> Result<(), String> {
        type Launch = unsafe extern "C" fn(u32, u32, u32, *const c_void);
        let sym = format!("launch__{name}");
        // SAFETY: every launcher has this signature (see `launcher`).
        let f =
            unsafe { self.lib.get::<Launch>(sym.as_bytes()) }.map_err(|e| format!("{name} is not in the shim: {e}"))?;
        // SAFETY: the caller's contract.
        unsafe { f(grid, block.0, block.1, args) };
        Ok(())
    }

    /// Runs a plan of [`tensor_kernels_cuda::plan`] whose addresses are host memory.
    ///
    /// # Safety
    /// Every address in `steps` is host memory valid for each access the step makes.
    pub unsafe fn run(&self, steps: &[Step]) -> Result<(), String> {
        for step in steps {
            match step {
                Step::Kernel(l) => {
                    let name = codegen::generate(&l.spec).map_err(|e| e.to_string())?.name;
                    // SAFETY: the caller's contract; the planner pairs specs with their args.
                    unsafe { self.launch(&name, l.grid, l.block, l.args.as_ptr())? }
                }
                // SAFETY: the caller's contract (both ranges valid for `bytes`).
                Step::Memcpy { dst, src, bytes } => unsafe {
                    std::ptr::copy(*src as usize as *const u8, *dst as usize as *mut u8, *bytes)
                },
            }
        }
        Ok(())
    }

    /// `sizeof` of an argument struct as the C++ compiler lays it out.
    pub fn c_sizeof(&self, kind: ArgsKind) -> Result<usize, String> {
        type SizeOf = unsafe extern "C" fn(i32) -> u64;
        // SAFETY: tops_sizeof has exactly this signature (see SIZEOF).
        let f = unsafe { self.lib.get::<SizeOf>(b"tops_sizeof") }.map_err(|e| e.to_string())?;
        let k = match kind {
            ArgsKind::Contig => 0,
            ArgsKind::Strided32 => 1,
            ArgsKind::Strided64 => 2,
            ArgsKind::Transpose => 3,
            ArgsKind::Reduce => 4,
            ArgsKind::FusedReduce => 5,
            ArgsKind::Sparse => 6,
        };
        // SAFETY: a pure function.
        Ok(unsafe { f(k) } as usize)
    }
}
