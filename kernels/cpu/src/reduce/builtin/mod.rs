//! The built-in reductions' CPU kernels: generic reducers (`reducers/mod.rs`, argmax/argmin in
//! `reducers/arg.rs`) over the accumulate types of `compute.rs` (SIMD folds, block
//! conversion, prefetch), and their registry rows (`rows.rs`) against the core's specs
//! (`tensor_core::registry::reductions`). Backend internals: only the rows are seen, through
//! the registry.

mod compute;
mod reducers;
mod rows;

pub(crate) use compute::{max_by_gt, Compute};
pub(crate) use rows::ensure_linked;
