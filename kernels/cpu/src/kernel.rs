//! The CPU backend's elementwise kernel kind: a generated block function per dtype
//! ([`MapFn`]) run by the strided driver ([`crate::elementwise`], which also makes it a
//! `KernelImpl`).

use tensor_core::{DType, Scalar};

/// Computes `n` outputs from contiguous blocks of `n` inputs each, all in the kernel's
/// compute dtype (output in its output dtype).
///
/// # Safety
/// `out` is valid for `n` writes and each `inputs[i]` for `n` reads of the right types;
/// `inputs.len()` is the op's arity; `params.len()` is the op's parameter count.
pub type MapFn = unsafe fn(out: *mut u8, inputs: &[*const u8], n: usize, params: &[Scalar]);

/// A generated elementwise kernel for one dtype on the CPU (what `#[tensor_op]` registers).
///
/// ```
/// use tensor_kernels_cpu::kernel::MapKernel;
/// use tensor_core::{registry::KernelImpl, DType};
/// unsafe fn noop(_: *mut u8, _: &[*const u8], _: usize, _: &[tensor_core::Scalar]) {}
/// let k = MapKernel { compute: DType::F32, output: DType::F32, func: noop };
/// assert_eq!(k.kind(), "cpu-map");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MapKernel {
    /// Dtype of the contiguous input blocks (f32 for f16/bf16 rows).
    pub compute: DType,
    /// Dtype of the output block (`compute`, or `Bool` for comparisons).
    pub output: DType,
    /// The block function.
    pub func: MapFn,
}
