//! The CUDA runtime: the driver probe, and one [`CudaDevice`] per ordinal (its primary
//! context, its one stream, its compiled kernels), created lazily and cached for the life
//! of the process.
//!
//! cudarc panics when asked anything without a driver, so every entry point checks that
//! `libcuda` can be loaded first. Missing driver, device or NVRTC are [`Error::Cuda`]
//! values with a readable reason, remembered per ordinal.
//!
//! All work on a device (kernels, device copies, host transfers, frees of the caching
//! allocator) goes on that device's single stream, so stream order is program order.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result as drv, sys, CudaContext, CudaStream};
use tensor_core::{Device, Error, Result};

use super::block_cache::BlockCache;
use super::codegen::{self, KernelSpec};
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
/// if let Err(e) = tensor_kernels_cuda::runtime::init() {
///     assert!(e.to_string().starts_with("cuda:"));
/// }
/// ```
pub fn init() -> Result<CudaInfo> {
    let devices = device_count()?;
    let lib = nvrtc::nvrtc()?;
    Ok(CudaInfo { devices, nvrtc: lib.version })
}

/// Number of CUDA devices; an error (never a panic) without a driver or a device.
pub fn device_count() -> Result<usize> {
    static COUNT: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    COUNT.get_or_init(probe_driver).clone().map_err(Error::Cuda)
}

fn probe_driver() -> std::result::Result<usize, String> {
    // SAFETY: only tries to dlopen libcuda by its usual names; no driver function is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "no CUDA driver: libcuda.so could not be loaded (no NVIDIA driver installed on this machine)".into()
        );
    }
    drv::init().map_err(|e| format!("the CUDA driver failed to initialise: {e:?}"))?;
    let n = drv::device::get_count().map_err(|e| format!("the CUDA driver reports no usable device: {e:?}"))?;
    if n <= 0 {
        return Err("the CUDA driver is installed but there is no CUDA device".into());
    }
    Ok(n as usize)
}

/// A loaded kernel. The module stays loaded for the life of the process.
#[derive(Clone, Copy)]
struct Function {
    func: sys::CUfunction,
}

// SAFETY: a CUfunction is an opaque driver handle, valid in every thread that binds its
// context; the driver API is thread-safe.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

/// One CUDA device: primary context, stream, target arch and kernel cache.
pub struct CudaDevice {
    /// Device ordinal.
    pub ordinal: u32,
    /// Device name.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// True when the driver supports stream-ordered allocation on this device.
    pub async_alloc: bool,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    functions: Mutex<HashMap<KernelSpec<'static>, Function>>,
    pub(crate) cache: Mutex<BlockCache>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaDevice(cuda:{} {} sm_{}{})",
            self.ordinal, self.name, self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// The device of `ordinal`, created on first use (context, stream) and cached, errors too.
pub fn device(ordinal: u32) -> Result<Arc<CudaDevice>> {
    type Slot = std::result::Result<Arc<CudaDevice>, String>;
    static DEVICES: OnceLock<Mutex<HashMap<u32, Slot>>> = OnceLock::new();
    let count = device_count()?;
    let mut map = DEVICES.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    map.entry(ordinal).or_insert_with(|| open(ordinal, count)).clone().map_err(Error::Cuda)
}

/// The [`CudaDevice`] of a `Device::Cuda(n)`.
pub fn device_of(device: Device) -> Result<Arc<CudaDevice>> {
    match device {
        Device::Cuda(n) => self::device(n),
        Device::Cpu => Err(Error::Cuda("a CUDA kernel was handed a CPU tensor".into())),
    }
}

fn open(ordinal: u32, count: usize) -> std::result::Result<Arc<CudaDevice>, String> {
    if ordinal as usize >= count {
        return Err(format!("there is no CUDA device {ordinal} (this machine has {count})"));
    }
    // The driver is present (device_count succeeded), so cudarc does not panic here.
    let ctx = CudaContext::new(ordinal as usize).map_err(|e| format!("creating a context on cuda:{ordinal}: {e:?}"))?;
    let stream = ctx.new_stream().map_err(|e| format!("creating a stream on cuda:{ordinal}: {e:?}"))?;
    let compute_capability =
        ctx.compute_capability().map_err(|e| format!("querying cuda:{ordinal}'s compute capability: {e:?}"))?;
    let sm_count = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| format!("querying cuda:{ordinal}'s multiprocessor count: {e:?}"))?;
    let name = ctx.name().unwrap_or_else(|_| "unknown".into());
    Ok(Arc::new(CudaDevice {
        ordinal,
        name,
        compute_capability,
        sm_count: sm_count.max(1) as u32,
        async_alloc: ctx.has_async_alloc(),
        ctx,
        stream,
        functions: Mutex::new(HashMap::new()),
        cache: Mutex::new(BlockCache::default()),
    }))
}

fn driver_err(what: &str, ordinal: u32) -> impl Fn(drv::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what} on cuda:{ordinal}: {e:?}"))
}

impl CudaDevice {
    /// The `sm_XX` arch NVRTC compiles cubins for on this device.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// The raw stream every operation on this device is queued on.
    pub fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(driver_err("binding the context", self.ordinal))
    }

    /// Waits for everything queued on this device's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        self.stream.synchronize().map_err(driver_err("synchronizing the stream", self.ordinal))
    }

    /// Most blocks an elementwise launch uses (grid-stride loops cover the rest).
    pub fn max_blocks(&self) -> u32 {
        self.sm_count.saturating_mul(32)
    }

    /// The loaded kernel for `spec`: compiled at first use (through the NVRTC cache) to a
    /// cubin for this device's own `sm_XX`, falling back to PTX when NVRTC or the driver
    /// does not take the cubin.
    fn function(&self, spec: &KernelSpec<'static>) -> Result<Function> {
        if let Some(f) = self.functions.lock().unwrap_or_else(|e| e.into_inner()).get(spec) {
            return Ok(*f);
        }
        let generated = codegen::generate(spec)?;
        let f = self.load_for_this_device(&generated.program(), &generated.name)?;
        self.functions.lock().unwrap_or_else(|e| e.into_inner()).insert(spec.clone(), f);
        Ok(f)
    }

    /// Compiles `source` for this device (through the NVRTC cache, with the fallbacks the
    /// generated kernels get) and loads its kernel `name`: the check that hand-written CUDA C
    /// builds and links here, before anything launches it.
    ///
    /// ```no_run
    /// let dev = tensor_kernels_cuda::runtime::device(0)?;
    /// dev.compile_and_load("extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }", "k")?;
    /// # Ok::<(), tensor_core::Error>(())
    /// ```
    pub fn compile_and_load(&self, source: &str, name: &str) -> Result<()> {
        self.load_for_this_device(source, name).map(|_| ())
    }

    /// `load` of `source` for this device's `sm_XX`, then its PTX, then older PTX.
    fn load_for_this_device(&self, source: &str, name: &str) -> Result<Function> {
        let (major, minor) = self.compute_capability;
        let mut archs = vec![self.arch(), format!("compute_{major}{minor}")];
        for fallback in ["compute_90", "compute_80"] {
            let cc: i32 = fallback[8..].parse().unwrap_or(0);
            if cc <= major * 10 + minor && !archs.iter().any(|a| a == fallback) {
                archs.push(fallback.to_string());
            }
        }
        let mut failures = Vec::new();
        for arch in &archs {
            match self.load(source, arch, name) {
                Ok(f) => return Ok(f),
                Err(e) => failures.push(format!("{arch}: {e}")),
            }
        }
        Err(Error::Cuda(format!("no usable image of {} for cuda:{}:\n{}", name, self.ordinal, failures.join("\n"))))
    }

    fn load(&self, source: &str, arch: &str, name: &str) -> Result<Function> {
        let compiled = nvrtc::compile(source, arch, &[])?;
        let mut image = compiled.image.clone();
        if !compiled.is_cubin && image.last() != Some(&0) {
            image.push(0); // PTX is loaded as NUL-terminated text
        }
        self.bind()?;
        // SAFETY: `image` is a complete cubin or NUL-terminated PTX produced by NVRTC; the
        // driver copies it during the call.
        let module = unsafe { drv::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(driver_err("loading a module", self.ordinal))?;
        let cname = CString::new(name).map_err(|_| Error::Cuda("kernel name contains a NUL byte".into()))?;
        // SAFETY: `module` was just loaded and is never unloaded.
        let func = unsafe { drv::module::get_function(module, cname) }
            .map_err(driver_err("finding the kernel in its module", self.ordinal))?;
        Ok(Function { func })
    }

    /// Launches `spec` with one by-value argument block on this device's stream. The block
    /// goes as a parameter buffer with its size (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`),
    /// so the driver checks it against the kernel's parameter layout.
    ///
    /// # Safety
    /// `args` points at the `#[repr(C)]` argument struct of `args_size` bytes that `spec`'s
    /// kernel takes, whose device pointers address memory of this device valid for every
    /// access of the launch until the stream reaches it.
    pub unsafe fn launch(
        &self,
        spec: &KernelSpec<'static>,
        grid: u32,
        block: (u32, u32),
        args: *const c_void,
        args_size: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_with_shared_memory(spec, grid, block, 0, args, args_size) }
    }

    /// [`CudaDevice::launch`] with `shared_bytes` of dynamic shared memory per block.
    ///
    /// # Safety
    /// As [`CudaDevice::launch`].
    pub unsafe fn launch_with_shared_memory(
        &self,
        spec: &KernelSpec<'static>,
        grid: u32,
        block: (u32, u32),
        shared_bytes: u32,
        args: *const c_void,
        args_size: usize,
    ) -> Result<()> {
        let f = self.function(spec)?;
        self.bind()?;
        let mut size = args_size;
        // CU_LAUNCH_PARAM_BUFFER_POINTER (1), the block, CU_LAUNCH_PARAM_BUFFER_SIZE (2), its
        // size, CU_LAUNCH_PARAM_END (0): the driver's `extra` protocol.
        let mut extra = [
            std::ptr::without_provenance_mut::<c_void>(1),
            args as *mut c_void,
            std::ptr::without_provenance_mut::<c_void>(2),
            &mut size as *mut usize as *mut c_void,
            std::ptr::null_mut(),
        ];
        // SAFETY: the caller's contract; the driver copies the argument block at launch and
        // reads `extra` and `size` only during the call.
        unsafe {
            sys::cuLaunchKernel(
                f.func,
                grid.max(1),
                1,
                1,
                block.0,
                block.1,
                1,
                shared_bytes,
                self.cu_stream(),
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        }
        .result()
        .map_err(driver_err("launching a kernel", self.ordinal))
    }

    /// Queues a device-to-device copy of `bytes` bytes.
    ///
    /// # Safety
    /// Both addresses are valid device memory of this device for `bytes` bytes.
    pub unsafe fn memcpy_dtod(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        unsafe { drv::memcpy_dtod_async(dst, src, bytes, self.cu_stream()) }
            .map_err(driver_err("copying device memory", self.ordinal))
    }

    /// Copies `dst.len()` bytes from device address `src` to the host (waits for it).
    ///
    /// # Safety
    /// `src` is valid device memory of this device for `dst.len()` bytes.
    pub unsafe fn copy_to_host(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the caller's contract; `dst` stays borrowed until the stream is synchronized.
        unsafe { drv::memcpy_dtoh_async(dst, src, self.cu_stream()) }
            .map_err(driver_err("copying to the host", self.ordinal))?;
        self.synchronize()
    }

    /// Copies host bytes to device address `dst` (waits for it: `src` is only borrowed).
    ///
    /// # Safety
    /// `dst` is valid device memory of this device for `src.len()` bytes.
    pub unsafe fn copy_from_host(&self, src: &[u8], dst: u64) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the caller's contract; `src` stays borrowed until the stream is synchronized.
        unsafe { drv::memcpy_htod_async(dst, src, self.cu_stream()) }
            .map_err(driver_err("copying from the host", self.ordinal))?;
        self.synchronize()
    }
}
