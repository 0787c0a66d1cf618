//! What composed op bodies need: `sigmoid(x)` inside a `#[tensor_op]` body calls
//! `sigmoid::element::<V>(..)` (the callee's body on lane values, inlined into the caller's
//! SIMD loop) and splices the callee's CUDA C function into the caller's source at compile
//! time. Used by generated code only (through `__private`).

use tensor_core::{DType, Element, Scalar};
use tensor_kernels_cpu::value::Value;

/// A literal or a param of the calling op, passed to a called op (`leaky_relu(x, 0.1)`).
#[derive(Debug, Clone, Copy)]
pub struct Lit(pub Scalar);

/// What a called op's tensor argument accepts: an element value or a [`Lit`] (converted as
/// the caller's own literals are: `V::from_f64`, `V::from_i64`, `V::from_bool`).
#[diagnostic::on_unimplemented(
    message = "a #[tensor_op] argument takes an element value or a literal, not `{Self}`",
    label = "not an element value"
)]
pub trait ComposeInput<V> {
    /// The value.
    fn input(self) -> V;
}

impl<V: Value> ComposeInput<V> for V {
    #[inline(always)]
    fn input(self) -> V {
        self
    }
}

impl<V: Value> ComposeInput<V> for Lit {
    #[inline(always)]
    fn input(self) -> V {
        match self.0 {
            Scalar::Float(f) => V::from_f64(f),
            Scalar::Int(i) => V::from_i64(i),
            Scalar::Bool(b) => V::from_bool(b),
        }
    }
}

/// What a called op's `#[param]` accepts: a literal or a param of the caller (as a
/// [`Lit`]), converted to the param's type exactly as a call's `Scalar` params are.
#[diagnostic::on_unimplemented(
    message = "a #[param] of a called op takes a literal or a #[param] of the calling op, not an element value",
    label = "an element value here"
)]
pub trait ComposeParam<P> {
    /// The param value.
    fn param(self) -> P;
}

impl<P: Element> ComposeParam<P> for Lit {
    #[inline(always)]
    fn param(self) -> P {
        self.0.to::<P>()
    }
}

/// What the `element` function of a reduction requires of its argument, and nothing has: a
/// body that calls a reduction (`l2_norm(x)` inside a `#[tensor_op]` body) fails here, with
/// a message saying what a body may call.
#[diagnostic::on_unimplemented(
    message = "a reduction cannot be called in a #[tensor_op] body: a body may call the elementwise ops defined \
               with #[tensor_op] (`sigmoid(x)`, `tensor_ops::relu(x)`, an op of this crate), the methods \
               `x.exp()`, `x.max(y)`, `x.sqrt()`, ... and `T::zero()`, `T::one()`, `T::from_f32(..)`, ...",
    label = "an argument of a reduction called in a body"
)]
pub trait NotAMapOp {
    /// Never called (no type implements the trait).
    fn never<V>(self) -> V;
}

/// Whether `dtypes` holds `d` (usable in `const` assertions).
pub const fn lists_dtype(dtypes: &[DType], d: DType) -> bool {
    let mut i = 0;
    while i < dtypes.len() {
        if dtypes[i] as u8 == d as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// The text `table` holds for `d`, or `""` (a missing dtype is reported by the
/// [`lists_dtype`] assertion beside it).
pub const fn cuda_source_of(table: &[(DType, &'static str)], d: DType) -> &'static str {
    let mut i = 0;
    while i < table.len() {
        if table[i].0 as u8 == d as u8 {
            return table[i].1;
        }
        i += 1;
    }
    ""
}

/// The total length of `parts`.
pub const fn total_len(parts: &[&str]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` joined into `N` bytes (`N` = [`total_len`]).
pub const fn join<const N: usize>(parts: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut at, mut i) = (0, 0);
    while i < parts.len() {
        let bytes = parts[i].as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            out[at] = bytes[j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// `concat!` for `&'static str` constants from any crate, at compile time:
/// `concat_source!(sigmoid::CUDA_SOURCE_F32, "...")`.
#[doc(hidden)]
#[macro_export]
macro_rules! __concat_source {
    ($($part:expr),+ $(,)?) => {{
        const PARTS: &[&str] = &[$($part),+];
        const LEN: usize = $crate::__private::compose::total_len(PARTS);
        const BYTES: [u8; LEN] = $crate::__private::compose::join::<LEN>(PARTS);
        match ::core::str::from_utf8(&BYTES) {
            Ok(s) => s,
            Err(_) => panic!("CUDA sources are UTF-8"),
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOINED: &str = crate::__concat_source!("ab", "", "cde");

    #[test]
    fn concat_source_joins_at_compile_time() {
        assert_eq!(JOINED, "abcde");
        assert!(lists_dtype(&[DType::F32, DType::I8], DType::I8));
        assert!(!lists_dtype(&[DType::F32], DType::F64));
        assert_eq!(cuda_source_of(&[(DType::F16, "x")], DType::F16), "x");
        assert_eq!(cuda_source_of(&[(DType::F16, "x")], DType::F32), "");
    }
}
