//! # tensor-kernels
//!
//! The loop engines behind tensor-ops. CPU: the [`cpu::value::Value`] lane algebra that
//! `#[tensor_op]` bodies are written against, block kernels, the strided elementwise driver,
//! copy/cast and fill engines. CUDA: the runtime, NVRTC compilation and kernel templates.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod cpu;
pub mod cuda;

/// Forces the registrations of this crate (copy/fill rows, allocators, the CUDA runtime)
/// into the final link; `inventory` only sees object code that is linked.
pub fn ensure_linked() {
    cpu::register::ensure_linked();
    cuda::register::ensure_linked();
}
