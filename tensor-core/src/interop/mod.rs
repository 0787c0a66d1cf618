//! Exchanging tensors with other libraries without copying (cargo features).

#[cfg(feature = "ndarray")]
mod ndarray;
