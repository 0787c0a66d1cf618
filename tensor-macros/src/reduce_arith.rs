//! The arithmetic of reduction bodies as the library defines it: every `a + b`, `a - b`,
//! `a * b`, `a / b`, `a % b`, their compound assignments and `-x` (of anything but a
//! literal) of a reduction's four functions becomes a call of the CPU backend's body
//! arithmetic (`tensor_kernels_cpu::reduce::body`): integers wrap, an integer divided by
//! zero is 0 — the rule map bodies follow, now also for the plain integers (`i64` counts,
//! `n`) a reduction body declares. (The CUDA translation already calls the prelude's
//! `tops_*` functions, which follow the same rule.)

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, UnOp};

/// Rewrites the arithmetic of `block` in place.
pub fn rewrite(block: &mut syn::Block) {
    Arith.visit_block_mut(block);
}

struct Arith;

fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Paren(p) => is_literal(&p.expr),
        Expr::Group(g) => is_literal(&g.expr),
        Expr::Unary(u) => matches!(u.op, UnOp::Neg(_)) && is_literal(&u.expr),
        _ => false,
    }
}

/// The body-arithmetic function of `op`, and whether it assigns.
fn function(op: &BinOp) -> Option<(TokenStream, bool)> {
    let body = quote!(::tensor_ops::__private::body);
    Some(match op {
        BinOp::Add(_) => (quote!(#body::add), false),
        BinOp::Sub(_) => (quote!(#body::sub), false),
        BinOp::Mul(_) => (quote!(#body::mul), false),
        BinOp::Div(_) => (quote!(#body::div), false),
        BinOp::Rem(_) => (quote!(#body::rem), false),
        BinOp::AddAssign(_) => (quote!(#body::add), true),
        BinOp::SubAssign(_) => (quote!(#body::sub), true),
        BinOp::MulAssign(_) => (quote!(#body::mul), true),
        BinOp::DivAssign(_) => (quote!(#body::div), true),
        BinOp::RemAssign(_) => (quote!(#body::rem), true),
        _ => return None,
    })
}

impl VisitMut for Arith {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Inner expressions first, so nested arithmetic is rewritten too.
        visit_mut::visit_expr_mut(self, e);
        match e {
            Expr::Binary(b) => {
                let Some((f, assigns)) = function(&b.op) else { return };
                // Two literals: a constant, typed by its context as Rust types it.
                if is_literal(&b.left) && is_literal(&b.right) {
                    return;
                }
                let (l, r) = (&b.left, &b.right);
                *e = if assigns { syn::parse_quote!(#l = #f(#l, #r)) } else { syn::parse_quote!(#f(#l, #r)) };
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) && !is_literal(&u.expr) => {
                let x = &u.expr;
                *e = syn::parse_quote!(::tensor_ops::__private::body::neg(#x));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn rewritten(src: &str) -> String {
        let mut block: syn::Block = syn::parse_str(src).unwrap();
        rewrite(&mut block);
        block.to_token_stream().to_string().replace(' ', "")
    }

    #[test]
    fn arithmetic_becomes_body_calls_and_literals_stay() {
        let s = rewritten("{ let a = acc + x * 2; a / n }");
        assert!(s.contains("body::add(acc,::tensor_ops::__private::body::mul(x,2))"), "{s}");
        assert!(s.contains("body::div(a,n)"), "{s}");
        let s = rewritten("{ acc.0 += 1; (-1, -x, 2 * 3) }");
        assert!(s.contains("acc.0=::tensor_ops::__private::body::add(acc.0,1)"), "{s}");
        assert!(s.contains("(-1,::tensor_ops::__private::body::neg(x),2*3)"), "{s}");
        assert_eq!(rewritten("{ a < b && c == d }"), "{a<b&&c==d}");
    }
}
