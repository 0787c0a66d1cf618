//! CPU engines.

pub mod elementwise;
pub mod map;
pub mod value;
