//! Registry rows for the CPU copy/cast and fill engines: op `"copy"` and op `"fill"` on
//! `DeviceKind::Cpu`, `Layout::Strided`, for every dtype. Core's `Tensor::copy_`, `fill_`,
//! `contiguous` and `to_dtype` look these rows up, so every crate that links
//! tensor-kernels-cpu gets the fast paths.

use crate::copy::copy_strided;
use crate::copy::fill::fill_strided;

tensor_core::register_copy_fill!(Cpu, "cpu", copy_strided, fill_strided);

/// Forces this module's object code (and so its `inventory` rows) into the final link.
/// Call it once before the first [`tensor_core::registry()`] use from a crate that
/// otherwise references nothing in this module (the caching allocator's `install` calls
/// it too).
///
/// ```
/// tensor_kernels_cpu::register::ensure_linked();
/// let reg = tensor_core::registry();
/// assert!(reg.row_set("copy", tensor_core::DeviceKind::Cpu, tensor_core::Layout::Strided).is_some());
/// ```
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box((
        copy_strided as tensor_core::registry::CopyFn,
        fill_strided as tensor_core::registry::FillFn,
        identity_f32 as crate::kernel::MapFn,
        crate::affine::quantize_channels as crate::kernel::MapFn,
        crate::affine::dequantize_channels as crate::kernel::MapFn,
    ));
    crate::fused::ensure_linked();
    crate::reduce::builtin::ensure_linked();
    crate::softmax::ensure_linked();
    crate::sparse::ensure_linked();
}

/// The identity of f32 blocks: the [`QUANTIZED_COPY_SPEC`] row's body (the driver
/// dequantizes its input and quantizes its output around it).
///
/// # Safety
/// The `MapFn` contract for one f32 input.
///
/// [`QUANTIZED_COPY_SPEC`]: tensor_core::registry::QUANTIZED_COPY_SPEC
unsafe fn identity_f32(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    params: &[tensor_core::Scalar],
    store: crate::kernel::Store,
) {
    struct Identity;
    impl crate::map::MapBody<1> for Identity {
        fn call<V: crate::value::Value>(&self, [x]: [V; 1]) -> V {
            x
        }
    }
    let _ = params;
    // SAFETY: this fn's contract is map_block's.
    unsafe { crate::map::map_block::<f32, 1, Identity>(out, inputs, n, &Identity, store) }
}

/// A CPU row of `spec` keyed by f32 with kernel `kernel`.
macro_rules! f32_row {
    ($spec:expr, $kernel:expr) => {
        tensor_core::inventory::submit! {
            tensor_core::registry::KernelRow {
                op: &$spec,
                device: tensor_core::DeviceKind::Cpu,
                layout: tensor_core::Layout::Strided,
                dtype: tensor_core::DType::F32,
                kernel: $kernel,
            }
        }
    };
}

/// The f32 map kernel with block function `func`.
const fn f32_map(func: crate::kernel::MapFn) -> crate::kernel::MapKernel {
    crate::kernel::MapKernel { compute: tensor_core::DType::F32, output: tensor_core::DType::F32, func, bytes: None }
}

/// A CPU row of quantizing copy `spec` ([`crate::quantize::QuantizeKernel`]): the streaming
/// pass, and block function `func` for the calls it does not take.
macro_rules! quantize_row {
    ($spec:expr, $func:expr, $source:ident) => {
        f32_row!(
            $spec,
            &crate::quantize::QuantizeKernel { map: f32_map($func), source: crate::quantize::AffineSource::$source }
        );
    };
}
quantize_row!(tensor_core::registry::QUANTIZED_COPY_SPEC, identity_f32, Output);
quantize_row!(tensor_core::registry::QUANTIZE_CHANNELS_SPEC, crate::affine::quantize_channels, ChannelInputs);
f32_row!(tensor_core::registry::DEQUANTIZE_CHANNELS_SPEC, &f32_map(crate::affine::dequantize_channels));
