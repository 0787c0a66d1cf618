//! Checks a body against the body language and lowers it to [`crate::ir`]: a map op's body
//! ([`lower_body`]) and a reduction's four functions ([`lower_reduce`]) go through the same
//! lowerer, so they share one language, one set of messages and one IR.
//!
//! Every construct outside the language is a `syn::Error` spanned on the offending tokens,
//! and so is integer literal arithmetic that overflows i64 or divides by zero (checked here,
//! at compile time: at run time every integer operation is total).
//!
//! Files: this one (scopes, types, expressions, blocks), `calls` (`T::..` constructors, op
//! calls, methods, scalar expressions), `reduce` (what only reductions have: tuples, `as`,
//! `i64`s, `return`, patterns, calls of the four functions), `names` (reserved names).

mod calls;
mod names;
mod reduce;

pub(crate) use names::C_RESERVED;
pub use reduce::lower_reduce;

use crate::errors::error;
use crate::ir::{Arith, Body, Cmp, Let, Node, OpPath, Scalar, Ty};
use crate::lower_const::{check_const, const_int, const_int_node, is_i64_min_literal, literal, unsupported};
use crate::signature::{Arg, Bound, ScalarTy, Signature};
use std::collections::HashSet;
use syn::{BinOp, Block, Expr, Ident, Pat, Stmt, UnOp};

/// What a name refers to.
#[derive(Debug, Clone)]
enum Binding {
    /// A node of this type (an input, a local).
    Node(Node, Ty),
    /// A param, a literal bound by `let`, or a scalar expression of them: its type adapts
    /// to where it is used.
    Scalar(ScalarTy, Scalar),
}

/// A lowered expression whose type may still adapt to its context (literals, params).
enum Typed {
    /// A node of a fixed type.
    Node(Node, Ty),
    /// A literal or a param: a value, a mask when it is a `bool`, an `i64` when it is one.
    Scalar(ScalarTy, Scalar),
}

/// Lowers `block` (the whole fn body) of the op whose fn is `own_name`, for `sig`.
pub fn lower_body(sig: &Signature, own_name: &Ident, block: &Block) -> syn::Result<Body> {
    let mut l = Lowerer::new(&sig.type_param, sig.bound, Some(own_name));
    let (mut n_in, mut n_par) = (0, 0);
    for a in &sig.args {
        match a {
            Arg::Tensor(i) => {
                l.bind(i, Binding::Node(Node::Input(n_in), Ty::Value));
                n_in += 1;
                l.used.insert(i.to_string());
            }
            Arg::Param(i, t) => {
                l.bind(i, Binding::Scalar(*t, Scalar::Param(n_par)));
                n_par += 1;
                l.used.insert(i.to_string());
            }
        }
    }
    let want = if sig.predicate { Ty::Mask } else { Ty::Value };
    let typed = l.block(block, &want)?;
    let root = match block.stmts.last() {
        Some(Stmt::Expr(tail, None)) => l.coerce(typed, &want, tail)?,
        _ => l.coerce(typed, &want, block)?,
    };
    Ok(Body { root, locals: l.locals, callees: l.callees })
}

struct Lowerer<'a> {
    /// The element type parameter's name (`T`).
    type_param: &'a Ident,
    /// Its bound.
    bound: Bound,
    /// The fn name of the map op being defined (it may not call itself).
    own_name: Option<&'a Ident>,
    /// The reduction being lowered, when it is one (what only reductions have is allowed).
    reduce: Option<reduce::Context<'a>>,
    /// The ops called so far.
    callees: Vec<OpPath>,
    /// Names in scope, innermost last.
    scope: Vec<(String, Binding)>,
    locals: Vec<String>,
    /// Names already taken in generated code.
    used: HashSet<String>,
}

/// How a type is named in messages.
fn describe(ty: &Ty) -> String {
    match ty {
        Ty::Value => "an element value".into(),
        Ty::Mask => "a condition".into(),
        Ty::I64 => "an `i64`".into(),
        Ty::Tuple(t) => format!("a tuple of {}", t.len()),
    }
}

impl<'a> Lowerer<'a> {
    fn new(type_param: &'a Ident, bound: Bound, own_name: Option<&'a Ident>) -> Self {
        Lowerer {
            type_param,
            bound,
            own_name,
            reduce: None,
            callees: Vec::new(),
            scope: Vec::new(),
            locals: Vec::new(),
            used: HashSet::new(),
        }
    }

    fn bind(&mut self, name: &Ident, b: Binding) {
        self.scope.push((name.to_string(), b));
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, b)| b.clone())
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

    /// Makes `t` a node of type `want`, or explains why it is not one.
    fn coerce(&self, t: Typed, want: &Ty, at: &dyn quote::ToTokens) -> syn::Result<Node> {
        match (t, want) {
            (Typed::Node(n, ty), want) if ty == *want => Ok(n),
            // A call of a predicate op is a condition: the generated Rust checks which it is.
            (Typed::Node(n @ Node::Call { .. }, Ty::Value), Ty::Mask) => Ok(n),
            (Typed::Scalar(ty, s), Ty::Value) => Ok(Node::FromScalar(ty, s)),
            (Typed::Scalar(ScalarTy::Bool, s), Ty::Mask) => Ok(Node::MaskOf(s)),
            (Typed::Scalar(ScalarTy::I64, s), Ty::I64) => Ok(Node::Int(s)),
            (Typed::Scalar(..) | Typed::Node(_, Ty::Value), Ty::Mask) => Err(error(
                at,
                "expected a condition (a comparison such as `x > T::zero()`, `&&`, `||`, `!`), found an element value",
            )),
            (Typed::Node(_, Ty::Mask), Ty::Value) => Err(error(
                at,
                "expected an element value, found a condition (a comparison); use `if cond { a } else { b }`",
            )),
            (Typed::Node(_, Ty::Mask), Ty::I64) => {
                Err(error(at, "expected an `i64`, found a condition; convert it with `cond as i64`"))
            }
            (Typed::Node(_, Ty::I64), Ty::Value) => Err(error(
                at,
                format!(
                    "expected an element value, found an `i64`; convert it with `{}::from_i64(..)`",
                    self.type_param
                ),
            )),
            (Typed::Scalar(ty, _), want) => {
                Err(error(at, format!("expected {}, found a {} literal or param", describe(want), ty.name())))
            }
            (Typed::Node(_, ty), want) => {
                Err(error(at, format!("expected {}, found {}", describe(want), describe(&ty))))
            }
        }
    }

    fn mask(&mut self, e: &Expr) -> syn::Result<Node> {
        let t = self.expr(e, &Ty::Mask)?;
        self.coerce(t, &Ty::Mask, e)
    }

    /// Lowers `e` as a node of type `want`.
    fn lower_as(&mut self, e: &Expr, want: &Ty) -> syn::Result<Node> {
        let t = self.expr(e, want)?;
        self.coerce(t, want, e)
    }

    /// Lowers a block; `hint` is the type its context wants (used for literal tails and
    /// tuples).
    fn block(&mut self, block: &Block, hint: &Ty) -> syn::Result<Typed> {
        let depth = self.scope.len();
        let mut lets = Vec::new();
        let mut tail = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            match stmt {
                Stmt::Local(local) => lets.extend(self.local(local)?),
                Stmt::Expr(e, None) if last => tail = Some(e),
                Stmt::Expr(e, semi) => {
                    // Report the construct itself when it is not in the language.
                    self.expr(e, &Ty::Value)?;
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
        let (node, ty) = match t {
            Typed::Node(n, ty) => (n, ty),
            Typed::Scalar(ty, s) => {
                let want = self.scalar_default(ty, hint);
                (self.coerce(Typed::Scalar(ty, s), &want, tail)?, want)
            }
        };
        Ok(Typed::Node(Node::Block(lets, Box::new(node)), ty))
    }

    /// The type a scalar takes where a fixed one is needed and `hint` is what the context
    /// would like: the hint when the scalar can be one, else its natural type.
    fn scalar_default(&self, ty: ScalarTy, hint: &Ty) -> Ty {
        match (ty, hint) {
            (ScalarTy::Bool, Ty::Mask) | (_, Ty::Value) => hint.clone(),
            (ScalarTy::I64, Ty::I64) => Ty::I64,
            (ScalarTy::Bool, _) => Ty::Mask,
            (ScalarTy::I64, _) if self.reduce.is_some() => Ty::I64,
            _ => Ty::Value,
        }
    }

    /// A `let` statement: the lets it introduces (a tuple pattern gives several).
    fn local(&mut self, local: &syn::Local) -> syn::Result<Vec<Let>> {
        if let Some(a) = local.attrs.first() {
            return Err(error(a, "attributes are not allowed on `let` in a #[tensor_op] body"));
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&pt.ty)),
            p => (p, None),
        };
        let want = match ty {
            None => None,
            Some(t) => Some(self.type_of(t)?),
        };
        let Some(init) = &local.init else {
            return Err(error(local, "a `let` needs a value: `let y = ...;`"));
        };
        if let Some((else_token, _)) = &init.diverge {
            return Err(error(else_token, "`let ... else` is not allowed in a #[tensor_op] body"));
        }
        let t = self.expr(&init.expr, want.as_ref().unwrap_or(&Ty::Value))?;
        let binding = match (t, want) {
            (t, Some(want)) => Binding::Node(self.coerce(t, &want, &init.expr)?, want),
            (Typed::Node(n, ty), None) => Binding::Node(n, ty),
            (Typed::Scalar(ty, s), None) => Binding::Scalar(ty, s),
        };
        let mut lets = Vec::new();
        self.bind_pattern(pat, binding, &mut lets)?;
        Ok(lets)
    }

    /// The type a `let` or an argument declares: `T` or `bool`, and in reductions `i64` and
    /// tuples of them.
    fn type_of(&self, t: &syn::Type) -> syn::Result<Ty> {
        let name = crate::signature::type_name(t);
        match t {
            _ if name.as_ref().is_some_and(|n| self.type_param == n) => Ok(Ty::Value),
            _ if name.as_ref().is_some_and(|n| n == "bool") => Ok(Ty::Mask),
            _ if self.reduce.is_none() => {
                Err(error(t, format!("a local has type `{}` (a value) or `bool` (a condition)", self.type_param)))
            }
            _ if name.as_ref().is_some_and(|n| n == "i64") => Ok(Ty::I64),
            syn::Type::Paren(p) => self.type_of(&p.elem),
            syn::Type::Tuple(tt) if (1..=3).contains(&tt.elems.len()) => {
                Ok(Ty::Tuple(tt.elems.iter().map(|e| self.type_of(e)).collect::<syn::Result<_>>()?))
            }
            _ => Err(error(
                t,
                format!("a type here is `{}`, `i64`, `bool` or a tuple of one to three of them", self.type_param),
            )),
        }
    }

    /// Lowers an expression; `hint` is the type its context wants (it decides the type of
    /// `if`s whose arms are both literals, and of a tuple's literal elements).
    fn expr(&mut self, e: &Expr, hint: &Ty) -> syn::Result<Typed> {
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
                    Some(Binding::Node(n, ty)) => Typed::Node(n, ty),
                    Some(Binding::Scalar(ty, s)) => Typed::Scalar(ty, s),
                    None => {
                        return Err(error(
                            ident,
                            format!("cannot find `{ident}` in this op: not an argument or a local"),
                        ))
                    }
                }
            }
            Expr::Unary(u) => self.unary(u)?,
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
            Expr::Call(c) => self.call(c)?,
            Expr::MethodCall(m) => self.method(m)?,
            // What only reductions have is outside a map body's language.
            Expr::Tuple(_) | Expr::Field(_) | Expr::Cast(_) | Expr::Return(_) if self.reduce.is_none() => {
                return Err(unsupported(e))
            }
            Expr::Tuple(t) => self.tuple(t, hint)?,
            Expr::Field(f) => self.field(f)?,
            Expr::Cast(c) => self.cast(c)?,
            Expr::Return(r) => {
                return Err(error(
                    r,
                    "`return` may only end a function's body or a branch of an `if` at its end, not stand inside \
                     an expression",
                ));
            }
            other => return Err(unsupported(other)),
        })
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> syn::Result<Typed> {
        Ok(match u.op {
            UnOp::Neg(_) if is_i64_min_literal(&u.expr) => Typed::Scalar(ScalarTy::I64, Scalar::Int(i64::MIN)),
            UnOp::Neg(_) => match self.expr(&u.expr, &Ty::Value)? {
                Typed::Scalar(ty, s) if ty != ScalarTy::Bool => {
                    let s = Scalar::Neg(Box::new(s));
                    check_const(const_int(&s), u)?;
                    Typed::Scalar(ty, s)
                }
                Typed::Node(n, Ty::I64) => Typed::Node(Node::IntNeg(Box::new(n)), Ty::I64),
                t => Typed::Node(Node::Neg(Box::new(self.coerce(t, &Ty::Value, &u.expr)?)), Ty::Value),
            },
            UnOp::Not(_) => Typed::Node(Node::Not(Box::new(self.mask(&u.expr)?)), Ty::Mask),
            _ => return Err(error(u.op, "dereferencing is not allowed in a #[tensor_op] body")),
        })
    }

    /// The common numeric type of two lowered operands: `i64` when either is one
    /// (reductions), else an element value.
    fn operands(&self, l: Typed, r: Typed, b: &syn::ExprBinary) -> syn::Result<(Node, Node, Ty)> {
        let int = matches!(l, Typed::Node(_, Ty::I64)) || matches!(r, Typed::Node(_, Ty::I64));
        let value = matches!(l, Typed::Node(_, Ty::Value)) || matches!(r, Typed::Node(_, Ty::Value));
        if int && value {
            return Err(error(
                b,
                format!(
                    "this mixes an element value and an `i64`: convert the `i64` with `{}::from_i64(..)`",
                    self.type_param
                ),
            ));
        }
        let ty = if int { Ty::I64 } else { Ty::Value };
        Ok((self.coerce(l, &ty, &b.left)?, self.coerce(r, &ty, &b.right)?, ty))
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
            let l = self.expr(&b.left, &Ty::Value)?;
            let r = self.expr(&b.right, &Ty::Value)?;
            // Integer literals and i64 params in a reduction: constant arithmetic, typed by
            // where it is used (as Rust types `2 * 3`).
            if let (Some(_), Typed::Scalar(ScalarTy::I64, a), Typed::Scalar(ScalarTy::I64, c)) = (&self.reduce, &l, &r)
            {
                let s = Scalar::Arith(op, Box::new(a.clone()), Box::new(c.clone()));
                check_const(const_int(&s), b)?;
                return Ok(Typed::Scalar(ScalarTy::I64, s));
            }
            let (l, r, ty) = self.operands(l, r, b)?;
            let node = if ty == Ty::I64 {
                Node::IntArith(op, Box::new(l), Box::new(r))
            } else {
                Node::Arith(op, Box::new(l), Box::new(r))
            };
            check_const(const_int_node(&node), b)?;
            return Ok(Typed::Node(node, ty));
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
            let l = self.expr(&b.left, &Ty::Value)?;
            let r = self.expr(&b.right, &Ty::Value)?;
            let (l, r, ty) = self.operands(l, r, b)?;
            let node = if ty == Ty::I64 {
                Node::IntCmp(op, Box::new(l), Box::new(r))
            } else {
                Node::Cmp(op, Box::new(l), Box::new(r))
            };
            return Ok(Typed::Node(node, Ty::Mask));
        }
        let both = |l: &mut Self| -> syn::Result<(Box<Node>, Box<Node>)> {
            Ok((Box::new(l.mask(&b.left)?), Box::new(l.mask(&b.right)?)))
        };
        match b.op {
            BinOp::And(_) => {
                let (l, r) = both(self)?;
                Ok(Typed::Node(Node::And(l, r), Ty::Mask))
            }
            BinOp::Or(_) => {
                let (l, r) = both(self)?;
                Ok(Typed::Node(Node::Or(l, r), Ty::Mask))
            }
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

    fn if_expr(&mut self, i: &syn::ExprIf, hint: &Ty) -> syn::Result<Typed> {
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
        let ty = match (&then, &els_t) {
            (Typed::Node(_, ty), _) | (_, Typed::Node(_, ty)) => ty.clone(),
            (Typed::Scalar(a, _), Typed::Scalar(b, _)) => {
                let (a, b) = (self.scalar_default(*a, hint), self.scalar_default(*b, hint));
                if a == b {
                    a
                } else {
                    hint.clone()
                }
            }
        };
        let then = self.coerce(then, &ty, &i.then_branch)?;
        let els = self.coerce(els_t, &ty, els)?;
        Ok(Typed::Node(Node::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(els), ty: ty.clone() }, ty))
    }
}
