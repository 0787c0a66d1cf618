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

/// A CUDA map row of `spec` keyed by f32 with device function `function` (`source`).
macro_rules! f32_map_row {
    ($spec:expr, $function:expr, $source:expr) => {
        tensor_core::inventory::submit! {
            tensor_core::registry::KernelRow {
                op: &$spec,
                device: DeviceKind::Cuda,
                layout: tensor_core::Layout::Strided,
                dtype: tensor_core::DType::F32,
                kernel: &crate::kernel::CudaMapKernel {
                    compute: tensor_core::DType::F32,
                    output: tensor_core::DType::F32,
                    function: $function,
                    source: $source,
                },
            }
        }
    };
}

// Quantizing, dequantizing and requantizing copies: the identity, its operands' quantizers
// applied by the kernel templates (`a.q`).
f32_map_row!(
    tensor_core::registry::QUANTIZED_COPY_SPEC,
    "tops_quantized_copy",
    "__device__ __forceinline__ float tops_quantized_copy(float x) { return x; }\n"
);
// Per-channel quantizing / dequantizing: the scale's inverse (or the scale) and the zero
// point are inputs broadcast along the channel axis; the same arithmetic as `a.q`.
f32_map_row!(
    tensor_core::registry::QUANTIZE_CHANNELS_SPEC,
    "tops_quantize_channels",
    "__device__ __forceinline__ float tops_quantize_channels(float x, float inv, float zp, float qmin, float qmax, float nan) {\n    const tops_affine a = {1.0f, inv, zp, 0.0f};\n    return tops_quantize(x, a, qmin, qmax, nan);\n}\n"
);
f32_map_row!(
    tensor_core::registry::DEQUANTIZE_CHANNELS_SPEC,
    "tops_dequantize_channels",
    "__device__ __forceinline__ float tops_dequantize_channels(float q, float scale, float zp) {\n    const tops_affine a = {scale, 0.0f, zp, 0.0f};\n    return tops_dequantize(q, a);\n}\n"
);
