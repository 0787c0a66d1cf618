//! Integration tests live in `tests/tests` (calls by spec go through `tensor_ops::by_spec`).
//! This file compiles and runs the README's examples as doc tests, so the README stays true.

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
