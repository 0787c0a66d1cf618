//! # tensor-ops
//!
//! Code-generated, typed tensor kernels. One `#[tensor_op]` definition becomes a SIMD CPU
//! kernel per dtype, CUDA C per dtype, public functions (`op`, `op_`, `op_out`) and rows
//! in the dispatch registry.
//!
//! ```
//! use tensor_ops::prelude::*;
//! let a = Tensor::arange(0, 6, 1, DType::F32, Device::Cpu).unwrap().view(&[2, 3]).unwrap();
//! let b = Tensor::from_vec(vec![10f32, 20., 30.], &[3]).unwrap();
//! let c = a.add(&b).unwrap();
//! assert_eq!(c.to_vec::<f32>().unwrap(), vec![10., 21., 32., 13., 24., 35.]);
//! ```
//!
//! # User's guide
//!
//! ## Defining an op
//! Write a small generic function under [`tensor_op`]; it may live in your own crate and
//! registers itself like a built-in. The body language (arithmetic, comparisons, `if`,
//! `let`, the float methods, `#[param]` scalars, `T::from_f64(..)`…) is documented on the
//! [`tensor_op`] attribute. Integer arithmetic in a body is total: it wraps, and `/` by zero
//! gives 0; constant expressions that overflow are compile errors.
//!
//! ```
//! use tensor_ops::prelude::*;
//! /// `x` clamped to `[lo, hi]`.
//! #[tensor_op(dtypes = [numeric])]
//! fn clamp_to<T: Num>(x: T, #[param] lo: f64, #[param] hi: f64) -> T {
//!     if x < T::from_f64(lo) { T::from_f64(lo) } else if x > T::from_f64(hi) { T::from_f64(hi) } else { x }
//! }
//! let t = Tensor::from_vec(vec![-5i32, 3, 99], &[3]).unwrap();
//! assert_eq!(clamp_to(&t, 0.0, 10.0).unwrap().to_vec::<i32>().unwrap(), vec![0, 3, 10]);
//! ```
//!
//! Op names are global across crates: defining a second op named like an existing one makes
//! calls of either an [`Error::DuplicateOp`] naming both definitions.
//!
//! A body may call other elementwise ops by their path; the callee is inlined into the SIMD
//! loop and the CUDA C (one pass over memory):
//!
//! ```
//! use tensor_ops::prelude::*;
//! #[tensor_op(dtypes = [float])]
//! fn swish_k<T: Float>(x: T, #[param] k: f32) -> T {
//!     x * tensor_ops::sigmoid(x * T::from_f32(k))
//! }
//! let t = Tensor::from_vec(vec![0.0f32, 2.0], &[2]).unwrap();
//! assert_eq!(swish_k(&t, 1.0).unwrap().to_vec::<f32>().unwrap()[0], 0.0);
//! ```
//!
//! ## Fused chains
//! [`fuse::Expr`] evaluates a chain of elementwise ops (optionally ending in a reduction) in
//! one pass over memory, with the eager chain's exact results: `(&x * &y + &z).relu().eval()`.
//!
//! ## Reductions
//!
//! Built in: `sum`, `prod`, `mean`, `amax`, `amin`, `all`, `any`, `logsumexp` (`&dims,
//! keepdim`), `var`/`std` (`&dims, correction, keepdim`), `argmax`/`argmin` (`dim,
//! keepdim`), `softmax`/`log_softmax` (`dim`), the `_all` forms and every `_out` form, on
//! every dtype and any view ([`TensorReductions`]). Your own, from a module of four
//! functions:
//!
//! ```
//! use tensor_ops::prelude::*;
//!
//! /// How many elements are non-zero.
//! #[tensor_op(reduce, dtypes = [all])]
//! pub mod count_nonzero {
//!     fn identity<T: Num>() -> i64 { 0 }
//!     fn fold<T: Num>(acc: i64, x: T) -> i64 { acc + (x != T::zero()) as i64 }
//!     fn combine<T: Num>(a: i64, b: i64) -> i64 { a + b }
//!     fn finish<T: Num>(acc: i64) -> i64 { acc }
//! }
//!
//! let a = Tensor::from_vec(vec![0i8, 3, 0, 1, 2, 0], &[2, 3]).unwrap();
//! assert_eq!(count_nonzero(&a, &[1], false).unwrap().to_vec::<i64>().unwrap(), vec![1, 2]);
//! assert_eq!(a.t().unwrap().sum(&[0], false).unwrap().to_vec::<i64>().unwrap(), vec![3, 3]);
//! ```
//!
//! ## Dtypes and promotion
//! Twelve dtypes ([`DType`]): bool, u8, i8, i16, i32, i64, f8e4m3, f8e5m2, f16, bf16, f32,
//! f64 (the 8-bit floats and f16/bf16 compute in f32, rounding once per result). Binary ops
//! promote as PyTorch does ([`tensor_core::result_type`], [`call_types`]); a 0-dim operand
//! counts only when its category is higher (`i32[n] + f64[] → f64`); float-only ops
//! (`T: Float`) compute integer inputs in f32; comparisons return bool. `_out`/in-place
//! targets accept any dtype the result can be cast to ([`can_cast`]): the result is rounded
//! to its own dtype, then cast (`exp_out(&f16, &f32_out)` holds the f16 result widened, as
//! in PyTorch and NumPy).
//!
//! ## Views and storage sharing
//! A [`Tensor`] is a strided view of a refcounted [`tensor_core::Storage`]: `view`,
//! `transpose`, `slice` (with steps), `flip`, `expand`, `as_strided`… share bytes. Mutating
//! ops (`fill_`, `copy_`, `op_`, `op_out`) take `&self` and lock the storage; a write target
//! whose elements overlap (an expanded view) is an error, and an input partially overlapping
//! the output is read from a private copy. Holding a `Storage::read`/`write` guard while
//! calling an op on the same storage is an [`Error::Locked`], not a hang. A storage marked
//! read-only (mapped files) refuses every write with [`Error::ReadOnly`].
//!
//! ## Errors
//! Every fallible call returns [`Result`] with an [`Error`] naming the op, the shapes,
//! dtypes or dims involved and what would be valid. No input makes a call panic.
//!
//! ## The performance model
//! Elementwise ops, copies and fills run at memory bandwidth on large tensors (SIMD, split
//! over the calling thread and rayon above 32K elements; outputs above 16 MiB are written
//! with non-temporal stores so they do not evict the inputs). Strided and transposed inputs
//! are staged through cache-sized blocks or relaid out by the tiled copy engine. New CPU
//! outputs come from a caching allocator (no page faults for sizes seen before): turn it off
//! with `TENSOR_OPS_CPU_CACHE=0` or [`set_cpu_cache_enabled`]`(false)` ([`empty_cpu_cache`] frees what it holds).
//! A call costs a few hundred nanoseconds of dispatch, checks and locking, so tiny tensors
//! are dominated by it. `TENSOR_OPS_SIMD=baseline|avx2|avx512` lowers the instruction set.
//!
//! ## CUDA, and checking it without a GPU
//! With the default `cuda` feature, `Device::Cuda(n)` tensors run the same ops through
//! NVRTC-compiled kernels (the driver and NVRTC are loaded at run time; without them CUDA
//! calls return `Err`). The tests compile every generated kernel with NVRTC and run the same
//! CUDA C on the CPU through a shim; GPU-only tests are `#[ignore]`d — run them with
//! `cargo test --workspace -- --ignored` on a machine with a GPU. `default-features = false`
//! drops the CUDA backend (and cudarc) entirely.
//!
//! ## Interop
//! All three features are on by default (`default-features = false` drops them).
//! - feature `ndarray`: `Tensor::from_ndarray` adopts an `ArrayD` without copying,
//!   `with_ndarray_view[_mut]` lends a tensor as an ndarray view under its lock,
//!   `to_ndarray` copies;
//! - feature `safetensors`: `safetensors_io::load` maps a file into read-only tensors
//!   without copying, `safetensors_io::save` writes tensors;
//! - feature `dlpack`: `Tensor::to_dlpack` exports any view (CPU or CUDA, any strides) as a
//!   versioned DLPack managed tensor that keeps the storage alive until its deleter runs;
//!   `Tensor::from_dlpack` imports one as a view of the producer's memory, calling the
//!   producer's deleter once when the last view drops (its own export comes back as the
//!   exported storage; inconsistent headers and CPU bool bytes other than 0/1 are errors);
//!   the read-only flag maps to read-only storage both ways ([`DlpackTensor`]);
//! - [`Tensor::from_vec`] adopts a `Vec`, `tensor_core::Storage::from_external` adopts
//!   foreign memory with a deleter.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate self as tensor_ops;

mod builtin;
mod call;
mod compose;
pub mod fuse;
mod methods;
mod not_map;
mod reduce_methods;
mod rows;

pub use builtin::*;
pub use methods::TensorOps;
#[doc(hidden)]
pub use not_map::*;
pub use reduce_methods::TensorReductions;
pub use tensor_core::call::{call_types, can_cast, CallTypes, Output};
/// `.safetensors` load (memory-mapped, zero-copy) and save (feature `safetensors`).
#[cfg(feature = "safetensors")]
pub use tensor_core::safetensors_io;
#[cfg(feature = "dlpack")]
pub use tensor_core::DlpackTensor;
pub use tensor_core::{
    self, quantize_per_channel, quantize_per_tensor, DType, Device, Error, Layout, Quantizer, Registry, Result, Scalar,
    Tensor, F8E4M3, F8E5M2,
};

/// The dispatch registry with every kernel linked into this program: each op × device ×
/// layout and the dtypes it has kernels for.
///
/// ```
/// let reg = tensor_ops::registry();
/// assert!(reg.row_set("add", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::Strided).is_some());
/// ```
pub fn registry() -> &'static Registry {
    call::link_backends();
    tensor_core::registry()
}
#[doc = include_str!("tensor_op.md")]
pub use tensor_macros::tensor_op;

/// Calls of any registered op by its spec, as the functions `#[tensor_op]` generates make
/// them: the core's one call path with the backends linked. For code that picks an op at
/// run time (a test comparing one op's rows, an interpreter); [`registry`] finds specs by
/// name.
///
/// ```
/// use tensor_ops::prelude::*;
/// let spec = tensor_ops::registry().op("add").unwrap();
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
/// let c = tensor_ops::by_spec::call_map_new(spec, &[&a, &a], &[]).unwrap();
/// assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
/// ```
pub mod by_spec {
    pub use crate::call::{call_map_inplace, call_map_new, call_map_out, call_reduce, call_reduce_new};
}

/// Turns the CPU caching allocator on or off (off also frees every cached block; the
/// environment variable `TENSOR_OPS_CPU_CACHE=0` starts it off). New CPU outputs reuse freed
/// blocks of their size class while it is on, so repeated calls take no page faults.
///
/// ```
/// tensor_ops::set_cpu_cache_enabled(false);
/// let t = tensor_ops::Tensor::from_vec(vec![1.0f32; 8], &[8]).unwrap();
/// assert_eq!(tensor_ops::TensorOps::add(&t, &t).unwrap().to_vec::<f32>().unwrap(), vec![2.0; 8]);
/// tensor_ops::set_cpu_cache_enabled(true);
/// ```
pub fn set_cpu_cache_enabled(on: bool) {
    tensor_kernels_cpu::alloc::set_enabled(on);
}

/// Frees every block the CPU caching allocator holds (the cache stays on).
///
/// ```
/// tensor_ops::empty_cpu_cache();
/// ```
pub fn empty_cpu_cache() {
    tensor_kernels_cpu::alloc::empty_cache();
}

/// Everything a user needs: `use tensor_ops::prelude::*;`.
pub mod prelude {
    pub use crate::methods::TensorOps;
    pub use crate::reduce_methods::TensorReductions;
    pub use crate::{tensor_op, DType, Device, Error, Layout, Result, Scalar, Tensor};
}

#[doc(hidden)]
pub mod __private {
    //! Paths used by code that `#[tensor_op]` generates (and nothing else: tests and benches
    //! depend on the core and the backends directly). Not a stable API.
    pub use crate::__concat_source as concat_source;
    pub use crate::call::{call_map_inplace, call_map_new, call_map_out, call_reduce, call_reduce_new};
    pub use crate::compose::{cuda_source_of, lists_dtype, ComposeInput, ComposeParam, Lit, NotAMapOp};
    /// Compile-time helpers of composed bodies.
    pub mod compose {
        pub use crate::compose::{join, total_len};
    }
    pub use half;
    pub use inventory;
    pub use tensor_core;
    pub use tensor_core::call::ReduceDims;
    pub use tensor_core::registry::{Accumulate, ReduceOutput, ReduceSpec, SparseReduce};
    pub use tensor_core::registry::{KernelRow, OpSpec, RowCache};
    pub use tensor_core::Element;
    pub use tensor_core::{DType, DeviceKind, Layout, Result, Scalar, Tensor, F8E4M3, F8E5M2};
    pub use tensor_kernels_cpu;
    pub use tensor_kernels_cpu::byte_codes::ByteCodes;
    pub use tensor_kernels_cpu::byte_map::map_bytes;
    pub use tensor_kernels_cpu::kernel::{MapKernel, Store};
    pub use tensor_kernels_cpu::map::{map_block, pred_block, MapBody, PredBody};
    pub use tensor_kernels_cpu::reduce::{
        drive as drive_reduce, drive_fused as drive_reduce_fused, fold_run_unindexed, ReduceKernel, ReduceValue,
        Reducer,
    };
    pub use tensor_kernels_cpu::value::{Lane, Value};
    #[cfg(feature = "cuda")]
    pub use tensor_kernels_cuda::kernel::{CudaMapKernel, CudaReduceKernel};

    /// Keeps its tokens (the CUDA rows `#[tensor_op]` emits) when tensor-ops is built with
    /// its `cuda` feature, and drops them without it.
    #[cfg(feature = "cuda")]
    #[macro_export]
    #[doc(hidden)]
    macro_rules! __tensor_ops_if_cuda {
        ($($tokens:tt)*) => { $($tokens)* };
    }
    /// Keeps its tokens (the CUDA rows `#[tensor_op]` emits) when tensor-ops is built with
    /// its `cuda` feature, and drops them without it.
    #[cfg(not(feature = "cuda"))]
    #[macro_export]
    #[doc(hidden)]
    macro_rules! __tensor_ops_if_cuda {
        ($($tokens:tt)*) => {};
    }
    pub use crate::__tensor_ops_if_cuda as if_cuda;
    pub use crate::__tensor_ops_not_a_map_op as not_a_map_op;
    pub use crate::__tensor_ops_register_map_rows as register_map_rows;
    pub use crate::__tensor_ops_register_quantized_map_rows as register_quantized_map_rows;
    pub use crate::__tensor_ops_register_reduce_rows as register_reduce_rows;
}
