//! CPU engines.

pub mod alloc;
pub mod convert;
pub mod copy;
pub mod elementwise;
pub mod fill;
pub mod map;
pub mod parallel;
pub mod register;
pub mod value;
