//! Integration tests live in `tests/tests`; [`calls`] holds what several of them share.
//! This file also compiles and runs the README's example as a doc test, so the README stays
//! true.

pub mod calls;

#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
