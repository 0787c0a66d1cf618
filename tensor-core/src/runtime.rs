//! Hooks a device backend installs into the core (per device kind, found through
//! `inventory`), so that core operations (`to_vec`, `to_device`) can move bytes without the
//! core depending on any backend crate.

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

/// A device runtime a backend offers, found through `inventory` at first use (a backend
/// usually initialises its driver lazily, in `make`).
pub struct RuntimeFactory {
    /// The device kind it serves.
    pub device: DeviceKind,
    /// Builds the runtime; an error (no driver, no device) is remembered and returned.
    pub make: fn() -> Result<Arc<dyn DeviceRuntime>>,
}

inventory::collect!(RuntimeFactory);

/// Explicitly installed runtimes, per device kind, override the registered ones.
static OVERRIDES: [RwLock<Option<Arc<dyn DeviceRuntime>>>; DeviceKind::ALL.len()] =
    [const { RwLock::new(None) }; DeviceKind::ALL.len()];

/// Installs the runtime for devices of `kind`, overriding the registered one.
pub fn set_runtime(kind: DeviceKind, rt: Arc<dyn DeviceRuntime>) {
    *OVERRIDES[kind.index()].write().unwrap_or_else(|e| e.into_inner()) = Some(rt);
}

/// Installs the runtime for CUDA devices ([`set_runtime`] for [`DeviceKind::Cuda`]).
pub fn set_cuda_runtime(rt: Arc<dyn DeviceRuntime>) {
    set_runtime(DeviceKind::Cuda, rt);
}

/// The runtime for `device`: an installed override, else the first registered one whose
/// `make` works (an error for the CPU, which needs none, or when none works).
pub fn runtime_for(device: Device) -> Result<Arc<dyn DeviceRuntime>> {
    static REGISTERED: [OnceLock<Result<Arc<dyn DeviceRuntime>>>; DeviceKind::ALL.len()] =
        [const { OnceLock::new() }; DeviceKind::ALL.len()];
    let kind = device.kind();
    if kind == DeviceKind::Cpu {
        return Err(Error::invalid("runtime_for", "the CPU needs no device runtime"));
    }
    if let Some(rt) = OVERRIDES[kind.index()].read().unwrap_or_else(|e| e.into_inner()).clone() {
        return Ok(rt);
    }
    REGISTERED[kind.index()]
        .get_or_init(|| {
            let mut last = no_backend(kind);
            for f in inventory::iter::<RuntimeFactory>.into_iter().filter(|f| f.device == kind) {
                match (f.make)() {
                    Ok(rt) => return Ok(rt),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
        .clone()
}

/// The error for a device kind whose backend is not linked into the program.
pub(crate) fn no_backend(kind: DeviceKind) -> Error {
    let msg = format!(
        "no {kind} backend is linked into this program; depend on tensor-ops with its `{kind}` feature (on by default) for {kind} tensors"
    );
    match kind {
        DeviceKind::Cuda => Error::Cuda(msg),
        DeviceKind::Cpu => Error::invalid("runtime_for", msg),
    }
}
