//! What an op is, independent of dtype and device, and its cached rows.

use super::RowSet;
use crate::{DeviceKind, Error, Layout};
use std::sync::OnceLock;

/// What an op is, independent of dtype and device. One `static` per op: the registry and
/// the call path key on its address.
#[derive(Debug)]
pub struct OpSpec {
    /// Public name (`"add"`).
    pub name: &'static str,
    /// Number of tensor inputs (0..=[`crate::MAX_INPUTS`]).
    pub arity: usize,
    /// Names of the runtime scalar parameters.
    pub params: &'static [&'static str],
    /// True when the result is `Bool` (comparisons).
    pub bool_output: bool,
    /// True when the body needs floats: integer/bool inputs compute in f32 (as PyTorch).
    pub float_only: bool,
    /// One-line description.
    pub doc: &'static str,
    /// An implementation step of other ops (the fused-chain runner, softmax's row passes), not
    /// an op users call: listings for users ([`super::Registry::user_entries`]) leave it out.
    /// `#[tensor_op]` sets it for a definition marked `#[doc(hidden)]`.
    pub internal: bool,
    /// On sparse operands the result is specified only where *every* sparse operand is: a
    /// zero in any input makes the result zero (`f(x, 0) == f(0, y) == 0`: `mul`, logical
    /// and). Sparse ⊙ sparse then runs over the intersection of the patterns and sparse ⊙
    /// dense over the sparse operand's pattern (the result stays sparse). False for every
    /// other op: sparse ⊕ sparse runs over the union, and a dense operand makes the result
    /// dense. `#[tensor_op(sparse_intersection)]` states it; it is the op author's promise
    /// (as PyTorch's, `0 * inf` at an unspecified entry gives 0, not NaN).
    pub sparse_intersection: bool,
    /// Where the op is defined, `module::path (file.rs:line)`, for error messages (two ops
    /// registered under one name are named by it).
    pub defined_at: &'static str,
    /// This op's rows, gathered from the registry at its first call (the hot path's
    /// lookup: no hashing). Build it with [`RowCache::new`].
    pub rows: RowCache,
}

/// The rows of one op per (device kind, layout), filled once from the registry.
#[derive(Debug)]
pub struct RowCache(pub(super) OnceLock<SpecRows>);

impl RowCache {
    /// An empty cache (filled at the op's first lookup).
    pub const fn new() -> RowCache {
        RowCache(OnceLock::new())
    }
}

impl Default for RowCache {
    fn default() -> Self {
        RowCache::new()
    }
}

/// What the cache holds: the row sets, or why the op cannot run.
#[derive(Debug)]
pub(super) struct SpecRows {
    pub(super) sets: Vec<(DeviceKind, Layout, RowSet)>,
    pub(super) duplicate: Option<Error>,
}

/// The copy/cast op behind `Tensor::copy_`, `contiguous`, `to_dtype` and `to_device`:
/// a strided copy into the destination with broadcasting and any dtype pair.
pub static COPY_SPEC: OpSpec = OpSpec {
    name: "copy",
    arity: 1,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "strided copy into the destination, casting with Rust `as` rules",
    internal: false,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The copy behind quantizing, dequantizing and requantizing (`copy_` where either side is
/// quantized with another quantizer): an identity map whose rows load through the inputs'
/// quantizers and store through the output's ([`CallExtra::Quantized`]). Keyed by the
/// compute dtype (f32); a backend's rows are map kernels that honour the quantizers.
///
/// [`CallExtra::Quantized`]: crate::registry::CallExtra::Quantized
pub static QUANTIZED_COPY_SPEC: OpSpec = OpSpec {
    name: "quantized_copy",
    arity: 1,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "copy between a quantized tensor and another dtype or quantizer: dequantize, then quantize, in f32",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// Per-channel quantizing in one pass: `out = clamp(round_half_even(x · inv) + zp)` (NaN →
/// `nan`) with `inv` and `zp` f32 inputs broadcast along the channel axis and params
/// `[qmin, qmax, nan]` (f32); `out` is the quantized tensor's integers (an exact cast of the
/// integral f32 result). Keyed by f32.
pub static QUANTIZE_CHANNELS_SPEC: OpSpec = OpSpec {
    name: "quantize_channels",
    arity: 3,
    params: &["qmin", "qmax", "nan"],
    bool_output: false,
    float_only: true,
    doc: "per-channel quantizing: the inverse scale and zero point are broadcast inputs",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// Per-channel dequantizing in one pass: `out = (q − zp) · scale` with `scale` and `zp` f32
/// inputs broadcast along the channel axis. Keyed by f32.
pub static DEQUANTIZE_CHANNELS_SPEC: OpSpec = OpSpec {
    name: "dequantize_channels",
    arity: 3,
    params: &[],
    bool_output: false,
    float_only: true,
    doc: "per-channel dequantizing: the scale and zero point are broadcast inputs",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The fill op behind `Tensor::fill_`, `zeros`, `ones`, `full`.
pub static FILL_SPEC: OpSpec = OpSpec {
    name: "fill",
    arity: 0,
    params: &["value"],
    bool_output: false,
    float_only: false,
    doc: "writes a scalar (cast with Rust `as` rules) into every element",
    internal: false,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The op of the fused-chain runners (`tensor_core::call::fused`): each device's backend
/// registers one row (keyed by dtype F32; the runner serves every dtype), whose kernel gets
/// the chain in [`crate::registry::PreparedCall::fused`].
pub static FUSED_SPEC: OpSpec = OpSpec {
    name: "fused",
    arity: 0,
    params: &[],
    bool_output: false,
    float_only: false,
    doc: "runs a chain of elementwise ops (and a final reduction) in one pass",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The fused row softmax (param: the row length): a dense float tensor along its last
/// dim, one pass per row. The backends register their row kernels against it; `softmax`
/// (tensor-ops) asks the row how long a row it takes ([`super::KernelImpl::max_row_len`]).
pub static SOFTMAX_ROWS: OpSpec = OpSpec {
    name: "softmax_rows",
    arity: 1,
    params: &["row_len"],
    bool_output: false,
    float_only: true,
    doc: "softmax of dense rows, fused",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The fused row log_softmax (param: the row length), as [`SOFTMAX_ROWS`].
pub static LOG_SOFTMAX_ROWS: OpSpec = OpSpec {
    name: "log_softmax_rows",
    arity: 1,
    params: &["row_len"],
    bool_output: false,
    float_only: true,
    doc: "log_softmax of dense rows, fused",
    internal: true,
    sparse_intersection: false,
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};
