//! trybuild tests of `#[tensor_op]`: wrong definitions whose errors must point at the
//! offending token (`tests/ui/fail/*.stderr`). Only `compile_fail` cases live here, so
//! trybuild checks them with `cargo check` (no second build of every dependency); the
//! definitions that must compile and run are `macro_ui_pass.rs`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}
