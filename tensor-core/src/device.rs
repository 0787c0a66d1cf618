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

/// How elements are addressed. An enum so other layouts (sparse, blocked) can be added later.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::Layout;
/// assert_eq!(Layout::default(), Layout::Strided);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Layout {
    /// Dense sizes + signed strides + offset.
    #[default]
    Strided,
}
