//! The [`DeviceRuntime`] core uses for host↔device transfers (`to_vec`, `to_device`,
//! `copy_` across devices) and synchronisation. Transfers go on the device's stream (after
//! every kernel queued before them) and wait for completion, since the host side is only
//! borrowed.

use std::sync::Arc;

use tensor_core::{Device, DeviceRuntime, Result};

use super::runtime;

/// Host↔device transfers on each device's stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaRuntime;

impl DeviceRuntime for CudaRuntime {
    unsafe fn copy_to_host(&self, device: Device, src: *const u8, dst: &mut [u8]) -> Result<()> {
        let dev = runtime::device_of(device)?;
        // SAFETY: forwarded from the caller (`src` valid for `dst.len()` bytes on `device`).
        unsafe { dev.copy_to_host(src as usize as u64, dst) }
    }

    unsafe fn copy_from_host(&self, device: Device, src: &[u8], dst: *mut u8) -> Result<()> {
        let dev = runtime::device_of(device)?;
        // SAFETY: forwarded from the caller (`dst` valid for `src.len()` bytes on `device`).
        unsafe { dev.copy_from_host(src, dst as usize as u64) }
    }

    fn synchronize(&self, device: Device) -> Result<()> {
        runtime::device_of(device)?.synchronize()
    }
}

/// The `RuntimeFactory::make` of the CUDA runtime: needs a driver and a device.
pub fn make_runtime() -> Result<Arc<dyn DeviceRuntime>> {
    runtime::device_count()?;
    Ok(Arc::new(CudaRuntime))
}
