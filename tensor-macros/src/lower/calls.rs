//! Calls in a body: `T::zero()`/`one()`/`from_*(..)`, calls of other `#[tensor_op]` map ops,
//! the value methods, and the scalar expressions (params, literals) their arguments take.

use super::{Binding, Lowerer, Typed};
use crate::errors::error;
use crate::ir::{At, CallArg, Method, Node, Scalar, Ty};
use crate::lower_const::{check_const, check_f32_range, const_int, is_i64_min_literal, literal};
use crate::signature::{Bound, ScalarTy};
use syn::{BinOp, Expr, UnOp};

impl Lowerer<'_> {
    pub(super) fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Typed> {
        let Expr::Path(p) = &*c.func else {
            return Err(error(&c.func, "function calls are not allowed in a #[tensor_op] body"));
        };
        let segs: Vec<_> = p.path.segments.iter().collect();
        let is_t = p.qself.is_none()
            && p.path.leading_colon.is_none()
            && segs.len() == 2
            && segs[0].ident == *self.type_param
            && segs[0].arguments.is_none();
        if !is_t {
            if let Some(k) = self.own_function(p) {
                return self.own_call(k, c);
            }
            return Ok(Typed::Node(self.op_call(p, c)?, Ty::Value));
        }
        let f = segs[1];
        if !f.arguments.is_none() {
            return Err(error(&f.arguments, "generic arguments are not allowed here"));
        }
        let args: Vec<&Expr> = c.args.iter().collect();
        let name = f.ident.to_string();
        let want_args = match name.as_str() {
            "zero" | "one" => 0,
            "from_f32" | "from_f64" | "from_i64" | "from_bool" => 1,
            _ => {
                return Err(error(
                    &f.ident,
                    format!(
                        "unknown function `{name}`: expected `zero`, `one`, `from_f32`, `from_f64`, `from_i64` or \
                         `from_bool`"
                    ),
                ))
            }
        };
        if args.len() != want_args {
            let at: &dyn quote::ToTokens = if args.is_empty() { c } else { &c.args };
            return Err(error(at, format!("`{name}` takes {want_args} argument(s), found {}", args.len())));
        }
        let node = match name.as_str() {
            "zero" => Node::Zero,
            "one" => Node::One,
            _ => {
                let ty = match name.as_str() {
                    "from_f32" => ScalarTy::F32,
                    "from_f64" => ScalarTy::F64,
                    "from_bool" => ScalarTy::Bool,
                    _ => ScalarTy::I64,
                };
                match self.runtime_arg(args[0], ty)? {
                    Some(node) => node,
                    None => Node::FromScalar(ty, self.scalar(args[0], ty)?),
                }
            }
        };
        Ok(Typed::Node(node, Ty::Value))
    }

    /// `T::from_i64(n)` / `T::from_bool(b)` of a runtime `i64` or condition (a reduction's
    /// index, count, `i64` accumulator or comparison): the conversion; `None` when `e` is a
    /// scalar expression (a literal or a param), which [`Self::scalar`] reads.
    fn runtime_arg(&mut self, e: &Expr, ty: ScalarTy) -> syn::Result<Option<Node>> {
        let from = match ty {
            ScalarTy::I64 => Ty::I64,
            ScalarTy::Bool => Ty::Mask,
            _ => return Ok(None),
        };
        if self.reduce.is_none() || self.is_scalar_expr(e) {
            return Ok(None);
        }
        let arg = self.lower_as(e, &from)?;
        Ok(Some(Node::Convert { from, to: Ty::Value, arg: Box::new(arg) }))
    }

    /// True when `e` is written only with literals, params and `+ - * /`.
    fn is_scalar_expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Paren(p) => self.is_scalar_expr(&p.expr),
            Expr::Group(g) => self.is_scalar_expr(&g.expr),
            Expr::Unary(u) => matches!(u.op, UnOp::Neg(_)) && self.is_scalar_expr(&u.expr),
            Expr::Binary(b) => self.is_scalar_expr(&b.left) && self.is_scalar_expr(&b.right),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| matches!(self.lookup(&i.to_string()), Some(Binding::Scalar(..)) | None)),
            _ => false,
        }
    }

    /// A call of another `#[tensor_op]` map op, named by its Rust path: `sigmoid(x)`,
    /// `tensor_ops::relu(x)`, `my_crate::gelu(x, 0.5)`. Whether the path names an op (and
    /// whether its dtypes cover this op's) is checked by the generated code, spanned here.
    fn op_call(&mut self, p: &syn::ExprPath, c: &syn::ExprCall) -> syn::Result<Node> {
        let path = crate::callee::op_path(p, c, self.type_param)?;
        if let Some(own) = self.own_name
            && path.segments.len() == 1
            && path.name() == own
        {
            return Err(error(&c.func, format!("`{own}` cannot call itself (a #[tensor_op] body has no recursion)")));
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(match self.expr(a, &Ty::Value)? {
                Typed::Node(n, Ty::Value) => CallArg::Value(n, At(syn::spanned::Spanned::span(a))),
                Typed::Scalar(ty, s) => CallArg::Scalar(ty, s),
                Typed::Node(_, Ty::Mask) => {
                    return Err(error(
                        a,
                        "a condition cannot be an op's argument; pass an element value (`if cond { a } else { b }`)",
                    ))
                }
                Typed::Node(_, ty) => {
                    return Err(error(
                        a,
                        format!("an op's argument is an element value, found {}", super::describe(&ty)),
                    ))
                }
            });
        }
        let callee = match self.callees.iter().position(|q| q.text() == path.text()) {
            Some(i) => i,
            None => {
                if let Some(q) = self.callees.iter().find(|q| q.name() == path.name()) {
                    return Err(error(
                        &c.func,
                        format!(
                            "`{}` and `{}` are both called here: one body may call one op of each name (their CUDA \
                             functions share the name); call it through one path",
                            q.text(),
                            path.text()
                        ),
                    ));
                }
                self.callees.push(path);
                self.callees.len() - 1
            }
        };
        Ok(Node::Call { callee, args })
    }

    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> syn::Result<Typed> {
        let Some(method) = Method::ALL.into_iter().find(|k| m.method == k.name()) else {
            let names: Vec<_> = Method::ALL.iter().map(|k| k.name()).collect();
            return Err(error(
                &m.method,
                format!("unknown method `{}`: a #[tensor_op] body may call {}", m.method, names.join(", ")),
            ));
        };
        if let Some(t) = &m.turbofish {
            return Err(error(t, "generic arguments are not allowed here"));
        }
        if m.args.len() != method.extra_args() {
            let at: &dyn quote::ToTokens = if m.args.is_empty() { m } else { &m.args };
            return Err(error(
                at,
                format!("`{}` takes {} argument(s), found {}", m.method, method.extra_args(), m.args.len()),
            ));
        }
        let mut typed = vec![self.expr(&m.receiver, &Ty::Value)?];
        for a in &m.args {
            typed.push(self.expr(a, &Ty::Value)?);
        }
        let int = typed.iter().any(|t| matches!(t, Typed::Node(_, Ty::I64)));
        if int && !matches!(method, Method::Max | Method::Min | Method::Abs) {
            return Err(error(
                &m.method,
                format!("`{}` is for element values; an `i64` has max, min and abs", m.method),
            ));
        }
        if !int && method.float_only() && self.bound != Bound::Float {
            return Err(error(
                &m.method,
                format!(
                    "`{}` is only available on floats: declare the element type as `<{}: Float>` (and list float dtypes)",
                    m.method, self.type_param
                ),
            ));
        }
        let ty = if int { Ty::I64 } else { Ty::Value };
        let exprs = std::iter::once(&*m.receiver).chain(m.args.iter());
        let args = typed.into_iter().zip(exprs).map(|(t, e)| self.coerce(t, &ty, e)).collect::<syn::Result<_>>()?;
        Ok(Typed::Node(if int { Node::IntMethod(method, args) } else { Node::Method(method, args) }, ty))
    }

    /// Lowers a runtime scalar expression of type `ty`.
    pub(super) fn scalar(&self, e: &Expr, ty: ScalarTy) -> syn::Result<Scalar> {
        let numeric = ty != ScalarTy::Bool;
        let tp = self.type_param;
        match e {
            Expr::Paren(p) => self.scalar(&p.expr, ty),
            Expr::Group(g) => self.scalar(&g.expr, ty),
            Expr::Lit(l) => {
                let (lit_ty, s) = literal(&l.lit)?;
                let ok = match (lit_ty, ty) {
                    (ScalarTy::F64, t) => matches!(t, ScalarTy::F32 | ScalarTy::F64),
                    (ScalarTy::I64, t) => t != ScalarTy::Bool,
                    (a, b) => a == b,
                };
                if !ok {
                    return Err(error(l, format!("expected a literal of type {}", ty.name())));
                }
                if let (ScalarTy::F32, Scalar::Float(d)) = (ty, &s) {
                    check_f32_range(d, l)?;
                }
                Ok(s)
            }
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let Some(ident) = p.path.get_ident() else { return Err(error(p, "expected a name")) };
                match self.lookup(&ident.to_string()) {
                    Some(Binding::Scalar(pty, s)) if pty == ty => Ok(s),
                    // An integer literal bound by `let` is a float where a float is wanted.
                    Some(Binding::Scalar(ScalarTy::I64, s))
                        if matches!(ty, ScalarTy::F32 | ScalarTy::F64) && const_int(&s).is_some() =>
                    {
                        Ok(s)
                    }
                    Some(Binding::Scalar(pty, _)) => Err(error(
                        ident,
                        format!(
                            "`{ident}` is a {} param where {} is expected; use `{tp}::from_{}({ident})`",
                            pty.name(),
                            ty.name(),
                            pty.name()
                        ),
                    )),
                    Some(Binding::Node(..)) => Err(error(
                        ident,
                        format!(
                            "`{ident}` is an element value; `{tp}::from_{}` takes a #[param] or a literal",
                            ty.name()
                        ),
                    )),
                    None => Err(error(ident, format!("cannot find `{ident}` in this op"))),
                }
            }
            Expr::Unary(u) if numeric && matches!(u.op, UnOp::Neg(_)) && is_i64_min_literal(&u.expr) => {
                Ok(Scalar::Int(i64::MIN))
            }
            Expr::Unary(u) if numeric && matches!(u.op, UnOp::Neg(_)) => {
                let s = Scalar::Neg(Box::new(self.scalar(&u.expr, ty)?));
                check_const(const_int(&s), u)?;
                Ok(s)
            }
            Expr::Binary(b) if numeric => {
                let op = match b.op {
                    BinOp::Add(_) => crate::ir::Arith::Add,
                    BinOp::Sub(_) => crate::ir::Arith::Sub,
                    BinOp::Mul(_) => crate::ir::Arith::Mul,
                    BinOp::Div(_) => crate::ir::Arith::Div,
                    op => return Err(error(op, "only + - * / are allowed in a scalar expression")),
                };
                let s = Scalar::Arith(op, Box::new(self.scalar(&b.left, ty)?), Box::new(self.scalar(&b.right, ty)?));
                check_const(const_int(&s), b)?;
                Ok(s)
            }
            other => {
                Err(error(other, format!("expected a {} scalar: a #[param], a literal, or + - * / of them", ty.name())))
            }
        }
    }
}
