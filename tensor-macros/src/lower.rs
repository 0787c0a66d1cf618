//! Checks an op body against the body language and lowers it to [`crate::ir`].
//!
//! Every construct outside the language is a `syn::Error` spanned on the offending tokens,
//! and so is integer literal arithmetic that overflows i64 or divides by zero (checked here,
//! at compile time: at run time every integer operation is total).

use crate::errors::error;
use crate::ir::{Arith, At, Body, CallArg, Cmp, Let, Method, Node, OpPath, Scalar};
use crate::lower_const::{
    check_const, check_f32_range, const_int, const_int_node, is_i64_min_literal, literal, unsupported,
};
use crate::signature::{Arg, Bound, ScalarTy, Signature};
use std::collections::HashSet;
use syn::{BinOp, Block, Expr, Ident, Pat, Stmt, UnOp};

/// Whether an expression is an element value or a comparison mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Value,
    Mask,
}

/// What a name refers to.
#[derive(Debug, Clone, Copy)]
enum Binding {
    Input(usize),
    Param(usize, ScalarTy),
    Local(usize, Kind),
}

/// A lowered expression whose kind may still adapt to its context (literals, params).
enum Typed {
    Value(Node),
    Mask(Node),
    /// A literal or a param: a value, or a mask when it is a `bool`.
    Scalar(ScalarTy, Scalar),
}

/// Lowers `block` (the whole fn body) of the op whose fn is `own_name`, for `sig`.
pub fn lower_body(sig: &Signature, own_name: &Ident, block: &Block) -> syn::Result<Body> {
    let mut scope = Vec::new();
    let mut used = HashSet::new();
    let (mut n_in, mut n_par) = (0, 0);
    for a in &sig.args {
        match a {
            Arg::Tensor(i) => {
                scope.push((i.to_string(), Binding::Input(n_in)));
                n_in += 1;
                used.insert(i.to_string());
            }
            Arg::Param(i, t) => {
                scope.push((i.to_string(), Binding::Param(n_par, *t)));
                n_par += 1;
                used.insert(i.to_string());
            }
        }
    }
    let mut l = Lowerer { sig, own_name, scope, locals: Vec::new(), used, callees: Vec::new() };
    let want = if sig.predicate { Kind::Mask } else { Kind::Value };
    let typed = l.block(block, want)?;
    let root = match block.stmts.last() {
        Some(Stmt::Expr(tail, None)) => l.coerce(typed, want, tail)?,
        _ => l.coerce(typed, want, block)?,
    };
    Ok(Body { root, locals: l.locals, callees: l.callees })
}

struct Lowerer<'a> {
    sig: &'a Signature,
    /// The fn name of the op being defined (it may not call itself).
    own_name: &'a Ident,
    /// The ops called so far.
    callees: Vec<OpPath>,
    /// Names in scope, innermost last.
    scope: Vec<(String, Binding)>,
    locals: Vec<String>,
    /// Names already taken in generated code.
    used: HashSet<String>,
}

/// Names that cannot be C identifiers (also used for argument names in `cuda.rs`).
pub(crate) const C_RESERVED: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "true",
    "false",
    "this",
    "new",
    "delete",
    "class",
    "template",
    "typename",
    "operator",
    "private",
    "public",
    "protected",
    "namespace",
    "using",
    "virtual",
    "friend",
    "explicit",
    "mutable",
    "nullptr",
    "decltype",
    "constexpr",
    "__device__",
    "__global__",
];

impl Lowerer<'_> {
    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, b)| *b)
    }

    fn new_local(&mut self, ident: &Ident) -> usize {
        let base = ident.to_string();
        let mut name = base.clone();
        let mut k = 2;
        while self.used.contains(&name) || C_RESERVED.contains(&name.as_str()) || name.starts_with("tops_") {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        self.locals.push(name);
        self.locals.len() - 1
    }

    /// Makes `t` a node of kind `want`, or explains why it is not one.
    fn coerce(&self, t: Typed, want: Kind, at: &dyn quote::ToTokens) -> syn::Result<Node> {
        match (t, want) {
            (Typed::Value(n), Kind::Value) | (Typed::Mask(n), Kind::Mask) => Ok(n),
            // A call of a predicate op is a condition: the generated Rust checks which it is.
            (Typed::Value(n @ Node::Call { .. }), Kind::Mask) => Ok(n),
            (Typed::Scalar(ty, s), Kind::Value) => Ok(Node::FromScalar(ty, s)),
            (Typed::Scalar(ScalarTy::Bool, s), Kind::Mask) => Ok(Node::MaskOf(s)),
            (Typed::Scalar(..) | Typed::Value(_), Kind::Mask) => Err(error(
                at,
                "expected a condition (a comparison such as `x > T::zero()`, `&&`, `||`, `!`), found an element value",
            )),
            (Typed::Mask(_), Kind::Value) => Err(error(
                at,
                "expected an element value, found a condition (a comparison); use `if cond { a } else { b }`",
            )),
        }
    }

    fn value(&mut self, e: &Expr) -> syn::Result<Node> {
        let t = self.expr(e, Kind::Value)?;
        self.coerce(t, Kind::Value, e)
    }

    fn mask(&mut self, e: &Expr) -> syn::Result<Node> {
        let t = self.expr(e, Kind::Mask)?;
        self.coerce(t, Kind::Mask, e)
    }

    /// Lowers a block; `hint` is the kind its context wants (used for literal tails).
    fn block(&mut self, block: &Block, hint: Kind) -> syn::Result<Typed> {
        let depth = self.scope.len();
        let mut lets = Vec::new();
        let mut tail = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            match stmt {
                Stmt::Local(local) => lets.push(self.local(local)?),
                Stmt::Expr(e, None) if last => tail = Some(e),
                Stmt::Expr(e, semi) => {
                    // Report the construct itself when it is not in the language.
                    self.expr(e, Kind::Value)?;
                    let msg = match semi {
                        Some(_) => {
                            "a statement here has no effect: only `let` statements and a final expression \
                                    (without `;`) are allowed"
                        }
                        None => "expected `;`",
                    };
                    return Err(error(stmt, msg));
                }
                Stmt::Item(item) => return Err(error(item, "items are not allowed in a #[tensor_op] body")),
                Stmt::Macro(m) => return Err(error(&m.mac, "macros are not allowed in a #[tensor_op] body")),
            }
        }
        let Some(tail) = tail else {
            let msg = "the block must end with an expression (its result), without `;`";
            return Err(match block.stmts.last() {
                Some(s) => error(s, msg),
                None => syn::Error::new(block.brace_token.span.join(), msg),
            });
        };
        let t = self.expr(tail, hint)?;
        self.scope.truncate(depth);
        if lets.is_empty() {
            return Ok(t);
        }
        Ok(match t {
            Typed::Mask(n) => Typed::Mask(Node::Block(lets, Box::new(n))),
            other => Typed::Value(Node::Block(lets, Box::new(self.coerce(other, Kind::Value, tail)?))),
        })
    }

    fn local(&mut self, local: &syn::Local) -> syn::Result<Let> {
        if let Some(a) = local.attrs.first() {
            return Err(error(a, "attributes are not allowed on `let` in a #[tensor_op] body"));
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&pt.ty)),
            p => (p, None),
        };
        let ident = match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                if let Some(m) = &pi.mutability {
                    return Err(error(m, "locals are immutable in a #[tensor_op] body (no `mut`)"));
                }
                &pi.ident
            }
            other => return Err(error(other, "expected a plain name after `let`")),
        };
        let want = match ty.map(|t| quote::ToTokens::to_token_stream(t).to_string()) {
            None => None,
            Some(t) if self.sig.type_param == t => Some(Kind::Value),
            Some(t) if t == "bool" => Some(Kind::Mask),
            Some(_) => {
                return Err(error(
                    ty,
                    format!("a local has type `{}` (a value) or `bool` (a condition)", self.sig.type_param),
                ))
            }
        };
        let Some(init) = &local.init else {
            return Err(error(local, "a `let` needs a value: `let y = ...;`"));
        };
        if let Some((else_token, _)) = &init.diverge {
            return Err(error(else_token, "`let ... else` is not allowed in a #[tensor_op] body"));
        }
        let t = self.expr(&init.expr, want.unwrap_or(Kind::Value))?;
        let kind = match (&t, want) {
            (_, Some(k)) => k,
            (Typed::Mask(_), None) => Kind::Mask,
            (_, None) => Kind::Value,
        };
        let node = self.coerce(t, kind, &init.expr)?;
        let id = self.new_local(ident);
        self.scope.push((ident.to_string(), Binding::Local(id, kind)));
        Ok(Let { id, init: node })
    }

    /// Lowers an expression; `hint` decides the kind of `if`s whose arms are both literals.
    fn expr(&mut self, e: &Expr, hint: Kind) -> syn::Result<Typed> {
        Ok(match e {
            Expr::Lit(l) => {
                let (ty, s) = literal(&l.lit)?;
                Typed::Scalar(ty, s)
            }
            Expr::Paren(p) => return self.expr(&p.expr, hint),
            Expr::Group(g) => return self.expr(&g.expr, hint),
            Expr::Path(p) => {
                let Some(ident) = p.path.get_ident().filter(|_| p.qself.is_none()) else {
                    return Err(error(p, "unknown path: a body may use its arguments, locals, `T::zero()`, `T::one()` and `T::from_f32/from_f64/from_i64/from_bool(..)`"));
                };
                match self.lookup(&ident.to_string()) {
                    Some(Binding::Input(i)) => Typed::Value(Node::Input(i)),
                    Some(Binding::Param(i, ty)) => Typed::Scalar(ty, Scalar::Param(i)),
                    Some(Binding::Local(id, Kind::Value)) => Typed::Value(Node::Local(id)),
                    Some(Binding::Local(id, Kind::Mask)) => Typed::Mask(Node::Local(id)),
                    None => {
                        return Err(error(
                            ident,
                            format!("cannot find `{ident}` in this op: not an argument or a local"),
                        ))
                    }
                }
            }
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) if is_i64_min_literal(&u.expr) => Typed::Scalar(ScalarTy::I64, Scalar::Int(i64::MIN)),
                UnOp::Neg(_) => match self.expr(&u.expr, Kind::Value)? {
                    Typed::Scalar(ty, s) if ty != ScalarTy::Bool => {
                        let s = Scalar::Neg(Box::new(s));
                        check_const(const_int(&s), u)?;
                        Typed::Scalar(ty, s)
                    }
                    t => Typed::Value(Node::Neg(Box::new(self.coerce(t, Kind::Value, &u.expr)?))),
                },
                UnOp::Not(_) => Typed::Mask(Node::Not(Box::new(self.mask(&u.expr)?))),
                _ => return Err(error(u.op, "dereferencing is not allowed in a #[tensor_op] body")),
            },
            Expr::Binary(b) => self.binary(b)?,
            Expr::If(i) => self.if_expr(i, hint)?,
            Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return Err(error(l, "labels are not allowed in a #[tensor_op] body"));
                }
                if let Some(a) = b.attrs.first() {
                    return Err(error(a, "attributes are not allowed in a #[tensor_op] body"));
                }
                self.block(&b.block, hint)?
            }
            Expr::Call(c) => Typed::Value(self.call(c)?),
            Expr::MethodCall(m) => Typed::Value(self.method(m)?),
            other => return Err(unsupported(other)),
        })
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> syn::Result<Typed> {
        let arith = match b.op {
            BinOp::Add(_) => Some(Arith::Add),
            BinOp::Sub(_) => Some(Arith::Sub),
            BinOp::Mul(_) => Some(Arith::Mul),
            BinOp::Div(_) => Some(Arith::Div),
            _ => None,
        };
        if let Some(op) = arith {
            let l = self.value(&b.left)?;
            let r = self.value(&b.right)?;
            let node = Node::Arith(op, Box::new(l), Box::new(r));
            check_const(const_int_node(&node), b)?;
            return Ok(Typed::Value(node));
        }
        let cmp = match b.op {
            BinOp::Eq(_) => Some(Cmp::Eq),
            BinOp::Ne(_) => Some(Cmp::Ne),
            BinOp::Lt(_) => Some(Cmp::Lt),
            BinOp::Le(_) => Some(Cmp::Le),
            BinOp::Gt(_) => Some(Cmp::Gt),
            BinOp::Ge(_) => Some(Cmp::Ge),
            _ => None,
        };
        if let Some(op) = cmp {
            let l = self.value(&b.left)?;
            let r = self.value(&b.right)?;
            return Ok(Typed::Mask(Node::Cmp(op, Box::new(l), Box::new(r))));
        }
        match b.op {
            BinOp::And(_) => Ok(Typed::Mask(Node::And(Box::new(self.mask(&b.left)?), Box::new(self.mask(&b.right)?)))),
            BinOp::Or(_) => Ok(Typed::Mask(Node::Or(Box::new(self.mask(&b.left)?), Box::new(self.mask(&b.right)?)))),
            BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_) => Err(error(b.op, "assignment is not allowed in a #[tensor_op] body; use `let`")),
            op => Err(error(
                op,
                format!(
                    "operator `{}` is not supported in a #[tensor_op] body (use + - * /, comparisons, && || !)",
                    quote::quote!(#op)
                ),
            )),
        }
    }

    fn if_expr(&mut self, i: &syn::ExprIf, hint: Kind) -> syn::Result<Typed> {
        if let Some(a) = i.attrs.first() {
            return Err(error(a, "attributes are not allowed in a #[tensor_op] body"));
        }
        if let Expr::Let(l) = &*i.cond {
            return Err(error(l, "`if let` is not allowed in a #[tensor_op] body"));
        }
        let cond = self.mask(&i.cond)?;
        let Some((_, els)) = &i.else_branch else {
            return Err(error(i, "an `if` needs an `else`: both branches give the element's value"));
        };
        let then = self.block(&i.then_branch, hint)?;
        let els_t = self.expr(els, hint)?;
        let kind = match (&then, &els_t) {
            (Typed::Value(_), _) | (_, Typed::Value(_)) => Kind::Value,
            (Typed::Mask(_), _) | (_, Typed::Mask(_)) => Kind::Mask,
            _ => hint,
        };
        let then_at = &i.then_branch;
        let then = self.coerce(then, kind, then_at)?;
        let els = self.coerce(els_t, kind, els)?;
        let node =
            Node::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(els), mask: kind == Kind::Mask };
        Ok(if kind == Kind::Mask { Typed::Mask(node) } else { Typed::Value(node) })
    }

    fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Node> {
        let Expr::Path(p) = &*c.func else {
            return Err(error(&c.func, "function calls are not allowed in a #[tensor_op] body"));
        };
        let segs: Vec<_> = p.path.segments.iter().collect();
        let is_t = p.qself.is_none()
            && p.path.leading_colon.is_none()
            && segs.len() == 2
            && segs[0].ident == self.sig.type_param
            && segs[0].arguments.is_none();
        if !is_t {
            return self.op_call(p, c);
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
        Ok(match name.as_str() {
            "zero" => Node::Zero,
            "one" => Node::One,
            _ => {
                let ty = match name.as_str() {
                    "from_f32" => ScalarTy::F32,
                    "from_f64" => ScalarTy::F64,
                    "from_bool" => ScalarTy::Bool,
                    _ => ScalarTy::I64,
                };
                Node::FromScalar(ty, self.scalar(args[0], ty)?)
            }
        })
    }

    /// A call of another `#[tensor_op]` map op, named by its Rust path: `sigmoid(x)`,
    /// `tensor_ops::relu(x)`, `my_crate::gelu(x, 0.5)`. Whether the path names an op (and
    /// whether its dtypes cover this op's) is checked by the generated code, spanned here.
    fn op_call(&mut self, p: &syn::ExprPath, c: &syn::ExprCall) -> syn::Result<Node> {
        let path = crate::callee::op_path(p, c, &self.sig.type_param)?;
        if path.segments.len() == 1 && path.name() == self.own_name {
            return Err(error(
                &c.func,
                format!("`{}` cannot call itself (a #[tensor_op] body has no recursion)", self.own_name),
            ));
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(match self.expr(a, Kind::Value)? {
                Typed::Value(n) => CallArg::Value(n, At(syn::spanned::Spanned::span(a))),
                Typed::Scalar(ty, s) => CallArg::Scalar(ty, s),
                Typed::Mask(_) => {
                    return Err(error(
                        a,
                        "a condition cannot be an op's argument; pass an element value (`if cond { a } else { b }`)",
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

    fn method(&mut self, m: &syn::ExprMethodCall) -> syn::Result<Node> {
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
        if method.float_only() && self.sig.bound != Bound::Float {
            return Err(error(
                &m.method,
                format!(
                    "`{}` is only available on floats: declare the element type as `<{}: Float>` (and list float dtypes)",
                    m.method, self.sig.type_param
                ),
            ));
        }
        if m.args.len() != method.extra_args() {
            let at: &dyn quote::ToTokens = if m.args.is_empty() { m } else { &m.args };
            return Err(error(
                at,
                format!("`{}` takes {} argument(s), found {}", m.method, method.extra_args(), m.args.len()),
            ));
        }
        let mut args = vec![self.value(&m.receiver)?];
        for a in &m.args {
            args.push(self.value(a)?);
        }
        Ok(Node::Method(method, args))
    }

    /// Lowers a runtime scalar expression of type `ty`.
    fn scalar(&self, e: &Expr, ty: ScalarTy) -> syn::Result<Scalar> {
        let numeric = ty != ScalarTy::Bool;
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
                    Some(Binding::Param(i, pty)) if pty == ty => Ok(Scalar::Param(i)),
                    Some(Binding::Param(_, pty)) => Err(error(
                        ident,
                        format!(
                            "`{ident}` is a {} param where {} is expected; use `{}::from_{}({ident})`",
                            pty.name(),
                            ty.name(),
                            self.sig.type_param,
                            pty.name()
                        ),
                    )),
                    Some(_) => Err(error(
                        ident,
                        format!(
                            "`{ident}` is an element value; `{}::from_{}` takes a #[param] or a literal",
                            self.sig.type_param,
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
                    BinOp::Add(_) => Arith::Add,
                    BinOp::Sub(_) => Arith::Sub,
                    BinOp::Mul(_) => Arith::Mul,
                    BinOp::Div(_) => Arith::Div,
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
