//! The seam between `cuda-perf` and the CUDA runtime.
//!
//! Everything GPU-specific the runner needs is here: the device name and L2 size, an L2
//! flush, CUDA-event timing and a reference device-to-device memcpy, all on **the stream
//! tensor-ops launches its kernels on**, so that events bracket exactly the timed work.
//!
//! Two small hooks tie it to the tensor-kernels-cuda runtime (`tensor_kernels_cuda::runtime`):
//! `init_runtime` (driver/device/NVRTC probe, errors as values, so no GPU means `cuda-perf`
//! exits 0 saying why) and `tensor_ops_stream` (the device's one stream, wrapped for cudarc).

use crate::error::{BenchError, BenchResult};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use std::sync::Arc;
use tensor_kernels_cuda::runtime;

fn cuda_err(what: &str, e: impl std::fmt::Debug) -> BenchError {
    BenchError::Cuda(format!("{what}: {e:?}"))
}

/// HOOK 1: initialise the tensor-kernels-cuda runtime (driver probe, NVRTC) and open
/// device `ordinal` there. Errors are values: no driver, no device, no NVRTC.
fn init_runtime(ordinal: u32) -> BenchResult<Arc<runtime::CudaDevice>> {
    runtime::init()?;
    Ok(runtime::device(ordinal)?)
}

/// HOOK 2: the stream tensor-ops enqueues `Device::Cuda(ordinal)` work on, wrapped for
/// cudarc in `ctx` (the device's primary context, which the runtime also uses).
fn tensor_ops_stream(ctx: &Arc<CudaContext>, device: &runtime::CudaDevice) -> Arc<CudaStream> {
    // SAFETY: the runtime's stream belongs to the primary context of this ordinal, which
    // `ctx` also wraps (`CudaContext::new` retains the primary context), and the runtime keeps
    // each device, and so its stream, alive for the life of the process. Work we enqueue on
    // it is ordered with tensor-ops' work by the stream itself.
    unsafe { ctx.wrap_borrowed_stream(device.cu_stream()) }
}

/// An opened GPU: context, the tensor-ops stream, and a scratch buffer for L2 flushes.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    l2_bytes: u64,
    scratch: CudaSlice<u8>,
}

impl Gpu {
    /// Opens device `ordinal`. Fails (as a value) when there is no driver, no device, or the
    /// runtime hooks are not available.
    pub fn open(ordinal: u32) -> BenchResult<Gpu> {
        // The runtime probes the driver first: cudarc panics on calls without one.
        let device = init_runtime(ordinal)?;
        let ctx = CudaContext::new(ordinal as usize).map_err(|e| cuda_err("no CUDA device", e))?;
        let name = ctx.name().map_err(|e| cuda_err("device name", e))?;
        let l2 =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map_err(|e| cuda_err("L2 size", e))?;
        let stream = tensor_ops_stream(&ctx, &device);
        let l2_bytes = u64::try_from(l2).unwrap_or(0).max(1 << 20);
        // Writing 2× the L2 evicts whatever the previous call left there.
        let scratch = stream.alloc_zeros::<u8>(2 * l2_bytes as usize).map_err(|e| cuda_err("alloc", e))?;
        Ok(Gpu { ctx, stream, name, l2_bytes, scratch })
    }

    /// The device name (the baseline key, sanitised).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The L2 cache size in bytes.
    pub fn l2_bytes(&self) -> u64 {
        self.l2_bytes
    }

    /// Enqueues an L2 flush (a memset of twice the L2 size) on the stream.
    pub fn flush_l2(&mut self) -> BenchResult<()> {
        self.stream.memset_zeros(&mut self.scratch).map_err(|e| cuda_err("flush", e))
    }

    /// Times one call of `f` (which enqueues work on the tensor-ops stream) with CUDA events,
    /// after an L2 flush; returns seconds. The flush is queued before the start event, so the
    /// GPU is still busy with it while `f` is being launched and launch latency is hidden.
    pub fn time(&mut self, f: &mut dyn FnMut() -> BenchResult<()>) -> BenchResult<f64> {
        self.flush_l2()?;
        let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timing).map_err(|e| cuda_err("event", e))?;
        f()?;
        let end = self.stream.record_event(timing).map_err(|e| cuda_err("event", e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| cuda_err("elapsed", e))?;
        Ok(f64::from(ms) / 1e3)
    }

    /// Two device buffers of `bytes` bytes for the reference memcpy.
    pub fn memcpy_buffers(&self, bytes: u64) -> BenchResult<(CudaSlice<u8>, CudaSlice<u8>)> {
        let a = self.stream.alloc_zeros::<u8>(bytes as usize).map_err(|e| cuda_err("alloc", e))?;
        let b = self.stream.alloc_zeros::<u8>(bytes as usize).map_err(|e| cuda_err("alloc", e))?;
        Ok((a, b))
    }

    /// Times a device-to-device memcpy of the first `bytes` bytes of `src` into `dst`.
    pub fn time_memcpy(&mut self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>, bytes: u64) -> BenchResult<f64> {
        let stream = self.stream.clone();
        let n = bytes as usize;
        self.time(&mut || {
            let s = src.slice(..n);
            let mut d = dst.slice_mut(..n);
            stream.memcpy_dtod(&s, &mut d).map_err(|e| cuda_err("memcpy", e))
        })
    }

    /// Waits for all work on the device.
    pub fn synchronize(&self) -> BenchResult<()> {
        self.ctx.synchronize().map_err(|e| cuda_err("synchronize", e))
    }
}
