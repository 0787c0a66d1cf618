//! Binary arithmetic ops (NumPy broadcasting, PyTorch promotion).

use tensor_macros::tensor_op;

/// `a + b` (integers wrap; on `bool`, logical or, as PyTorch).
#[tensor_op(dtypes = [numeric, bool, quantized])]
pub fn add<T: Num>(a: T, b: T) -> T {
    a + b
}

/// `a - b` (integers wrap).
#[tensor_op(dtypes = [numeric, quantized])]
pub fn sub<T: Num>(a: T, b: T) -> T {
    a - b
}

/// `a * b` (integers wrap; on `bool`, logical and, as PyTorch). On sparse operands the
/// result is specified where every sparse operand is (`sparse_intersection`).
#[tensor_op(sparse_intersection, dtypes = [numeric, bool, quantized])]
pub fn mul<T: Num>(a: T, b: T) -> T {
    a * b
}

/// True division `a / b`; integer inputs compute in f32 (as PyTorch's `div`).
#[tensor_op(dtypes = [float, quantized])]
pub fn div<T: Float>(a: T, b: T) -> T {
    a / b
}

/// Elementwise maximum, NaN-propagating (NumPy's `maximum`; on `bool`, logical or).
#[tensor_op(dtypes = [numeric, bool, quantized])]
pub fn maximum<T: Num>(a: T, b: T) -> T {
    a.max(b)
}

/// Elementwise minimum, NaN-propagating (NumPy's `minimum`; on `bool`, logical and).
#[tensor_op(dtypes = [numeric, bool, quantized])]
pub fn minimum<T: Num>(a: T, b: T) -> T {
    a.min(b)
}

/// `a` to the power `b`: `powf` for floats; wrapping integer power for integers (a
/// negative exponent gives `1 / a^|b|` truncated: 0 unless `|a| == 1`).
#[tensor_op(dtypes = [numeric])]
pub fn pow<T: Num>(a: T, b: T) -> T {
    a.pow(b)
}
