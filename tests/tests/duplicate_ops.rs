//! Two op definitions under one name are an error naming both, never link-order luck.
//! (Its own test binary: these definitions clash with the built-in `add` and `exp`.)

use tensor_ops::prelude::*;

/// Clashes with the built-in `add`.
#[tensor_op(dtypes = [f32])]
pub fn add<T: Num>(a: T, b: T) -> T {
    a - b
}

/// A 3-input op that clashes with the built-in 1-input `exp`.
#[tensor_op(dtypes = [f32])]
pub fn exp<T: Float>(a: T, b: T, c: T) -> T {
    a + b + c
}

mod first {
    use tensor_ops::prelude::*;
    /// One `gelu`.
    #[tensor_op(dtypes = [f32])]
    pub fn gelu<T: Float>(x: T) -> T {
        x
    }
}

mod second {
    use tensor_ops::prelude::*;
    /// Another `gelu`, with two inputs.
    #[tensor_op(dtypes = [f32])]
    pub fn gelu<T: Float>(x: T, y: T) -> T {
        x * y
    }
}

fn ones() -> Tensor {
    Tensor::ones(&[3], DType::F32, Device::Cpu).unwrap()
}

fn assert_names_both(err: Error, op: &str, places: [&str; 2]) {
    let msg = err.to_string();
    assert!(matches!(err, Error::DuplicateOp { .. }), "{msg}");
    assert!(msg.starts_with(&format!("{op}:")), "{msg}");
    for p in places {
        assert!(msg.contains(p), "{msg} should name {p}");
    }
}

#[test]
fn a_user_add_clashes_with_the_built_in() {
    let err = add(&ones(), &ones()).unwrap_err();
    assert_names_both(err, "add", ["duplicate_ops", "tensor_ops::builtin"]);
    let err = ones().add(&ones()).unwrap_err();
    assert_names_both(err, "add", ["duplicate_ops", "tensor_ops::builtin"]);
}

#[test]
fn a_user_exp_of_another_arity_clashes_too() {
    let err = exp(&ones(), &ones(), &ones()).unwrap_err();
    assert_names_both(err, "exp", ["duplicate_ops (", "tensor_ops::builtin"]);
    assert!(ones().exp().is_err());
}

#[test]
fn two_user_ops_of_one_name_name_both_modules() {
    let err = first::gelu(&ones()).unwrap_err();
    assert_names_both(err, "gelu", ["duplicate_ops::first", "duplicate_ops::second"]);
    let err = second::gelu(&ones(), &ones()).unwrap_err();
    assert_names_both(err, "gelu", ["duplicate_ops::first", "duplicate_ops::second"]);
    let names: Vec<&str> = tensor_ops::registry().duplicates().iter().map(|d| d.0).collect();
    assert_eq!(names, ["add", "exp", "gelu"]);
}

#[test]
fn other_ops_still_work() {
    assert_eq!(ones().mul(&ones()).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 3]);
}

#[test]
fn the_duplicate_error_says_how_to_rename() {
    let msg = add(&ones(), &ones()).unwrap_err().to_string();
    assert!(msg.contains("#[tensor_op(name = \"mycrate_add\")]"), "{msg}");
    assert!(msg.contains("Rust function keeps its name"), "{msg}");
}

#[test]
fn expr_call_of_a_duplicated_name_is_the_duplicate_error() {
    use tensor_ops::fuse::Expr;
    let x = Expr::input(&ones());
    let err = Expr::call("gelu", &[&x], &[]).unwrap_err();
    assert_names_both(err, "gelu", ["duplicate_ops::first", "duplicate_ops::second"]);
    let err = Expr::call("add", &[&x, &x], &[]).unwrap_err();
    assert_names_both(err, "add", ["duplicate_ops", "tensor_ops::builtin"]);
    let msg = Expr::call("no_such_op", &[&x], &[]).unwrap_err().to_string();
    assert!(msg.starts_with("Expr::call:") && msg.contains("`no_such_op`"), "{msg}");
}
