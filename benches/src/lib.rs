//! Bench support.
