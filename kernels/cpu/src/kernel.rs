//! The CPU backend's elementwise kernel kind: a generated block function per dtype
//! ([`MapFn`]) run by the strided driver ([`crate::elementwise`], which also makes it a
//! `KernelImpl`).

use tensor_core::{DType, Scalar};

/// Computes `n` outputs from contiguous blocks of `n` inputs each, all in the kernel's
/// compute dtype (output in its output dtype), writing them with `store`'s kind of stores.
///
/// # Safety
/// `out` is valid for `n` writes and each `inputs[i]` for `n` reads of the right types;
/// `inputs.len()` is the op's arity; `params.len()` is the op's parameter count. With
/// [`Store::Streaming`] the caller fences (`copy::stream::store_fence`) before anything
/// else reads `out` or the call's results are handed on.
pub type MapFn = unsafe fn(out: *mut u8, inputs: &[*const u8], n: usize, params: &[Scalar], store: Store);

/// How a block function writes its outputs. The values are the same either way.
///
/// ```
/// use tensor_kernels_cpu::kernel::Store;
/// assert_ne!(Store::Plain, Store::Streaming);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Ordinary stores (the output stays in cache for whatever reads it next).
    Plain,
    /// Non-temporal stores straight from the registers, vector by vector, for an output
    /// that goes to memory (no read-for-ownership, no staging buffer): each vector of a
    /// 16-byte-aligned `out` whose lanes fill whole 16-byte pieces; the rest (an unaligned
    /// `out`, a block's last partial vector, narrower vectors) is stored plainly. Written
    /// while the next vectors compute, the output stream overlaps a compute-bound body
    /// (`silu`, `exp`) where a block buffer flushed after it did not (measured against that
    /// buffer with `fused_probe`: `docs/performance-log.md`, “From the code comments”).
    Streaming,
}

/// A generated elementwise kernel for one dtype on the CPU (what `#[tensor_op]` registers).
///
/// ```
/// use tensor_kernels_cpu::kernel::MapKernel;
/// use tensor_core::{registry::KernelImpl, DType};
/// use tensor_kernels_cpu::kernel::Store;
/// unsafe fn noop(_: *mut u8, _: &[*const u8], _: usize, _: &[tensor_core::Scalar], _: Store) {}
/// let k = MapKernel { compute: DType::F32, output: DType::F32, func: noop, bytes: None };
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
    /// The same body over quantized bytes in one pass (qint8 and quint8 rows of an op
    /// computing in f32; [`crate::byte_map`]), which the driver prefers where every operand
    /// of a run is contiguous and of one such dtype.
    pub bytes: Option<crate::byte_map::ByteMapFn>,
}
