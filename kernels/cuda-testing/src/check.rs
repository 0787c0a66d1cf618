//! Compiles generated kernels with NVRTC (no GPU needed) and reports each kernel's
//! registers: the CI check that generated CUDA C stays valid, warning-free and spill-free.
//! [`compile_all`] compiles the registered rows' kernels as [`coverage`] selects them (a
//! covering sample unless `TOPS_KERNEL_CHECK=all`); [`compile_specs`] compiles exactly the
//! kernels it is given.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use tensor_core::registry::sparse::ComponentKernel;
use tensor_core::registry::KernelRow;
use tensor_core::{DeviceKind, Error, Result};
use tensor_kernels_cuda::kernel::{CudaMapKernel, CudaReduceKernel};
use tensor_kernels_cuda::softmax_rows::CudaSoftmaxRows;

use crate::coverage::{self, Coverage};
use tensor_kernels_cuda::cache;
use tensor_kernels_cuda::codegen::{self, DeviceFn, Generated, KernelSpec};
use tensor_kernels_cuda::nvrtc;
use tensor_kernels_cuda::reduce_codegen::ReduceFn;

/// The targets every kernel is checked for: PTX for Ampere, a cubin for Hopper.
pub const CHECK_ARCHS: [&str; 2] = ["compute_80", "sm_90"];
/// Kernels per NVRTC program (one program per group keeps the check fast).
const GROUP: usize = 48;

/// What compiling one kernel for one arch gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelReport {
    /// Kernel name.
    pub name: String,
    /// Target arch.
    pub arch: String,
    /// Registers per thread (0 for PTX targets, where ptxas does not run).
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
}

/// Every kernel spec for the CUDA rows among `rows` (maps: each layout class, with inputs
/// and output stored as the row's dtype; reductions: their row, column and finishing
/// kernels; the fused softmax rows; the sparse layouts' steps), plus every copy, cast, fill and transpose kernel, each once.
pub fn specs_for<'a>(rows: impl Iterator<Item = &'a KernelRow>) -> Vec<KernelSpec<'static>> {
    let mut specs = Vec::new();
    for row in rows {
        if let Some(k) = row.kernel.as_any().downcast_ref::<CudaMapKernel>() {
            let func = DeviceFn::from_kernel(k, row.op.params.len());
            specs.extend(codegen::map_kernels_for(func, row.dtype, row.op.arity));
        }
        if let Some(k) = row.kernel.as_any().downcast_ref::<CudaReduceKernel>() {
            specs.extend(codegen::reduce_kernels_for(ReduceFn::from_kernel(k), row.dtype));
        }
        if let Some(k) = row.kernel.as_any().downcast_ref::<CudaSoftmaxRows>() {
            let forms = tensor_kernels_cuda::softmax_rows::forms_to_check(k.dtype);
            specs.extend(forms.into_iter().map(|form| KernelSpec::SoftmaxRows { dtype: k.dtype, log: k.log, form }));
        }
        if row.device == DeviceKind::Cuda && row.kernel.as_any().is::<ComponentKernel>() {
            // The sparse layouts' steps: one set of kernels serves every row.
            specs.extend(tensor_kernels_cuda::sparse::kernels::all());
        }
    }
    specs.extend(codegen::data_movement_kernels());
    // A finishing pass serves every input dtype of its reducer: keep one of each kernel.
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(s.clone()));
    specs
}

/// The kernels of [`specs_for`]`(rows)` the check compiles: every one under
/// `TOPS_KERNEL_CHECK=all`, else the covering sample of [`coverage`] (every body and every
/// template × dtype combination at least once).
pub fn checked_specs_for<'a>(rows: impl Iterator<Item = &'a KernelRow>) -> Vec<KernelSpec<'static>> {
    coverage::select(&specs_for(rows), Coverage::from_env())
}

/// Compiles the kernels of [`checked_specs_for`]`(rows)` for [`CHECK_ARCHS`]. Fails
/// (listing every problem) on any compile error, warning or register spill.
pub fn compile_all<'a>(rows: impl Iterator<Item = &'a KernelRow>) -> Result<Vec<KernelReport>> {
    compile_specs(&checked_specs_for(rows))
}

/// Compiles `specs` for [`CHECK_ARCHS`]; same failure rules as [`compile_all`].
///
/// A kernel that passed (compiled for an arch without warnings or spills) is remembered in
/// the compile cache's directory by a hash of its own program, the arch and the NVRTC
/// version ([`verdict`]), so the test binaries of one run compile each kernel once: the copy,
/// cast, fill and transpose kernels, for one, are in the check of three binaries. A kernel
/// with a problem is never remembered, so it fails every time.
pub fn compile_specs(specs: &[KernelSpec<'_>]) -> Result<Vec<KernelReport>> {
    let generated: Vec<Generated> = specs.iter().map(codegen::generate).collect::<Result<_>>()?;
    let mut names: Vec<&str> = generated.iter().map(|g| g.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Cuda(format!("two different kernels are both named {}", w[0])));
    }
    if generated.is_empty() {
        return Ok(Vec::new());
    }
    let version = nvrtc::nvrtc()?.version;
    let verdicts: Vec<Vec<PathBuf>> =
        generated.iter().map(|g| CHECK_ARCHS.iter().map(|a| verdict(g, a, version)).collect()).collect();
    // (kernel index, arch index, report): from remembered verdicts, then from NVRTC.
    let mut reports: Vec<(usize, usize, KernelReport)> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    for (i, g) in generated.iter().enumerate() {
        let known: Option<Vec<KernelReport>> =
            CHECK_ARCHS.iter().zip(&verdicts[i]).map(|(a, path)| read_verdict(path, &g.name, a)).collect();
        match known {
            Some(known) => reports.extend(known.into_iter().enumerate().map(|(ai, r)| (i, ai, r))),
            None => pending.push(i),
        }
    }
    let groups: Vec<&[usize]> = pending.chunks(GROUP).collect();
    let sources: Vec<String> =
        groups.iter().map(|g| codegen::program(&g.iter().map(|&i| generated[i].clone()).collect::<Vec<_>>())).collect();
    // One job per (group, arch), in the order the reports list them.
    let jobs: Vec<(usize, usize)> =
        (0..groups.len()).flat_map(|gi| (0..CHECK_ARCHS.len()).map(move |ai| (gi, ai))).collect();
    let results = on_all_cores(&jobs, |&(gi, ai)| nvrtc::compile(&sources[gi], CHECK_ARCHS[ai], &[]))?;
    let mut problems = Vec::new();
    for (&(gi, ai), result) in jobs.iter().zip(results) {
        let arch = CHECK_ARCHS[ai];
        let compiled = match result {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{arch}: {e}"));
                continue;
            }
        };
        let before = problems.len();
        let warnings = compiled.warnings();
        if !warnings.is_empty() {
            problems.push(format!("{arch}: NVRTC warnings:\n{}", warnings.join("\n")));
        }
        let mut passed = Vec::new();
        for &i in groups[gi] {
            let g = &generated[i];
            let res = compiled.kernels.iter().find(|k| k.name == g.name);
            if compiled.is_cubin && res.is_none() {
                problems.push(format!("{arch}: ptxas reported nothing for {}", g.name));
            }
            let res = res.cloned().unwrap_or_default();
            if res.spill_stores > 0 || res.spill_loads > 0 {
                problems.push(format!(
                    "{arch}: {} spills registers ({} bytes stored, {} loaded)",
                    g.name, res.spill_stores, res.spill_loads
                ));
            }
            let report = KernelReport {
                name: g.name.clone(),
                arch: arch.to_string(),
                registers: res.registers,
                spill_stores: res.spill_stores,
                spill_loads: res.spill_loads,
            };
            passed.push((i, report.clone()));
            reports.push((i, ai, report));
        }
        if problems.len() == before {
            passed.iter().for_each(|(i, r)| write_verdict(&verdicts[*i][ai], r));
        }
    }
    if problems.is_empty() {
        reports.sort_by_key(|&(i, ai, _)| (i, ai));
        Ok(reports.into_iter().map(|(_, _, r)| r).collect())
    } else {
        Err(Error::Cuda(format!("{} kernel check problem(s):\n{}", problems.len(), problems.join("\n"))))
    }
}

/// Where the check remembers that `g` passed for `arch` with NVRTC `version`: a file named
/// by a hash of the kernel's own program (prelude, argument structs, its device functions,
/// the kernel), the arch and the version, in the compile cache's directory.
pub fn verdict(g: &Generated, arch: &str, version: (i32, i32)) -> PathBuf {
    let version = format!("{}.{}", version.0, version.1);
    let key = cache::key(&[b"kernel check", g.program().as_bytes(), arch.as_bytes(), version.as_bytes()]);
    cache::dir().join(format!("check-{key:016x}"))
}

/// The report a remembered verdict holds (`registers spill_stores spill_loads`), if any.
fn read_verdict(path: &Path, name: &str, arch: &str) -> Option<KernelReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let n: Vec<u32> = text.split_whitespace().map(str::parse).collect::<std::result::Result<_, _>>().ok()?;
    match n[..] {
        [registers, spill_stores, spill_loads] => {
            Some(KernelReport { name: name.to_string(), arch: arch.to_string(), registers, spill_stores, spill_loads })
        }
        _ => None,
    }
}

/// Remembers a passed kernel (best effort, atomically: a temporary file renamed).
fn write_verdict(path: &Path, r: &KernelReport) {
    let tmp = path.with_extension(format!("{}.tmp", cache::unique_suffix()));
    let text = format!("{} {} {}\n", r.registers, r.spill_stores, r.spill_loads);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::write(&tmp, text))
        .and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// `f` of every job, in the jobs' order, computed by one thread per core. NVRTC is
/// CPU-bound and compiles separate programs from several threads at once; on one thread the
/// check of every kernel took minutes while the other of CI's two cores sat idle (measured:
/// `docs/performance-log.md`, “From the code comments”).
fn on_all_cores<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, jobs.len().max(1));
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break mine };
                        mine.push((i, f(job)));
                    }
                })
            })
            .collect();
        let mut all = Vec::with_capacity(jobs.len());
        for w in workers {
            match w.join() {
                Ok(mine) => all.extend(mine),
                Err(_) => return Err(Error::Cuda("a kernel check thread panicked".into())),
            }
        }
        Ok(all)
    })?;
    done.sort_unstable_by_key(|&(i, _)| i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}
