//! # tensor-kernels
//!
//! The loop engines behind tensor-ops. CPU: the [`cpu::value::Value`] lane algebra that
//! `#[tensor_op]` bodies are written against, block kernels, the strided elementwise driver,
//! copy/cast and fill engines. CUDA: the runtime, NVRTC compilation and kernel templates.

#![deny(unsafe_op_in_unsafe_fn)]

/// Submits the `"copy"` and `"fill"` registry rows of one device kind for every dtype.
macro_rules! copy_fill_rows {
    ($device:ident, $copy:path, $fill:path) => {
        copy_fill_rows!(@each $device, $copy, $fill; Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64);
    };
    (@each $device:ident, $copy:path, $fill:path; $($d:ident),*) => { $(
        tensor_core::inventory::submit! {
            tensor_core::registry::KernelRow {
                op: &tensor_core::registry::COPY_SPEC,
                device: tensor_core::DeviceKind::$device,
                layout: tensor_core::Layout::Strided,
                dtype: tensor_core::DType::$d,
                kernel: tensor_core::registry::Kernel::Copy($copy),
            }
        }
        tensor_core::inventory::submit! {
            tensor_core::registry::KernelRow {
                op: &tensor_core::registry::FILL_SPEC,
                device: tensor_core::DeviceKind::$device,
                layout: tensor_core::Layout::Strided,
                dtype: tensor_core::DType::$d,
                kernel: tensor_core::registry::Kernel::Fill($fill),
            }
        }
    )* };
}

pub mod cpu;
pub mod cuda;

/// Forces the registrations of this crate (copy/fill rows, allocators, the CUDA runtime)
/// into the final link; `inventory` only sees object code that is linked.
pub fn ensure_linked() {
    cpu::register::ensure_linked();
    cuda::register::ensure_linked();
}
