//! Registry rows for the CPU copy/cast and fill engines: op `"copy"` and op `"fill"` on
//! `DeviceKind::Cpu`, `Layout::Strided`, for every dtype. Core's `Tensor::copy_`, `fill_`,
//! `contiguous` and `to_dtype` look these rows up, so every crate that links
//! tensor-kernels gets the fast paths.

use crate::cpu::copy::copy_strided;
use crate::cpu::fill::fill_strided;
use tensor_core::registry::{Kernel, KernelRow, OpSpec};
use tensor_core::{DType, DeviceKind, Layout};

/// The copy/cast op: `dst.copy_(src)` with broadcasting and any dtype pair.
pub static COPY_SPEC: OpSpec = OpSpec {
    name: "copy",
    arity: 1,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "strided copy into the destination, casting with Rust `as` rules",
};

/// The fill op: every element set to a scalar cast to the tensor's dtype.
pub static FILL_SPEC: OpSpec = OpSpec {
    name: "fill",
    arity: 0,
    params: &["value"],
    bool_output: false,
    float_only: false,
    doc: "writes a scalar (cast with Rust `as` rules) into every element",
};

macro_rules! rows {
    ($($d:ident),*) => { $(
        tensor_core::inventory::submit! {
            KernelRow {
                op: &COPY_SPEC,
                device: DeviceKind::Cpu,
                layout: Layout::Strided,
                dtype: DType::$d,
                kernel: Kernel::Copy(copy_strided),
            }
        }
        tensor_core::inventory::submit! {
            KernelRow {
                op: &FILL_SPEC,
                device: DeviceKind::Cpu,
                layout: Layout::Strided,
                dtype: DType::$d,
                kernel: Kernel::Fill(fill_strided),
            }
        }
    )* };
}
rows!(Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64);

/// Forces this module's object code (and so its `inventory` rows) into the final link.
/// Call it once before the first [`tensor_core::registry()`] use from a crate that
/// otherwise references nothing in this module (the caching allocator's `install` calls
/// it too).
///
/// ```
/// tensor_kernels::cpu::register::ensure_linked();
/// let reg = tensor_core::registry();
/// assert!(reg.row_set("copy", tensor_core::DeviceKind::Cpu, tensor_core::Layout::Strided).is_some());
/// ```
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box((&COPY_SPEC, &FILL_SPEC));
}
