//! trybuild tests of `#[tensor_op]`: definitions that must compile, and wrong ones whose
//! errors must point at the offending token (`tests/ui/fail/*.stderr`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
