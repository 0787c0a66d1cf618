//! Reads the callee of a call in a body (a map op's body or a reduction's functions) as an
//! [`OpPath`], and the spanned error for a call of something that cannot be an op.
//!
//! Whether a path names a `#[tensor_op]` map op is only known after name resolution, so the
//! generated code checks it (`__private::MapOp`, whose message says what a body may call);
//! what the macro can see from the path alone — a type's associated function such as
//! `f32::max`, a `std`/`core` function — is refused here.

use crate::errors::error;
use crate::ir::{Method, OpPath};
use syn::{ExprCall, ExprPath, Ident};

/// What a body may call, for messages.
pub fn what_a_body_may_call(tp: &Ident) -> String {
    let methods: Vec<String> = Method::ALL
        .iter()
        .map(|m| format!("`x.{}({})`", m.name(), if m.extra_args() == 1 { "y" } else { "" }))
        .collect();
    format!(
        "a #[tensor_op] body may call the elementwise ops defined with #[tensor_op] (`sigmoid(x)`, \
         `tensor_ops::relu(x)`, an op of this crate), the methods {}, and `{tp}::zero()`, `{tp}::one()`, \
         `{tp}::from_f32/from_f64/from_i64/from_bool(..)`",
        methods.join(", ")
    )
}

/// Primitive types: `f32::max(..)` names one of their associated functions, never an op.
const PRIMITIVES: &[&str] = &[
    "f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "bool", "char", "str", "Self",
];

/// The op path of the call `c` of `p`, or a spanned error when `p` cannot name a map op.
pub fn op_path(p: &ExprPath, c: &ExprCall, tp: &Ident) -> syn::Result<OpPath> {
    if p.qself.is_some() {
        return Err(error(&c.func, format!("not an op: {}", what_a_body_may_call(tp))));
    }
    let first = &p.path.segments[0].ident;
    let is_type = PRIMITIVES.iter().any(|t| first == t) || *first == *tp;
    let std_fn = p.path.segments.len() > 1 && (first == "std" || first == "core" || first == "alloc");
    if is_type || std_fn {
        let last = &p.path.segments.last().expect("a path has a segment").ident;
        let hint = match Method::ALL.iter().find(|m| last == m.name()) {
            Some(m) if m.extra_args() == 1 => format!(" (write `a.{}(b)`)", m.name()),
            Some(m) => format!(" (write `x.{}()`)", m.name()),
            None => String::new(),
        };
        let path = quote::ToTokens::to_token_stream(&p.path).to_string().replace(' ', "");
        return Err(error(&c.func, format!("`{path}` is not a #[tensor_op] op{hint}: {}", what_a_body_may_call(tp))));
    }
    let mut segments = Vec::new();
    for seg in &p.path.segments {
        if !seg.arguments.is_none() {
            return Err(error(
                &seg.arguments,
                "generic arguments are not allowed here: the op computes in this op's element type",
            ));
        }
        segments.push(seg.ident.clone());
    }
    Ok(OpPath { leading_colon: p.path.leading_colon.is_some(), segments })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(src: &str) -> syn::Result<OpPath> {
        let c: ExprCall = syn::parse_str(src).unwrap();
        let syn::Expr::Path(p) = &*c.func else { panic!("a path") };
        op_path(p, &c, &syn::parse_str("T").unwrap())
    }

    #[test]
    fn type_paths_are_refused_and_op_paths_read() {
        let e = read("f32::max(x, y)").unwrap_err().to_string();
        assert!(e.contains("`f32::max` is not a #[tensor_op] op (write `a.max(b)`)") && e.contains("x.exp()"), "{e}");
        assert!(read("std::f32::exp(x)").is_err());
        assert!(read("T::foo::bar(x)").is_err());
        assert_eq!(read("tensor_ops::relu(x)").unwrap().text(), "tensor_ops::relu");
        assert_eq!(read("::my_crate::gelu(x, 0.5)").unwrap().text(), "::my_crate::gelu");
    }
}
