//! Registrations of the CUDA runtime with the core, through `inventory`: the caching
//! allocator and the host-transfer runtime for `DeviceKind::Cuda` (both initialise the
//! driver lazily, at the first CUDA allocation or transfer, and turn "no driver / no
//! device" into a remembered [`tensor_core::Error::Cuda`]), and the `"copy"` / `"fill"`
//! rows for `DeviceKind::Cuda` for every dtype (the built-in reductions' and softmax rows'
//! are in `reduce_rows.rs`).

use tensor_core::{AllocatorFactory, DeviceKind, RuntimeFactory};

use super::alloc::make_allocator;
use super::launch::{copy, fill};
use super::transfer::make_runtime;

tensor_core::inventory::submit! {
    AllocatorFactory { device: DeviceKind::Cuda, priority: 0, make: make_allocator }
}

tensor_core::inventory::submit! {
    RuntimeFactory { device: DeviceKind::Cuda, make: make_runtime }
}

tensor_core::register_copy_fill!(Cuda, "cuda", copy, fill);

/// Forces this module's object code (and so its `inventory` registrations) into the final
/// link; `launch_map` calls it, so any crate that can run a CUDA op has them.
///
/// ```
/// tensor_kernels_cuda::register::ensure_linked();
/// let reg = tensor_core::registry();
/// assert!(reg.row_set("fill", tensor_core::DeviceKind::Cuda, tensor_core::Layout::Strided).is_some());
/// ```
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box((copy as tensor_core::registry::CopyFn, fill as tensor_core::registry::FillFn));
    super::fused::ensure_linked();
    super::reduce_rows::ensure_linked();
    super::sparse::ensure_linked();
}
