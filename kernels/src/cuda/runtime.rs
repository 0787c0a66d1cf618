//! The CUDA runtime entry point. `init` probes the driver without ever letting cudarc
//! panic: it checks that `libcuda` can be loaded before any driver call, then that a device
//! exists. Missing driver, device or NVRTC are [`Error::Cuda`] values with a reason.
//!
//! Still to come (see the session report): context + stream per device, the stream-ordered
//! caching allocator installed with `tensor_core::set_allocator`, the `DeviceRuntime`
//! installed with `tensor_core::set_cuda_runtime`, and `launch_map` / `copy` / `fill`.

use tensor_core::{Error, Result};

use super::nvrtc;

/// What `init` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaInfo {
    /// Number of CUDA devices.
    pub devices: usize,
    /// NVRTC version.
    pub nvrtc: (i32, i32),
}

/// Probes the driver, the devices and NVRTC.
///
/// ```
/// // On a machine without a GPU this is an error value, never a panic.
/// if let Err(e) = tensor_kernels::cuda::runtime::init() {
///     assert!(e.to_string().starts_with("cuda:"));
/// }
/// ```
pub fn init() -> Result<CudaInfo> {
    // SAFETY: only tries to dlopen libcuda by its usual names; no driver function is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::Cuda(
            "no CUDA driver: libcuda.so could not be loaded (no NVIDIA driver installed on this machine)".into(),
        ));
    }
    cudarc::driver::result::init().map_err(|e| Error::Cuda(format!("the CUDA driver failed to initialise: {e:?}")))?;
    let devices = cudarc::driver::result::device::get_count()
        .map_err(|e| Error::Cuda(format!("the CUDA driver reports no usable device: {e:?}")))?;
    if devices <= 0 {
        return Err(Error::Cuda("the CUDA driver is installed but there is no CUDA device".into()));
    }
    let lib = nvrtc::nvrtc()?;
    Ok(CudaInfo { devices: devices as usize, nvrtc: lib.version })
}
