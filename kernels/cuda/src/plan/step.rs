//! What a launch plan is made of: [`Step`]s — a kernel [`Launch`] with its by-value
//! argument block ([`Args`]) or a device memcpy — run in order on the device's stream.

use std::ffi::c_void;

use crate::args::{ContigArgs, FusedReduceArgs, ReduceArgs, SparseArgs, StridedArgs32, StridedArgs64, TransposeArgs};
use crate::codegen::{ArgsKind, KernelSpec};

/// A kernel's by-value argument block.
// The fused reduction's block is the largest (about 1.4 KB): a plan holds a launch or two,
// each copied once into the driver's parameter buffer, so unboxed costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum Args {
    /// [`ContigArgs`].
    Contig(ContigArgs),
    /// [`StridedArgs32`].
    Strided32(StridedArgs32),
    /// [`StridedArgs64`].
    Strided64(StridedArgs64),
    /// [`TransposeArgs`].
    Transpose(TransposeArgs),
    /// [`ReduceArgs`].
    Reduce(ReduceArgs),
    /// [`FusedReduceArgs`].
    FusedReduce(FusedReduceArgs),
    /// [`SparseArgs`].
    Sparse(SparseArgs),
}

impl Args {
    /// Address of the struct, as the kernel parameter.
    pub fn as_ptr(&self) -> *const c_void {
        match self {
            Args::Contig(a) => a as *const ContigArgs as *const c_void,
            Args::Strided32(a) => a as *const StridedArgs32 as *const c_void,
            Args::Strided64(a) => a as *const StridedArgs64 as *const c_void,
            Args::Transpose(a) => a as *const TransposeArgs as *const c_void,
            Args::Reduce(a) => a as *const ReduceArgs as *const c_void,
            Args::FusedReduce(a) => a as *const FusedReduceArgs as *const c_void,
            Args::Sparse(a) => a as *const SparseArgs as *const c_void,
        }
    }
    /// Size of the struct in bytes: the kernel parameter's size.
    pub fn size(&self) -> usize {
        match self {
            Args::Contig(_) => std::mem::size_of::<ContigArgs>(),
            Args::Strided32(_) => std::mem::size_of::<StridedArgs32>(),
            Args::Strided64(_) => std::mem::size_of::<StridedArgs64>(),
            Args::Transpose(_) => std::mem::size_of::<TransposeArgs>(),
            Args::Reduce(_) => std::mem::size_of::<ReduceArgs>(),
            Args::FusedReduce(_) => std::mem::size_of::<FusedReduceArgs>(),
            Args::Sparse(_) => std::mem::size_of::<SparseArgs>(),
        }
    }
    /// Which struct it is.
    pub fn kind(&self) -> ArgsKind {
        match self {
            Args::Contig(_) => ArgsKind::Contig,
            Args::Strided32(_) => ArgsKind::Strided32,
            Args::Strided64(_) => ArgsKind::Strided64,
            Args::Transpose(_) => ArgsKind::Transpose,
            Args::Reduce(_) => ArgsKind::Reduce,
            Args::FusedReduce(_) => ArgsKind::FusedReduce,
            Args::Sparse(_) => ArgsKind::Sparse,
        }
    }
}

/// One kernel launch: a 1-D grid of 2-D blocks.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The kernel.
    pub spec: KernelSpec<'static>,
    /// Blocks.
    pub grid: u32,
    /// Threads per block (x, y).
    pub block: (u32, u32),
    /// Its argument block.
    pub args: Args,
}

/// One step of a plan, run in order on the device's stream.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // a plan holds a handful of steps, built once per call
pub enum Step {
    /// A kernel launch.
    Kernel(Launch),
    /// A device-to-device copy of `bytes` bytes.
    Memcpy {
        /// Destination address.
        dst: u64,
        /// Source address.
        src: u64,
        /// Byte count.
        bytes: usize,
    },
}
