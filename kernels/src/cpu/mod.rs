//! CPU engines.

pub mod map;
pub mod value;
