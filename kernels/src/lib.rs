//! # tensor-kernels
//!
//! The loop engines behind tensor-ops. CPU: the [`cpu::value::Value`] lane algebra that
//! `#[tensor_op]` bodies are written against, block kernels, the strided elementwise driver,
//! copy/cast and fill engines. CUDA: the runtime, NVRTC compilation and kernel templates.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod cpu;
pub mod cuda;
