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

/// A map over byte codes — qint8, quint8, the 8-bit floats — ([`crate::byte_map::map_bytes`]
/// over an op's f32 body): `false`, with nothing written, where this build or CPU has no
/// such loop (below AVX2; for the 8-bit floats, below AVX-512).
///
/// # Safety
/// `out` is valid for `n` one-byte writes and each `inputs[i]` for `n` one-byte reads, all
/// stored as `codes` says; `inputs.len()` is the op's arity and at most
/// `tensor_core::MAX_INPUTS`; `out` equals an input or overlaps none; `params` holds the
/// op's params. With [`Store::Streaming`] the caller fences before the results are read.
pub type ByteMapFn = unsafe fn(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    params: &[Scalar],
    codes: &crate::byte_codes::ByteCodes,
    store: Store,
) -> bool;

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
    /// The same body over byte codes in one pass (qint8, quint8, f8e4m3 and f8e5m2 rows
    /// of an op computing in f32; [`crate::byte_map`]), which the driver prefers where every
    /// operand of a run is contiguous and of one such dtype.
    pub bytes: Option<ByteMapFn>,
}
