//! The `#[tensor_op]` attribute.
