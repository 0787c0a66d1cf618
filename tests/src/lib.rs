//! Integration tests live in `tests/tests`. This file also compiles and runs the README's
//! example as a doc test, so the README stays true.

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
