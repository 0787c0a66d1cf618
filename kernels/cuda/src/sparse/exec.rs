//! Where the sparse steps run: [`Exec`] is what they need of a device — run planned steps,
//! scratch memory, small transfers to read a count or an error flag back — so the same
//! orchestration runs on a CUDA device ([`DeviceExec`]) and, in tests, on the CPU shim over
//! host memory.

use std::any::Any;
use std::sync::Arc;

use tensor_core::{Device, Error, Result};

use crate::alloc::CudaAllocator;
use crate::args::SparseArgs;
use crate::codegen::KernelSpec;
use crate::launch;
use crate::plan::{Args, Launch, Step};
use crate::runtime::{self, CudaDevice};

use crate::sparse_codegen::{SparseKernel, THREADS};

/// A block of scratch memory of an [`Exec`]: its address, valid while this lives.
pub struct Scratch {
    /// The address (8-byte aligned).
    pub addr: u64,
    _keep: Box<dyn Any>,
}

impl Scratch {
    /// A block at `addr` owned by `keep` (dropped with it).
    pub fn new(addr: u64, keep: Box<dyn Any>) -> Scratch {
        Scratch { addr, _keep: keep }
    }

    /// The address of its `i`-th i64.
    pub fn at(&self, i: usize) -> u64 {
        self.addr + 8 * i as u64
    }
}

/// What the sparse steps need of the machine they run on.
pub trait Exec {
    /// Most blocks of a grid-strided launch.
    fn max_blocks(&self) -> u32;

    /// Runs `steps` in order (queued: later transfers wait for them).
    ///
    /// # Safety
    /// Every address in `steps` is memory of this executor valid for each access the step
    /// makes.
    unsafe fn run(&self, steps: &[Step]) -> Result<()>;

    /// Scratch memory of at least `bytes` bytes (at least 8), 8-byte aligned, usable by
    /// steps run before it is dropped.
    fn scratch(&self, bytes: usize) -> Result<Scratch>;

    /// Copies `src` to `dst`, after the work queued before.
    ///
    /// # Safety
    /// `dst` is memory of this executor valid for `src.len()` bytes.
    unsafe fn upload(&self, src: &[u8], dst: u64) -> Result<()>;

    /// Copies `dst.len()` bytes from `src`, after the work queued before (waits for it).
    ///
    /// # Safety
    /// `src` is memory of this executor valid for `dst.len()` bytes.
    unsafe fn download(&self, src: u64, dst: &mut [u8]) -> Result<()>;
}

/// A CUDA device as an [`Exec`]: its stream, its stream-ordered caching allocator (scratch
/// freed after queued work is only reused by later work on the same stream).
pub struct DeviceExec(pub Arc<CudaDevice>);

impl DeviceExec {
    /// The executor of a `Device::Cuda(n)` (an `Err` without a driver or that device).
    ///
    /// ```
    /// use tensor_kernels_cuda::sparse::DeviceExec;
    /// // On a machine without a GPU this is an error value, never a panic.
    /// if let Err(e) = DeviceExec::of(tensor_core::Device::Cuda(0)) {
    ///     assert!(e.to_string().starts_with("cuda:"));
    /// }
    /// assert!(DeviceExec::of(tensor_core::Device::Cpu).is_err());
    /// ```
    pub fn of(device: Device) -> Result<DeviceExec> {
        runtime::device_of(device).map(DeviceExec)
    }
}

impl Exec for DeviceExec {
    fn max_blocks(&self) -> u32 {
        self.0.max_blocks()
    }
    unsafe fn run(&self, steps: &[Step]) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { launch::run(&self.0, steps) }
    }
    fn scratch(&self, bytes: usize) -> Result<Scratch> {
        let block = CudaAllocator::allocate_on(self.0.ordinal, bytes.max(8))?;
        Ok(Scratch::new(block.as_ptr() as usize as u64, Box::new(block)))
    }
    unsafe fn upload(&self, src: &[u8], dst: u64) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.copy_from_host(src, dst) }
    }
    unsafe fn download(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.copy_to_host(src, dst) }
    }
}

/// A launch of `kernel` over `args`, with `grid` blocks of `block` threads.
pub(super) fn step(kernel: SparseKernel, grid: usize, block: u32, args: SparseArgs) -> Step {
    let grid = grid.clamp(1, i32::MAX as usize) as u32;
    Step::Kernel(Launch { spec: KernelSpec::Sparse(kernel), grid, block: (block, 1), args: Args::Sparse(args) })
}

/// A grid-strided launch of `kernel` covering `args.n` items (none for none).
pub(super) fn strided(e: &impl Exec, kernel: SparseKernel, args: SparseArgs) -> Vec<Step> {
    let count = args.n.max(0) as usize;
    strided_over(e, kernel, args, count)
}

/// A grid-strided launch of `kernel` covering `count` items (none for none).
pub(super) fn strided_over(e: &impl Exec, kernel: SparseKernel, args: SparseArgs, count: usize) -> Vec<Step> {
    if count == 0 {
        return Vec::new();
    }
    let grid = count.div_ceil(THREADS as usize).min(e.max_blocks().max(1) as usize);
    vec![step(kernel, grid, THREADS, args)]
}

/// `SparseArgs` with these pointers, count and params.
pub(super) fn args(ptrs: &[u64], n: usize, params: &[i64]) -> SparseArgs {
    let mut a = SparseArgs { n: n as i64, ..SparseArgs::default() };
    a.ptr[..ptrs.len()].copy_from_slice(ptrs);
    a.p[..params.len()].copy_from_slice(params);
    a
}

/// Scratch holding `values` (an error flag and sizes, typically).
pub(super) fn upload_i64s(e: &impl Exec, values: &[i64]) -> Result<Scratch> {
    let s = e.scratch(8 * values.len())?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    // SAFETY: `s` holds at least `8 * values.len()` bytes.
    unsafe { e.upload(&bytes, s.addr)? };
    Ok(s)
}

/// `n` i64s read back from `addr`.
///
/// # Safety
/// `addr` is memory of `e` holding `n` i64s once the queued work is done.
pub(super) unsafe fn download_i64s(e: &impl Exec, addr: u64, n: usize) -> Result<Vec<i64>> {
    let mut bytes = vec![0u8; 8 * n];
    // SAFETY: the caller's contract.
    unsafe { e.download(addr, &mut bytes)? };
    Ok(bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
}

/// Runs `steps`, then reads the error flag at `flag` (an i64 the kernels set to 1 on a bad
/// index): `Err(bad())` when it is set.
///
/// # Safety
/// As [`Exec::run`]; `flag` is an i64 of `e`'s memory.
pub(super) unsafe fn run_checked(e: &impl Exec, steps: &[Step], flag: u64, bad: impl FnOnce() -> Error) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { e.run(steps)? };
    if steps.is_empty() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    match unsafe { download_i64s(e, flag, 1)? }[..] {
        [0] => Ok(()),
        _ => Err(bad()),
    }
}
