//! Comparisons: the result dtype is `Bool`; inputs are promoted first.

use tensor_macros::tensor_op;

/// `a == b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn eq<T: Element>(a: T, b: T) -> bool {
    a == b
}

/// `a != b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn ne<T: Element>(a: T, b: T) -> bool {
    a != b
}

/// `a < b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn lt<T: Element>(a: T, b: T) -> bool {
    a < b
}

/// `a <= b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn le<T: Element>(a: T, b: T) -> bool {
    a <= b
}

/// `a > b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn gt<T: Element>(a: T, b: T) -> bool {
    a > b
}

/// `a >= b`.
#[tensor_op(dtypes = [all, quantized])]
pub fn ge<T: Element>(a: T, b: T) -> bool {
    a >= b
}
