//! Where a tensor lives and how its elements are laid out.

use std::fmt;

/// A device: the CPU or a CUDA GPU by ordinal.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Device;
/// assert_eq!(Device::Cuda(1).to_string(), "cuda:1");
/// assert_eq!(Device::Cpu.kind(), tensor_ops::tensor_core::DeviceKind::Cpu);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory.
    #[default]
    Cpu,
    /// CUDA device with this ordinal.
    Cuda(u32),
}

/// The kind of a [`Device`], the first dispatch key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    /// Host.
    Cpu,
    /// CUDA.
    Cuda,
}

impl DeviceKind {
    /// Every device kind, in the order of [`DeviceKind::index`].
    pub const ALL: [DeviceKind; 2] = [DeviceKind::Cpu, DeviceKind::Cuda];
    /// A dense index (`0..ALL.len()`) for per-kind tables (allocators, runtimes).
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl Device {
    /// The device kind (ordinal dropped).
    pub fn kind(self) -> DeviceKind {
        match self {
            Device::Cpu => DeviceKind::Cpu,
            Device::Cuda(_) => DeviceKind::Cuda,
        }
    }
    /// True for [`Device::Cpu`].
    pub fn is_cpu(self) -> bool {
        self == Device::Cpu
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceKind::Cpu => write!(f, "cpu"),
            DeviceKind::Cuda => write!(f, "cuda"),
        }
    }
}

/// How elements are addressed: the second half of the first dispatch key (rows are keyed
/// by device kind *and* layout).
///
/// A strided tensor is sizes + strides + offset over a storage; a sparse tensor is its
/// components (index tensors and a strided `values` tensor, see `Tensor::sparse_coo` and
/// `Tensor::sparse_csr`). The order (`Strided` first) is the call path's rule for mixed
/// operands: a call is looked up under its highest layout.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Layout;
/// assert_eq!(Layout::default(), Layout::Strided);
/// assert_eq!(Layout::SparseCoo.to_string(), "sparse_coo");
/// assert!(Layout::Strided < Layout::SparseCsr);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Layout {
    /// Dense sizes + signed strides + offset.
    #[default]
    Strided,
    /// Sparse coordinate format (hybrid, as PyTorch): `indices` (I64 `[sparse_dims, nnz]`)
    /// and `values` (`[nnz, *dense_dims]`).
    SparseCoo,
    /// Compressed sparse rows (2-D, optionally with dense dims): `crow_indices` (I64
    /// `[rows + 1]`), `col_indices` (I64 `[nnz]`) and `values` (`[nnz, *dense_dims]`).
    SparseCsr,
}

impl Layout {
    /// The layout's name as PyTorch spells it (`strided`, `sparse_coo`, `sparse_csr`).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// assert_eq!(tensor_ops::Layout::SparseCsr.name(), "sparse_csr");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Strided => "strided",
            Layout::SparseCoo => "sparse_coo",
            Layout::SparseCsr => "sparse_csr",
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
