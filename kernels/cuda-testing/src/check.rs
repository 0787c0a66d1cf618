//! Compiles every generated kernel with NVRTC (no GPU needed) and reports each kernel's
//! registers: the CI check that generated CUDA C stays valid, warning-free and spill-free.

use std::sync::atomic::{AtomicUsize, Ordering};
use tensor_core::registry::KernelRow;
use tensor_core::{Error, Result};
use tensor_kernels_cuda::kernel::{CudaMapKernel, CudaReduceKernel};
use tensor_kernels_cuda::softmax_rows::CudaSoftmaxRows;

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
/// kernels; the fused softmax rows), plus every copy, cast, fill and transpose kernel, each once.
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
            specs.push(KernelSpec::SoftmaxRows { dtype: k.dtype, log: k.log });
        }
    }
    specs.extend(codegen::data_movement_kernels());
    // A finishing pass serves every input dtype of its reducer: keep one of each kernel.
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(s.clone()));
    specs
}

/// Compiles every kernel of [`specs_for`]`(rows)` for [`CHECK_ARCHS`]. Fails (listing every
/// problem) on any compile error, warning or register spill.
pub fn compile_all<'a>(rows: impl Iterator<Item = &'a KernelRow>) -> Result<Vec<KernelReport>> {
    compile_specs(&specs_for(rows))
}

/// Compiles `specs` for [`CHECK_ARCHS`]; same failure rules as [`compile_all`].
pub fn compile_specs(specs: &[KernelSpec<'_>]) -> Result<Vec<KernelReport>> {
    let generated: Vec<Generated> = specs.iter().map(codegen::generate).collect::<Result<_>>()?;
    let mut names: Vec<&str> = generated.iter().map(|g| g.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Cuda(format!("two different kernels are both named {}", w[0])));
    }
    let groups: Vec<&[Generated]> = generated.chunks(GROUP).collect();
    let sources: Vec<String> = groups.iter().map(|g| codegen::program(g)).collect();
    // One job per (group, arch), in the order the reports list them.
    let jobs: Vec<(usize, &str)> = (0..groups.len()).flat_map(|gi| CHECK_ARCHS.map(|a| (gi, a))).collect();
    let results = on_all_cores(&jobs, |&(gi, arch)| nvrtc::compile(&sources[gi], arch, &[]))?;
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    for (&(gi, arch), result) in jobs.iter().zip(results) {
        let group = groups[gi];
        let compiled = match result {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{arch}: {e}"));
                continue;
            }
        };
        let warnings = compiled.warnings();
        if !warnings.is_empty() {
            problems.push(format!("{arch}: NVRTC warnings:\n{}", warnings.join("\n")));
        }
        for g in group {
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
            reports.push(KernelReport {
                name: g.name.clone(),
                arch: arch.to_string(),
                registers: res.registers,
                spill_stores: res.spill_stores,
                spill_loads: res.spill_loads,
            });
        }
    }
    if problems.is_empty() {
        Ok(reports)
    } else {
        Err(Error::Cuda(format!("{} kernel check problem(s):\n{}", problems.len(), problems.join("\n"))))
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
