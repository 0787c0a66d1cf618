//! The one error type of the library.

use crate::{DType, Device, Layout};

/// Every fallible call in tensor-ops returns this `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with the op, the shapes/dtypes/dims involved and what would be valid.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{Error, Tensor, DType, Device};
/// let t = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
/// let err = t.transpose(0, 5).unwrap_err();
/// assert!(matches!(err, Error::DimOutOfRange { .. }));
/// assert!(err.to_string().contains("transpose"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
#[allow(missing_docs)] // fields are named for what they hold: op, dims, shapes, dtypes
pub enum Error {
    /// A dim index is not in `0..ndim`.
    #[error("{op}: dim {dim} is out of range for a tensor of {ndim} dims (valid: 0..{ndim}){}", negative_dim_hint(*dim))]
    DimOutOfRange { op: &'static str, dim: usize, ndim: usize },
    /// A shape is unusable for this op.
    #[error("{op}: {msg}")]
    Shape { op: &'static str, msg: String },
    /// Two shapes could not be broadcast together (NumPy rules).
    #[error("{op}: shapes {lhs:?} and {rhs:?} cannot be broadcast together (each dim must match or be 1)")]
    Broadcast { op: &'static str, lhs: Vec<usize>, rhs: Vec<usize> },
    /// Element count or byte size of a shape overflows `usize`/`isize`.
    #[error("{op}: shape {shape:?} of {dtype} overflows the addressable size")]
    Overflow { op: &'static str, shape: Vec<usize>, dtype: DType },
    /// A dtype is not the one required.
    #[error("{op}: dtype mismatch: expected {expected}, got {got}")]
    DTypeMismatch { op: &'static str, expected: DType, got: DType },
    /// A dtype cannot be used here.
    #[error("{op}: {msg}")]
    DType { op: &'static str, msg: String },
    /// Operands live on different devices.
    #[error("{op}: tensors are on different devices ({lhs} and {rhs}); move one with to_device first")]
    DeviceMismatch { op: &'static str, lhs: Device, rhs: Device },
    /// The allocator could not provide the memory: `op` is what needed it, `what` the
    /// shape/dtype it was for (empty when only the byte count is known).
    #[error("{op}: out of memory: could not allocate {bytes} bytes on {device}{}", for_what(what))]
    OutOfMemory { op: &'static str, bytes: usize, device: Device, what: String },
    /// An index or view reaches outside its tensor or storage.
    #[error("{op}: {msg}")]
    OutOfBounds { op: &'static str, msg: String },
    /// No kernel is registered for this op, device, layout and dtype.
    #[error(
        "{op}: no kernel for device {device}, layout {layout:?}, dtype {dtype}; supported dtypes there: {supported}"
    )]
    NoKernel { op: String, device: Device, layout: Layout, dtype: DType, supported: String },
    /// An operation that needs strided data (a view, a data pointer, a dense kernel) got a
    /// tensor of another layout (a sparse tensor).
    #[error("{op}: {msg} (the tensor's layout is {layout}); convert it with `to_dense()` first")]
    Layout { op: &'static str, layout: Layout, msg: String },
    /// An output or in-place target is unusable (aliasing, non-contiguous, shared...).
    #[error("{op}: {msg}")]
    InvalidOutput { op: &'static str, msg: String },
    /// An argument other than a shape or dim is invalid.
    #[error("{op}: {msg}")]
    InvalidArgument { op: &'static str, msg: String },
    /// A storage the op needs is already locked by this thread (a guard from
    /// `Storage::read`/`write` is alive): waiting for it would never return.
    #[error("{op}: {msg}")]
    Locked { op: &'static str, msg: String },
    /// Two op definitions registered kernels under one name (op names are global, across
    /// crates, so that a name means one op in the registry, in `Expr::call` and in error
    /// messages); neither is run, since which one wins would be link-order luck. The fix is
    /// `#[tensor_op(name = "…")]` on one of them: the registered name changes, the Rust
    /// function keeps its own.
    #[error(
        "{op}: two ops are defined with this name, at {} and at {}; op names are global across crates: give one of them another registered name with `#[tensor_op(name = \"mycrate_{op}\")]` (its Rust function keeps its name)",
        definition_site(first),
        definition_site(second)
    )]
    DuplicateOp { op: &'static str, first: &'static str, second: &'static str },
    /// The op would write into a read-only storage (a mapped file, a read-only DLPack
    /// tensor, or one marked with `Storage::set_read_only`).
    #[error("{op}: the tensor's storage is read-only; write into a copy of it instead (`deep_clone()` makes one)")]
    ReadOnly { op: &'static str },
    /// A CUDA driver, device or NVRTC problem.
    #[error("cuda: {0}")]
    Cuda(String),
}

impl Error {
    /// The same error, attributed to the public op `op` (for ops built from other ops:
    /// softmax reports `softmax`, not its inner map).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Error;
    /// let e = Error::invalid("inner", "bad").renamed("outer");
    /// assert!(e.to_string().contains("outer"));
    /// ```
    pub fn renamed(self, op: &'static str) -> Self {
        match self {
            Error::DimOutOfRange { dim, ndim, .. } => Error::DimOutOfRange { op, dim, ndim },
            Error::Shape { msg, .. } => Error::Shape { op, msg },
            Error::Broadcast { lhs, rhs, .. } => Error::Broadcast { op, lhs, rhs },
            Error::Overflow { shape, dtype, .. } => Error::Overflow { op, shape, dtype },
            Error::DTypeMismatch { expected, got, .. } => Error::DTypeMismatch { op, expected, got },
            Error::DType { msg, .. } => Error::DType { op, msg },
            Error::DeviceMismatch { lhs, rhs, .. } => Error::DeviceMismatch { op, lhs, rhs },
            Error::OutOfBounds { msg, .. } => Error::OutOfBounds { op, msg },
            Error::NoKernel { device, layout, dtype, supported, .. } => {
                Error::NoKernel { op: op.to_string(), device, layout, dtype, supported }
            }
            Error::InvalidOutput { msg, .. } => Error::InvalidOutput { op, msg },
            Error::InvalidArgument { msg, .. } => Error::InvalidArgument { op, msg },
            Error::Locked { msg, .. } => Error::Locked { op, msg },
            Error::ReadOnly { .. } => Error::ReadOnly { op },
            Error::OutOfMemory { bytes, device, what, .. } => Error::OutOfMemory { op, bytes, device, what },
            other => other,
        }
    }

    /// Builds an [`Error::OutOfMemory`]: `op` could not get `bytes` bytes on `device` for
    /// `what` (e.g. "a [1000, 1000] f32 tensor"; may be empty).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Device, Error};
    /// let e = Error::out_of_memory("empty", 1 << 40, Device::Cpu, "a [262144, 1048576] f32 tensor");
    /// assert!(e.to_string().starts_with("empty: out of memory") && e.to_string().contains("f32"));
    /// ```
    pub fn out_of_memory(op: &'static str, bytes: usize, device: Device, what: impl Into<String>) -> Self {
        Error::OutOfMemory { op, bytes, device, what: what.into() }
    }

    /// An [`Error::OutOfMemory`] attributed to `op` and described by `what()` (what the
    /// caller knows of the allocation: a shape, a dtype); any other error as it is.
    pub(crate) fn allocating(self, op: &'static str, what: impl FnOnce() -> String) -> Self {
        match self {
            Error::OutOfMemory { bytes, device, .. } => Error::out_of_memory(op, bytes, device, what()),
            other => other,
        }
    }

    /// Builds an [`Error::Layout`]: `op` needs a strided tensor and got one of `layout`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Error, Layout};
    /// let e = Error::not_strided("view", Layout::SparseCoo);
    /// assert!(e.to_string().contains("sparse_coo") && e.to_string().contains("to_dense()"));
    /// ```
    pub fn not_strided(op: &'static str, layout: Layout) -> Self {
        Error::Layout { op, layout, msg: "needs a strided tensor".to_string() }
    }

    /// Builds an [`Error::Shape`].
    pub fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape { op, msg: msg.into() }
    }
    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::InvalidArgument { op, msg: msg.into() }
    }
    /// Builds an [`Error::OutOfBounds`].
    pub fn out_of_bounds(op: &'static str, msg: impl Into<String>) -> Self {
        Error::OutOfBounds { op, msg: msg.into() }
    }
    /// Builds an [`Error::InvalidOutput`].
    pub fn invalid_output(op: &'static str, msg: impl Into<String>) -> Self {
        Error::InvalidOutput { op, msg: msg.into() }
    }
}

/// `OpSpec::defined_at` without the module `#[tensor_op]` generates around the spec
/// (`a::b::__tensor_op_gelu (src/x.rs:3)` → `a::b (src/x.rs:3)`).
fn definition_site(at: &str) -> String {
    match at.find("::__tensor_op_") {
        Some(i) => {
            let rest = &at[i + 2..];
            let end = rest.find([' ', ':']).unwrap_or(rest.len());
            format!("{}{}", &at[..i], &rest[end..])
        }
        None => at.to_string(),
    }
}

/// For a dim that is a negative number cast to `usize` (`-1i64 as usize`): how to say it.
pub(crate) fn negative_dim_hint(dim: usize) -> String {
    if dim > isize::MAX as usize {
        format!("; dims count from 0 ({dim} is {} cast to usize): for the last dim pass ndim - 1", dim as isize)
    } else {
        String::new()
    }
}

/// " for {what}" when `what` says anything.
fn for_what(what: &str) -> String {
    if what.is_empty() {
        String::new()
    } else {
        format!(" for {what}")
    }
}

/// Checks `dim < ndim` for `op`.
pub(crate) fn check_dim(op: &'static str, dim: usize, ndim: usize) -> Result<()> {
    if dim < ndim {
        Ok(())
    } else {
        Err(Error::DimOutOfRange { op, dim, ndim })
    }
}
