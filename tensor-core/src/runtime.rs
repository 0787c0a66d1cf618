//! Hooks a device runtime (the CUDA one lives in `tensor-kernels`) installs into the core,
//! so that core operations (`to_vec`, `to_device`) can move bytes without the core
//! depending on the runtime crate.

use crate::{Device, DeviceKind, Error, Result};
use std::sync::{Arc, OnceLock, RwLock};

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

/// A device runtime a crate offers, found through `inventory` at first use (linking
/// `tensor-kernels` registers the CUDA one; it initialises the driver lazily).
pub struct RuntimeFactory {
    /// The device kind it serves.
    pub device: DeviceKind,
    /// Builds the runtime; an error (no driver, no device) is remembered and returned.
    pub make: fn() -> Result<Arc<dyn DeviceRuntime>>,
}

inventory::collect!(RuntimeFactory);

static CUDA_OVERRIDE: RwLock<Option<Arc<dyn DeviceRuntime>>> = RwLock::new(None);

/// Installs the runtime for CUDA devices, overriding the registered one.
pub fn set_cuda_runtime(rt: Arc<dyn DeviceRuntime>) {
    *CUDA_OVERRIDE.write().unwrap_or_else(|e| e.into_inner()) = Some(rt);
}

/// The runtime for `device` (an error for the CPU or when none works).
pub fn runtime_for(device: Device) -> Result<Arc<dyn DeviceRuntime>> {
    static REGISTERED: OnceLock<Result<Arc<dyn DeviceRuntime>>> = OnceLock::new();
    match device {
        Device::Cpu => Err(Error::invalid("runtime_for", "the CPU needs no device runtime")),
        Device::Cuda(_) => {
            if let Some(rt) = CUDA_OVERRIDE.read().unwrap_or_else(|e| e.into_inner()).clone() {
                return Ok(rt);
            }
            REGISTERED
                .get_or_init(|| {
                    let mut last = Error::Cuda(format!("no CUDA runtime is linked in for {device}"));
                    for f in inventory::iter::<RuntimeFactory>.into_iter().filter(|f| f.device == DeviceKind::Cuda) {
                        match (f.make)() {
                            Ok(rt) => return Ok(rt),
                            Err(e) => last = e,
                        }
                    }
                    Err(last)
                })
                .clone()
        }
    }
}
