//! Rust emission of a lowered body over the `Value` lane algebra: a map op's body
//! (`fn call<V: Value>(&self, [x]: [V; 1]) -> V { .. }`, `V` possibly SIMD lanes) and a
//! reduction's functions (over the one-lane value of the accumulate dtype, whose masks
//! are `bool`).

use crate::cuda::normalize_float;
use crate::ir::{Arith, Body, CallArg, Cmp, Method, Node, OpPath, Scalar, Ty};
use crate::signature::ScalarTy;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

/// Emits the body expression; params are read from `self.<name>`, inputs are the
/// variables named `inputs`.
pub fn emit_rust(body: &Body, inputs: &[Ident], params: &[Ident]) -> TokenStream {
    let e = Emitter { inputs, params, locals: &body.locals, callees: &body.callees, value: quote!(V), branches: false };
    e.node(&body.root)
}

/// Emits one function of a reduction (`root`) over the one-lane value type `value`, whose
/// masks are `bool`: an `if` is a branch (of any type), not a select.
pub fn emit_rust_reduce(
    root: &Node,
    locals: &[String],
    callees: &[OpPath],
    inputs: &[Ident],
    params: &[Ident],
    value: TokenStream,
) -> TokenStream {
    let e = Emitter { inputs, params, locals, callees, value, branches: true };
    e.node(root)
}

/// The path of a called op's hidden module as seen from inside this op's hidden module
/// (which `use super::*`s): a leading `self` becomes `super`, a leading `super` one more.
pub fn callee_module(path: &OpPath) -> TokenStream {
    let segs = &path.segments;
    let colon = if path.leading_colon { quote!(::) } else { quote!() };
    let rest = segs.iter().skip(1);
    match segs[0].to_string().as_str() {
        "self" => {
            let sup = Ident::new("super", segs[0].span());
            quote!(#sup #(:: #rest)*)
        }
        "super" => {
            let first = &segs[0];
            quote!(super :: #first #(:: #rest)*)
        }
        _ => quote!(#colon #(#segs)::*),
    }
}

struct Emitter<'a> {
    inputs: &'a [Ident],
    params: &'a [Ident],
    locals: &'a [String],
    callees: &'a [OpPath],
    /// The value type (`V`).
    value: TokenStream,
    /// Whether masks are `bool`, so every `if` can be a branch (reductions).
    branches: bool,
}

/// `Lane::<i64>`, whose operators are the total ones of element values.
fn int_lane() -> TokenStream {
    quote!(::tensor_ops::__private::tensor_kernels_cpu::value::Lane::<i64>)
}

impl Emitter<'_> {
    fn local(&self, id: usize) -> Ident {
        Ident::new(&self.locals[id], Span::call_site())
    }

    fn node(&self, n: &Node) -> TokenStream {
        let value = &self.value;
        let v = quote!(<#value as ::tensor_ops::__private::Value>);
        match n {
            Node::Input(i) => {
                let i = &self.inputs[*i];
                quote!(#i)
            }
            Node::Local(id) => {
                let l = self.local(*id);
                quote!(#l)
            }
            Node::Zero => quote!(#v::zero()),
            Node::One => quote!(#v::one()),
            Node::FromScalar(ty, s) => {
                let f = format_ident!("from_{}", ty.name());
                let s = self.scalar(s, *ty);
                quote!(#v::#f(#s))
            }
            Node::Arith(op, a, b) => {
                let (a, b) = (self.node(a), self.node(b));
                match op {
                    Arith::Add => quote!((#a + #b)),
                    Arith::Sub => quote!((#a - #b)),
                    Arith::Mul => quote!((#a * #b)),
                    Arith::Div => quote!((#a / #b)),
                }
            }
            Node::Neg(a) => {
                let a = self.node(a);
                quote!((-#a))
            }
            Node::Method(m, args) => {
                let f = format_ident!("{}", m.value_fn());
                let args = args.iter().map(|a| self.node(a));
                quote!(#v::#f(#(#args),*))
            }
            Node::Cmp(op, a, b) => {
                let f = format_ident!("{}", op.name());
                let (a, b) = (self.node(a), self.node(b));
                quote!(#v::#f(#a, #b))
            }
            Node::And(a, b) => {
                let (a, b) = (self.node(a), self.node(b));
                quote!((#a & #b))
            }
            Node::Or(a, b) => {
                let (a, b) = (self.node(a), self.node(b));
                quote!((#a | #b))
            }
            Node::Not(a) => {
                let a = self.node(a);
                quote!((!#a))
            }
            Node::MaskOf(s) => {
                let s = self.scalar(s, ScalarTy::Bool);
                quote!(#v::ne(#v::from_bool(#s), #v::zero()))
            }
            Node::If { cond, then, els, ty } => {
                let (c, t, e) = (self.node(cond), self.node(then), self.node(els));
                if self.branches || !matches!(ty, Ty::Value | Ty::Mask) {
                    quote!(if #c { #t } else { #e })
                } else if *ty == Ty::Mask {
                    quote!({
                        let __tensor_op_cond = #c;
                        (__tensor_op_cond & #t) | (!__tensor_op_cond & #e)
                    })
                } else {
                    quote!(#v::select(#c, #t, #e))
                }
            }
            Node::Call { callee, args } => {
                let path = &self.callees[*callee];
                let module = callee_module(path);
                let element = Ident::new("element", path.name().span());
                let lit = quote!(::tensor_ops::__private::Lit);
                let args = args.iter().map(|a| match a {
                    CallArg::Value(n, span) => {
                        // Spanned at the argument, so a type error points at it.
                        let n = self.node(n);
                        quote::quote_spanned!(span.0=> { let __tensor_op_arg = #n; __tensor_op_arg })
                    }
                    CallArg::Scalar(ty, s) => {
                        let s = self.scalar(s, *ty);
                        quote!(#lit(::tensor_ops::__private::Scalar::from(#s)))
                    }
                });
                quote!(#module::#element::<#value>(#(#args),*))
            }
            Node::Int(s) => self.scalar(s, ScalarTy::I64),
            Node::IntArith(op, a, b) => {
                let (lane, a, b) = (int_lane(), self.node(a), self.node(b));
                let e = match op {
                    Arith::Add => quote!(#lane(#a) + #lane(#b)),
                    Arith::Sub => quote!(#lane(#a) - #lane(#b)),
                    Arith::Mul => quote!(#lane(#a) * #lane(#b)),
                    Arith::Div => quote!(#lane(#a) / #lane(#b)),
                };
                quote!((#e).0)
            }
            Node::IntNeg(a) => {
                let (lane, a) = (int_lane(), self.node(a));
                quote!((-#lane(#a)).0)
            }
            Node::IntCmp(op, a, b) => {
                let (a, b) = (self.node(a), self.node(b));
                match op {
                    Cmp::Eq => quote!((#a == #b)),
                    Cmp::Ne => quote!((#a != #b)),
                    Cmp::Lt => quote!((#a < #b)),
                    Cmp::Le => quote!((#a <= #b)),
                    Cmp::Gt => quote!((#a > #b)),
                    Cmp::Ge => quote!((#a >= #b)),
                }
            }
            Node::IntMethod(m, args) => {
                let lane = int_lane();
                let f = format_ident!("{}", m.value_fn());
                let args = args.iter().map(|a| {
                    let a = self.node(a);
                    quote!(#lane(#a))
                });
                debug_assert!(matches!(m, Method::Max | Method::Min | Method::Abs));
                quote!(<#lane as ::tensor_ops::__private::Value>::#f(#(#args),*).0)
            }
            Node::Convert { from, to, arg } => {
                let a = self.node(arg);
                match (from, to) {
                    (Ty::Mask, Ty::I64) => quote!((#a as i64)),
                    (Ty::I64, _) => quote!(#v::from_i64(#a)),
                    _ => quote!(#v::from_bool(#a)),
                }
            }
            Node::Tuple(items) => {
                let items = items.iter().map(|n| self.node(n));
                quote!((#(#items,)*))
            }
            Node::Field(t, k) => {
                let t = self.node(t);
                let k = syn::Index::from(*k);
                quote!(#t.#k)
            }
            Node::Block(lets, tail) => {
                let lets = lets.iter().map(|l| {
                    let name = self.local(l.id);
                    let init = self.node(&l.init);
                    quote!(let #name = #init;)
                });
                let tail = self.node(tail);
                quote!({ #(#lets)* #tail })
            }
        }
    }

    /// A scalar expression of Rust type `ty`. Integer (`i64`) arithmetic goes through
    /// `Lane<i64>`, whose operators are the total ones of element values: wrapping `+ - *`
    /// and `-`, division by zero giving 0 and `MIN / -1` giving `MIN` (Rust's own `i64`
    /// operators panic on those in debug builds).
    fn scalar(&self, s: &Scalar, ty: ScalarTy) -> TokenStream {
        let lane = quote!(::tensor_ops::__private::tensor_kernels_cpu::value::Lane::<i64>);
        match s {
            Scalar::Param(i) => {
                let p = &self.params[*i];
                quote!(self.#p)
            }
            Scalar::Float(d) => {
                let lit = syn::LitFloat::new(&format!("{}{}", normalize_float(d), ty.name()), Span::call_site());
                quote!(#lit)
            }
            Scalar::Int(i) => int_literal(*i, ty),
            Scalar::Bool(b) => quote!(#b),
            Scalar::Neg(a) => {
                let a = self.scalar(a, ty);
                if ty == ScalarTy::I64 {
                    quote!((-#lane(#a)).0)
                } else {
                    quote!((-#a))
                }
            }
            Scalar::Arith(op, a, b) => {
                let (a, b) = (self.scalar(a, ty), self.scalar(b, ty));
                let (a, b) = if ty == ScalarTy::I64 { (quote!(#lane(#a)), quote!(#lane(#b))) } else { (a, b) };
                let e = match op {
                    Arith::Add => quote!(#a + #b),
                    Arith::Sub => quote!(#a - #b),
                    Arith::Mul => quote!(#a * #b),
                    Arith::Div => quote!(#a / #b),
                };
                if ty == ScalarTy::I64 {
                    quote!((#e).0)
                } else {
                    quote!((#e))
                }
            }
        }
    }
}

/// An integer literal as a Rust expression of type `ty` (suffixed; a negative value, which
/// only `i64::MIN` can be, as a negation or `i64::MIN`).
fn int_literal(i: i64, ty: ScalarTy) -> TokenStream {
    let lit = match ty {
        ScalarTy::F32 => Literal::f32_suffixed(i.unsigned_abs() as f32),
        ScalarTy::F64 => Literal::f64_suffixed(i.unsigned_abs() as f64),
        _ if i == i64::MIN => return quote!(::core::primitive::i64::MIN),
        _ => Literal::i64_suffixed(i.abs()),
    };
    if i < 0 {
        quote!((-#lit))
    } else {
        quote!(#lit)
    }
}
