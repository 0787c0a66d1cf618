//! The CUDA backend's elementwise kernel kind: a `__device__` function in CUDA C that the
//! launcher wraps into contiguous / strided kernels (`launch.rs`, which also makes it a
//! `KernelImpl`).

use tensor_core::DType;

/// A generated elementwise kernel for one dtype on CUDA (what `#[tensor_op]` registers).
///
/// ```
/// use tensor_kernels_cuda::kernel::CudaMapKernel;
/// use tensor_core::{registry::KernelImpl, DType};
/// let k = CudaMapKernel { compute: DType::F32, output: DType::F32, function: "f", source: "" };
/// assert_eq!(k.kind(), "cuda-map");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CudaMapKernel {
    /// Dtype the body computes in (f32 for f16/bf16 rows, like the CPU).
    pub compute: DType,
    /// Dtype of the result.
    pub output: DType,
    /// Name of the `__device__` function in `source`.
    pub function: &'static str,
    /// CUDA C source of the function: `OUT f(IN a, IN b, PARAM p0, ...)`.
    pub source: &'static str,
}

/// A reduction on CUDA (what the built-in reductions register): a reducer struct template
/// of the CUDA C reduction header (`kernels/cuda/include/reduce.cuh`: `identity`, `fold`,
/// `combine`, `finish`, a warp exchange), instantiated for the row's compute dtype and wrapped
/// by the launcher into row / column / second-pass kernels (`reduce_plan.rs`).
///
/// ```
/// use tensor_kernels_cuda::kernel::CudaReduceKernel;
/// use tensor_core::{registry::KernelImpl, DType};
/// let k = CudaReduceKernel { reducer: "tops_red_amax", source: "", compute: DType::F32, output: DType::F32 };
/// assert_eq!(k.kind(), "cuda-reduce");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CudaReduceKernel {
    /// Name of the reducer struct template (`template <class C> struct NAME`).
    pub reducer: &'static str,
    /// CUDA C defining it, when it is not one of the header's built-ins ("" for those).
    pub source: &'static str,
    /// Dtype it accumulates in (its template argument `C`).
    pub compute: DType,
    /// Dtype of the result.
    pub output: DType,
}
