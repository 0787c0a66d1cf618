//! Exchanging tensors with other libraries without copying (cargo features).

#[cfg(feature = "ndarray")]
mod ndarray;

#[cfg(feature = "dlpack")]
mod dlpack;
#[cfg(feature = "dlpack")]
pub use dlpack::DlpackTensor;

#[cfg(feature = "safetensors")]
pub mod safetensors_io;
