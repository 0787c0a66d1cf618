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
    ));
    crate::fused::ensure_linked();
    crate::reduce::builtin::ensure_linked();
    crate::softmax::ensure_linked();
    crate::sparse::ensure_linked();
}
