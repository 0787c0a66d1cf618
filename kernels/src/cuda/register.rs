//! Registrations of the CUDA runtime with the core, through `inventory`: the caching
//! allocator and the host-transfer runtime for `DeviceKind::Cuda` (both initialise the
//! driver lazily, at the first CUDA allocation or transfer, and turn "no driver / no
//! device" into a remembered [`tensor_core::Error::Cuda`]), and the `"copy"` / `"fill"`
//! rows for `DeviceKind::Cuda` for every dtype.

use tensor_core::registry::{Kernel, KernelRow, OpSpec};
use tensor_core::{AllocatorFactory, DType, DeviceKind, Layout, RuntimeFactory};

use super::alloc::make_allocator;
use super::launch::{copy, fill};
use super::transfer::make_runtime;

/// The copy/cast op on CUDA (same name and shape as the CPU row's spec).
pub static COPY_SPEC: OpSpec = OpSpec {
    name: "copy",
    arity: 1,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "strided copy into the destination, casting with Rust `as` rules",
};

/// The fill op on CUDA.
pub static FILL_SPEC: OpSpec = OpSpec {
    name: "fill",
    arity: 0,
    params: &["value"],
    bool_output: false,
    float_only: false,
    doc: "writes a scalar (cast with Rust `as` rules) into every element",
};

tensor_core::inventory::submit! {
    AllocatorFactory { device: DeviceKind::Cuda, priority: 0, make: make_allocator }
}

tensor_core::inventory::submit! {
    RuntimeFactory { device: DeviceKind::Cuda, make: make_runtime }
}

macro_rules! rows {
    ($($d:ident),*) => { $(
        tensor_core::inventory::submit! {
            KernelRow {
                op: &COPY_SPEC,
                device: DeviceKind::Cuda,
                layout: Layout::Strided,
                dtype: DType::$d,
                kernel: Kernel::Copy(copy),
            }
        }
        tensor_core::inventory::submit! {
            KernelRow {
                op: &FILL_SPEC,
                device: DeviceKind::Cuda,
                layout: Layout::Strided,
                dtype: DType::$d,
                kernel: Kernel::Fill(fill),
            }
        }
    )* };
}
rows!(Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64);

/// Forces this module's object code (and so its `inventory` registrations) into the final
/// link; `launch_map` calls it, so any crate that can run a CUDA op has them.
///
/// ```
/// tensor_kernels::cuda::register::ensure_linked();
/// let reg = tensor_core::registry();
/// assert!(reg.row_set("fill", tensor_core::DeviceKind::Cuda, tensor_core::Layout::Strided).is_some());
/// ```
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box((&COPY_SPEC, &FILL_SPEC));
}
