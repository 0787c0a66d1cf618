//! The constants of a body, checked at compile time: literals (their type and value, f32
//! range), and integer literal arithmetic folded in i64 — one that overflows or divides by
//! zero is a spanned error (at run time every integer operation is total). Used by
//! [`crate::lower`].

use crate::errors::error;
use crate::ir::{Arith, Node, Scalar};
use crate::signature::ScalarTy;
use syn::{Expr, Lit};

/// The type (F64 for float, I64 for int, Bool) and value of a literal.
pub(crate) fn literal(lit: &Lit) -> syn::Result<(ScalarTy, Scalar)> {
    match lit {
        Lit::Float(f) => {
            if !matches!(f.suffix(), "" | "f32" | "f64") {
                return Err(error(f, "unsupported literal suffix"));
            }
            if f.base10_digits().parse::<f64>().map_or(true, f64::is_infinite) {
                return Err(error(f, "float literal out of the range of f64"));
            }
            Ok((ScalarTy::F64, Scalar::Float(f.base10_digits().to_string())))
        }
        Lit::Int(i) => {
            if !matches!(i.suffix(), "" | "u8" | "i8" | "i16" | "i32" | "i64" | "u16" | "u32") {
                return Err(error(i, "unsupported literal suffix"));
            }
            let v = i.base10_parse::<i64>().map_err(|_| error(i, "integer literal out of the range of i64"))?;
            Ok((ScalarTy::I64, Scalar::Int(v)))
        }
        Lit::Bool(b) => Ok((ScalarTy::Bool, Scalar::Bool(b.value))),
        other => Err(error(other, "only numeric and `bool` literals are allowed in a #[tensor_op] body")),
    }
}

/// True for the literal `9223372036854775808` (2^63), which a body may only write negated:
/// `-9223372036854775808` is `i64::MIN` (an i64 literal cannot hold 2^63 itself).
pub(crate) fn is_i64_min_literal(e: &Expr) -> bool {
    matches!(e, Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. })
        if matches!(i.suffix(), "" | "i64") && i.base10_parse::<u64>().is_ok_and(|v| v == 1 << 63))
}

/// Errors of integer constant expressions.
pub(crate) const OVERFLOW: &str =
    "this constant integer expression overflows i64 (integer literals are i64; constants are checked at compile time)";
pub(crate) const DIV_ZERO: &str =
    "this constant integer expression divides by zero (constants are checked at compile time)";

/// `a op b` in i64, or why it has no value.
pub(crate) fn fold(op: Arith, a: i64, b: i64) -> Result<i64, &'static str> {
    match op {
        Arith::Add => a.checked_add(b).ok_or(OVERFLOW),
        Arith::Sub => a.checked_sub(b).ok_or(OVERFLOW),
        Arith::Mul => a.checked_mul(b).ok_or(OVERFLOW),
        Arith::Div if b == 0 => Err(DIV_ZERO),
        Arith::Div => a.checked_div(b).ok_or(OVERFLOW),
    }
}

/// The i64 value of an integer constant expression (integer literals under `+ - * /` and
/// unary `-`): `None` when `s` is not one, `Some(Err(why))` when it overflows i64 or
/// divides by zero.
pub(crate) fn const_int(s: &Scalar) -> Option<Result<i64, &'static str>> {
    Some(match s {
        Scalar::Int(v) => Ok(*v),
        Scalar::Neg(a) => const_int(a)?.and_then(|a| a.checked_neg().ok_or(OVERFLOW)),
        Scalar::Arith(op, a, b) => {
            let (a, b) = (const_int(a)?, const_int(b)?);
            a.and_then(|a| b.and_then(|b| fold(*op, a, b)))
        }
        Scalar::Param(_) | Scalar::Float(_) | Scalar::Bool(_) => return None,
    })
}

/// [`const_int`] of a value node built only from integer literals (`2 * 3` as a value).
pub(crate) fn const_int_node(n: &Node) -> Option<Result<i64, &'static str>> {
    Some(match n {
        Node::FromScalar(ScalarTy::I64, s) | Node::Int(s) => return const_int(s),
        Node::Neg(a) | Node::IntNeg(a) => const_int_node(a)?.and_then(|a| a.checked_neg().ok_or(OVERFLOW)),
        Node::Arith(op, a, b) | Node::IntArith(op, a, b) => {
            let (a, b) = (const_int_node(a)?, const_int_node(b)?);
            a.and_then(|a| b.and_then(|b| fold(*op, a, b)))
        }
        _ => return None,
    })
}

/// The error of a constant integer expression `at` that has no i64 value.
pub(crate) fn check_const(folded: Option<Result<i64, &'static str>>, at: &dyn quote::ToTokens) -> syn::Result<()> {
    match folded {
        Some(Err(why)) => Err(error(at, why)),
        _ => Ok(()),
    }
}

/// A finite float literal whose f32 rounding is infinite cannot be a `from_f32` argument.
pub(crate) fn check_f32_range(digits: &str, at: &syn::ExprLit) -> syn::Result<()> {
    let v: f64 = digits.parse().unwrap_or(f64::INFINITY);
    if v.is_finite() && (v as f32).is_infinite() {
        return Err(error(
            at,
            format!(
                "`{}` is out of the range of f32 (it would become infinity); use `T::from_f64(..)` for values beyond \
                 ±3.4e38",
                quote::ToTokens::to_token_stream(at)
            ),
        ));
    }
    Ok(())
}

/// The error for an expression outside the body language.
pub(crate) fn unsupported(e: &Expr) -> syn::Error {
    let what = match e {
        Expr::Loop(_) | Expr::While(_) | Expr::ForLoop(_) => "loops are",
        Expr::Macro(_) => "macros are",
        Expr::Return(_) => "`return` is",
        Expr::Break(_) | Expr::Continue(_) => "`break`/`continue` are",
        Expr::Index(_) => "indexing is",
        Expr::Closure(_) => "closures are",
        Expr::Reference(_) | Expr::RawAddr(_) => "references are",
        Expr::Assign(_) => "assignment is",
        Expr::Match(_) => "`match` is",
        Expr::Cast(_) => "`as` casts are (use `T::from_f32(..)` etc.)",
        Expr::Field(_) => "field access is",
        Expr::Tuple(_) => "tuples are",
        Expr::Array(_) | Expr::Repeat(_) => "arrays are",
        Expr::Struct(_) => "struct literals are",
        Expr::Range(_) => "ranges are",
        Expr::Try(_) => "`?` is",
        Expr::Async(_) | Expr::Await(_) => "async is",
        Expr::Unsafe(_) => "`unsafe` blocks are",
        Expr::Let(_) => "`let` expressions are",
        Expr::Yield(_) => "`yield` is",
        _ => "this expression is",
    };
    error(e, format!("{what} not allowed in a #[tensor_op] body"))
}
