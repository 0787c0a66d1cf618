//! Loop engines.
