//! Unary ops. Float-only ones (`T: Float`) compute integer and bool inputs in f32.

use tensor_macros::tensor_op;

/// Negation, `-x` (integers wrap: `-i32::MIN == i32::MIN`).
#[tensor_op(dtypes = [numeric, quantized])]
pub fn neg<T: Num>(x: T) -> T {
    -x
}

/// Absolute value, `|x|` (integers wrap: `abs(i32::MIN) == i32::MIN`).
#[tensor_op(dtypes = [numeric, quantized])]
pub fn abs<T: Num>(x: T) -> T {
    x.abs()
}

/// e^x.
#[tensor_op(dtypes = [float])]
pub fn exp<T: Float>(x: T) -> T {
    x.exp()
}

/// Natural logarithm (`log(0) = -inf`, `log(x<0) = NaN`).
#[tensor_op(dtypes = [float])]
pub fn log<T: Float>(x: T) -> T {
    x.ln()
}

/// Square root (`sqrt(x<0) = NaN`).
#[tensor_op(dtypes = [float])]
pub fn sqrt<T: Float>(x: T) -> T {
    x.sqrt()
}

/// `max(x, 0)`; NaN stays NaN.
#[tensor_op(dtypes = [numeric, quantized])]
pub fn relu<T: Num>(x: T) -> T {
    if x < T::zero() {
        T::zero()
    } else {
        x
    }
}

/// Logistic function `1 / (1 + e^-x)` (the body method `sigmoid` gives the bits of that
/// expression with a cheaper scaling of e^-x on the CPU).
#[tensor_op(dtypes = [float, quantized])]
pub fn sigmoid<T: Float>(x: T) -> T {
    x.sigmoid()
}

/// Hyperbolic tangent.
#[tensor_op(dtypes = [float, quantized])]
pub fn tanh<T: Float>(x: T) -> T {
    x.tanh()
}

/// Sine.
#[tensor_op(dtypes = [float])]
pub fn sin<T: Float>(x: T) -> T {
    x.sin()
}

/// Cosine.
#[tensor_op(dtypes = [float])]
pub fn cos<T: Float>(x: T) -> T {
    x.cos()
}

/// SiLU (swish), `x · sigmoid(x)`: composed from [`sigmoid`], so one pass over memory.
#[tensor_op(dtypes = [float, quantized])]
pub fn silu<T: Float>(x: T) -> T {
    x * sigmoid(x)
}
