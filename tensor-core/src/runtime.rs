//! Hooks a device runtime (the CUDA one lives in `tensor-kernels`) installs into the core,
//! so that core operations (`to_vec`, `to_device`) can move bytes without the core
//! depending on the runtime crate.

use crate::{Device, Error, Result};
use std::sync::{Arc, RwLock};

/// Byte transfers between host and a device, and between two device buffers.
pub trait DeviceRuntime: Send + Sync {
    /// Copies `dst.len()` bytes from device address `src` on `device` to the host.
    ///
    /// # Safety
    /// `src` must be valid for `dst.len()` bytes on `device` and locked by the caller.
    unsafe fn copy_to_host(&self, device: Device, src: *const u8, dst: &mut [u8]) -> Result<()>;
    /// Copies host bytes to device address `dst` on `device`.
    ///
    /// # Safety
    /// `dst` must be valid for `src.len()` bytes on `device` and locked by the caller.
    unsafe fn copy_from_host(&self, device: Device, src: &[u8], dst: *mut u8) -> Result<()>;
    /// Waits for all queued work on `device`.
    fn synchronize(&self, device: Device) -> Result<()>;
}

static CUDA_RUNTIME: RwLock<Option<Arc<dyn DeviceRuntime>>> = RwLock::new(None);

/// Installs the runtime for CUDA devices.
pub fn set_cuda_runtime(rt: Arc<dyn DeviceRuntime>) {
    *CUDA_RUNTIME.write().unwrap_or_else(|e| e.into_inner()) = Some(rt);
}

/// The runtime for `device` (an error for the CPU or when none is installed).
pub fn runtime_for(device: Device) -> Result<Arc<dyn DeviceRuntime>> {
    match device {
        Device::Cpu => Err(Error::invalid("runtime_for", "the CPU needs no device runtime")),
        Device::Cuda(_) => CUDA_RUNTIME
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| Error::Cuda(format!("no CUDA runtime is installed for {device}"))),
    }
}
