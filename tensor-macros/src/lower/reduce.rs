//! What only a reduction's functions have, lowered into the same IR as map bodies: `i64`s
//! (the index, the count, integer accumulators), tuples (`(a, b)`, `.0`, tuple patterns),
//! `as i64`, `return` (a function's result, or an early result in an `if` before the
//! end), and calls of the four functions by each other, inlined.

use super::{describe, Binding, Lowerer, Typed};
use crate::errors::error;
use crate::ir::{Let, Node, ReduceBody, Scalar, Ty};
use crate::reduce_def::{Finish, ReduceArg, ReduceDef, ReduceFn};
use crate::signature::ScalarTy;
use syn::{Expr, Pat, Stmt};

/// The four functions' names, in [`ReduceDef::fns`] order.
const NAMES: [&str; 4] = ["identity", "fold", "combine", "finish"];

/// The reduction being lowered.
pub(super) struct Context<'a> {
    /// Its definition.
    def: &'a ReduceDef,
    /// The positional value arguments each function may take (fold's index and finish's
    /// count are optional: a function declares a prefix).
    value_args: [Vec<Ty>; 4],
    /// What each function returns.
    returns: [Ty; 4],
    /// The functions being lowered, outermost first (a call of one of them is recursion).
    stack: Vec<usize>,
}

/// Lowers the four functions of `def`.
pub fn lower_reduce(def: &ReduceDef) -> syn::Result<ReduceBody> {
    let mut l = Lowerer::new(&def.type_param, def.bound, None);
    // Before `l.reduce` is set, `type_of` would refuse `i64` and tuples.
    l.reduce = Some(Context {
        def,
        value_args: Default::default(),
        returns: [Ty::Value, Ty::Value, Ty::Value, Ty::Value],
        stack: Vec::new(),
    });
    let acc = l.type_of(&def.acc)?;
    let finish = match def.finish {
        Finish::Value => Ty::Value,
        Finish::I64 => Ty::I64,
        Finish::Bool => Ty::Mask,
    };
    if let Some(ctx) = &mut l.reduce {
        ctx.value_args =
            [vec![], vec![acc.clone(), Ty::Value, Ty::I64], vec![acc.clone(); 2], vec![acc.clone(), Ty::I64]];
        ctx.returns = [acc.clone(), acc.clone(), acc.clone(), finish.clone()];
    }
    // The reducer's params are C++ members `p_<name>`: no local may shadow one.
    for (p, _) in &def.params {
        l.used.insert(format!("p_{p}"));
    }
    let mut fns = Vec::new();
    for k in 0..4 {
        fns.push(l.top_function(k)?);
    }
    let fns: [Node; 4] = fns.try_into().map_err(|_| error(&def.ident, "a reduction has four functions"))?;
    Ok(ReduceBody { fns, locals: l.locals, callees: l.callees, acc, finish })
}

/// `{ lets; node }`, one block where `node` is one itself (every local's name is unique,
/// so merging scopes changes nothing).
fn with_lets(mut lets: Vec<Let>, node: Node) -> Node {
    match node {
        _ if lets.is_empty() => node,
        Node::Block(inner, tail) => {
            lets.extend(inner);
            Node::Block(lets, tail)
        }
        node => Node::Block(lets, Box::new(node)),
    }
}

/// True when the block's last statement leaves the function (`return`, or an `if`/`else`
/// whose branches all do).
fn diverges(stmts: &[Stmt]) -> bool {
    match stmts.last() {
        Some(Stmt::Expr(e, _)) => expr_diverges(e),
        _ => false,
    }
}

fn expr_diverges(e: &Expr) -> bool {
    match e {
        Expr::Return(_) => true,
        Expr::Block(b) => diverges(&b.block.stmts),
        Expr::If(i) => diverges(&i.then_branch.stmts) && i.else_branch.as_ref().is_some_and(|(_, e)| expr_diverges(e)),
        _ => false,
    }
}

impl<'a> Lowerer<'a> {
    fn ctx(&self) -> &Context<'a> {
        self.reduce.as_ref().expect("lowering a reduction")
    }

    fn def(&self) -> &'a ReduceDef {
        self.ctx().def
    }

    /// Function `k` as the body of its own emitted function: its value arguments are
    /// [`Node::Input`]s, its params the reduction's.
    fn top_function(&mut self, k: usize) -> syn::Result<Node> {
        let def = self.def();
        let f = &def.fns[k];
        let mut bindings = Vec::new();
        let mut next = 0;
        for kind in &f.args {
            bindings.push(match kind {
                ReduceArg::Param(i) => Binding::Scalar(def.params[*i].1, Scalar::Param(*i)),
                ReduceArg::Value => {
                    let ty = self.ctx().value_args[k][next].clone();
                    next += 1;
                    Binding::Node(Node::Input(next - 1), ty)
                }
            });
        }
        self.function(k, f, bindings)
    }

    /// The body of function `k` with its arguments bound to `bindings`, in a scope of its
    /// own.
    fn function(&mut self, k: usize, f: &'a ReduceFn, bindings: Vec<Binding>) -> syn::Result<Node> {
        let saved = std::mem::take(&mut self.scope);
        if let Some(ctx) = &mut self.reduce {
            ctx.stack.push(k);
        }
        let result = (|| {
            let mut lets = Vec::new();
            for (input, b) in f.item.sig.inputs.iter().zip(bindings) {
                let syn::FnArg::Typed(pt) = input else {
                    return Err(error(input, "a reduction function takes no `self`"));
                };
                self.bind_pattern(&pt.pat, b, &mut lets)?;
            }
            let ret = self.ctx().returns[k].clone();
            let body = self.fn_stmts(&f.item.block.stmts, &ret, &f.item.block)?;
            Ok(with_lets(lets, body))
        })();
        if let Some(ctx) = &mut self.reduce {
            ctx.stack.pop();
        }
        self.scope = saved;
        result
    }

    /// The index of the reduction function `p` names (`combine`), when it names one.
    pub(super) fn own_function(&self, p: &syn::ExprPath) -> Option<usize> {
        self.reduce.as_ref()?;
        let ident = p.path.get_ident().filter(|_| p.qself.is_none())?;
        NAMES.iter().position(|n| ident == n)
    }

    /// A call of one of the four functions by another: its body, inlined, with the
    /// arguments evaluated once in the caller's scope.
    pub(super) fn own_call(&mut self, k: usize, c: &syn::ExprCall) -> syn::Result<Typed> {
        let def = self.def();
        let f = &def.fns[k];
        if self.ctx().stack.contains(&k) {
            let chain: Vec<&str> = self.ctx().stack.iter().map(|&i| NAMES[i]).collect();
            return Err(error(
                &c.func,
                format!(
                    "`{}` is called while it runs ({} → {}): the functions of a reduction cannot recurse",
                    NAMES[k],
                    chain.join(" → "),
                    NAMES[k]
                ),
            ));
        }
        if c.args.len() != f.args.len() {
            return Err(error(
                c,
                format!(
                    "`{}` takes {} argument(s) (its params included), found {}",
                    NAMES[k],
                    f.args.len(),
                    c.args.len()
                ),
            ));
        }
        let mut bindings = Vec::new();
        let mut next = 0;
        for (a, kind) in c.args.iter().zip(&f.args) {
            bindings.push(match kind {
                ReduceArg::Param(i) => {
                    let ty = def.params[*i].1;
                    Binding::Scalar(ty, self.scalar(a, ty)?)
                }
                ReduceArg::Value => {
                    let ty = self.ctx().value_args[k][next].clone();
                    next += 1;
                    Binding::Node(self.lower_as(a, &ty)?, ty)
                }
            });
        }
        let ret = self.ctx().returns[k].clone();
        Ok(Typed::Node(self.function(k, f, bindings)?, ret))
    }

    /// Binds a pattern (a name, `_`, a tuple of them, with an optional type) to `b`,
    /// pushing the lets that hold what is bound.
    pub(super) fn bind_pattern(&mut self, pat: &Pat, b: Binding, lets: &mut Vec<Let>) -> syn::Result<()> {
        match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                if let Some(m) = &pi.mutability {
                    return Err(error(m, "locals are immutable in a #[tensor_op] body (no `mut`)"));
                }
                let b = match b {
                    Binding::Node(n @ (Node::Input(_) | Node::Local(_)), ty) => Binding::Node(n, ty),
                    Binding::Node(n, ty) => {
                        let id = self.new_local(&pi.ident);
                        lets.push(Let { id, init: n });
                        Binding::Node(Node::Local(id), ty)
                    }
                    scalar => scalar,
                };
                self.bind(&pi.ident, b);
                Ok(())
            }
            Pat::Wild(_) => Ok(()),
            Pat::Paren(p) => self.bind_pattern(&p.pat, b, lets),
            Pat::Type(pt) => {
                let want = self.type_of(&pt.ty)?;
                let b = match b {
                    Binding::Node(n, ty) if ty == want => Binding::Node(n, ty),
                    Binding::Node(_, ty) => {
                        return Err(error(&pt.ty, format!("this is {}, not {}", describe(&ty), describe(&want))))
                    }
                    Binding::Scalar(ty, s) => Binding::Node(self.coerce(Typed::Scalar(ty, s), &want, &pt.ty)?, want),
                };
                self.bind_pattern(&pt.pat, b, lets)
            }
            Pat::Tuple(t) if self.reduce.is_some() => {
                let (node, tys) = match b {
                    Binding::Node(n, Ty::Tuple(tys)) if tys.len() == t.elems.len() => (n, tys),
                    Binding::Node(_, ty) => {
                        return Err(error(
                            t,
                            format!("this pattern takes a tuple of {}, found {}", t.elems.len(), describe(&ty)),
                        ))
                    }
                    Binding::Scalar(..) => {
                        return Err(error(t, "this pattern takes a tuple, found a literal or param"))
                    }
                };
                // Hold the tuple once, then bind each field.
                let whole = match node {
                    n @ (Node::Input(_) | Node::Local(_)) => n,
                    n => {
                        let id = self.new_local(&syn::Ident::new("tuple", proc_macro2::Span::call_site()));
                        lets.push(Let { id, init: n });
                        Node::Local(id)
                    }
                };
                for (k, (p, ty)) in t.elems.iter().zip(tys).enumerate() {
                    self.bind_pattern(p, Binding::Node(Node::Field(Box::new(whole.clone()), k), ty), lets)?;
                }
                Ok(())
            }
            other => Err(error(
                other,
                if self.reduce.is_some() {
                    "expected a name, `_` or a tuple of them"
                } else {
                    "expected a plain name after `let`"
                },
            )),
        }
    }

    /// The statements of a function body (or of a branch that returns), whose result —
    /// the tail expression or a `return` — has type `ret`. An `if` before the end must
    /// `return` in its branch: `if c { return x; }` is `if c { x } else { <the rest> }`.
    fn fn_stmts(&mut self, stmts: &[Stmt], ret: &Ty, whole: &dyn quote::ToTokens) -> syn::Result<Node> {
        let depth = self.scope.len();
        let mut lets = Vec::new();
        let mut result = None;
        for (i, stmt) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match stmt {
                Stmt::Local(local) => lets.extend(self.local(local)?),
                Stmt::Expr(Expr::Return(r), _) => {
                    if !last {
                        return Err(error(&stmts[i + 1], "unreachable: this follows a `return`"));
                    }
                    result = Some(self.returned(r, ret)?);
                }
                Stmt::Expr(Expr::If(ifx), _) if !last => {
                    if !diverges(&ifx.then_branch.stmts) {
                        return Err(error(
                            ifx,
                            "an `if` before the end of a function must `return` in its branch (`if c { return x; }`): \
                             locals are immutable, so it would have no effect",
                        ));
                    }
                    if let Some((_, els)) = &ifx.else_branch {
                        let at: &dyn quote::ToTokens = if expr_diverges(els) { &stmts[i + 1] } else { &**els };
                        return Err(error(
                            at,
                            "unreachable or without effect: both branches of this `if` must be the end",
                        ));
                    }
                    let cond = self.mask(&ifx.cond)?;
                    let then = self.fn_stmts(&ifx.then_branch.stmts, ret, &ifx.then_branch)?;
                    let els = self.fn_stmts(&stmts[i + 1..], ret, whole)?;
                    result = Some(Node::If {
                        cond: Box::new(cond),
                        then: Box::new(then),
                        els: Box::new(els),
                        ty: ret.clone(),
                    });
                    break;
                }
                Stmt::Expr(e, None) if last => result = Some(self.fn_tail(e, ret)?),
                Stmt::Expr(e @ Expr::If(_), Some(_)) if last => result = Some(self.fn_tail(e, ret)?),
                Stmt::Expr(e, semi) => {
                    self.expr(e, &Ty::Value)?;
                    let msg = match (semi, last) {
                        (Some(_), true) => "the function must end with its result (an expression without `;`) or a `return`",
                        (Some(_), false) => {
                            "a statement here has no effect: only `let`, `if c { return x; }` and the result are allowed"
                        }
                        (None, _) => "expected `;`",
                    };
                    return Err(error(stmt, msg));
                }
                Stmt::Item(item) => return Err(error(item, "items are not allowed in a #[tensor_op] body")),
                Stmt::Macro(m) => return Err(error(&m.mac, "macros are not allowed in a #[tensor_op] body")),
            }
        }
        self.scope.truncate(depth);
        let Some(result) = result else {
            return Err(error(
                whole,
                "the function must end with its result (an expression without `;`) or a `return`",
            ));
        };
        Ok(with_lets(lets, result))
    }

    /// The result expression of a function or branch: an `if`/`else` whose branches are
    /// lowered as function ends (so they may `return`), a block (likewise), a `return`, or a
    /// value of type `ret`.
    fn fn_tail(&mut self, e: &Expr, ret: &Ty) -> syn::Result<Node> {
        match e {
            Expr::If(i) => {
                let cond = self.mask(&i.cond)?;
                let Some((_, els)) = &i.else_branch else {
                    return Err(error(i, "an `if` that gives the result needs an `else`"));
                };
                let then = self.fn_stmts(&i.then_branch.stmts, ret, &i.then_branch)?;
                let els = self.fn_tail(els, ret)?;
                Ok(Node::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(els), ty: ret.clone() })
            }
            Expr::Block(b) if b.label.is_none() && b.attrs.is_empty() => self.fn_stmts(&b.block.stmts, ret, &b.block),
            Expr::Return(r) => self.returned(r, ret),
            e => self.lower_as(e, ret),
        }
    }

    fn returned(&mut self, r: &syn::ExprReturn, ret: &Ty) -> syn::Result<Node> {
        match &r.expr {
            Some(e) => self.lower_as(e, ret),
            None => Err(error(r, "a reduction function returns a value: `return x;`")),
        }
    }

    /// `(a, b, ..)`: one to three elements; literal elements take the types `hint` gives.
    pub(super) fn tuple(&mut self, t: &syn::ExprTuple, hint: &Ty) -> syn::Result<Typed> {
        if !(1..=3).contains(&t.elems.len()) {
            return Err(error(t, "a tuple has one to three elements"));
        }
        let hints: Option<&Vec<Ty>> = match hint {
            Ty::Tuple(h) if h.len() == t.elems.len() => Some(h),
            _ => None,
        };
        let (mut nodes, mut tys) = (Vec::new(), Vec::new());
        for (k, e) in t.elems.iter().enumerate() {
            let h = hints.map_or(Ty::Value, |h| h[k].clone());
            let (n, ty) = match self.expr(e, &h)? {
                Typed::Node(n, ty) => (n, ty),
                Typed::Scalar(sty, s) => {
                    let ty = if hints.is_some() { h } else { self.scalar_default(sty, &Ty::I64) };
                    (self.coerce(Typed::Scalar(sty, s), &ty, e)?, ty)
                }
            };
            if matches!(ty, Ty::Tuple(_)) {
                return Err(error(e, "tuples do not nest: an element is `T`, `i64` or `bool`"));
            }
            nodes.push(n);
            tys.push(ty);
        }
        Ok(Typed::Node(Node::Tuple(nodes), Ty::Tuple(tys)))
    }

    /// `t.0`.
    pub(super) fn field(&mut self, f: &syn::ExprField) -> syn::Result<Typed> {
        let syn::Member::Unnamed(index) = &f.member else {
            return Err(error(&f.member, "only tuple fields (`.0`, `.1`, `.2`) exist here"));
        };
        let k = index.index as usize;
        match self.expr(&f.base, &Ty::Value)? {
            Typed::Node(n, Ty::Tuple(tys)) if k < tys.len() => {
                Ok(Typed::Node(Node::Field(Box::new(n), k), tys[k].clone()))
            }
            Typed::Node(_, Ty::Tuple(tys)) => {
                Err(error(&f.member, format!("a tuple of {} has no field {k}", tys.len())))
            }
            _ => Err(error(&f.base, "a field `.k` is taken of a tuple")),
        }
    }

    /// `e as i64`, of a condition or an `i64`.
    pub(super) fn cast(&mut self, c: &syn::ExprCast) -> syn::Result<Typed> {
        if crate::signature::type_name(&c.ty).is_none_or(|n| n != "i64") {
            return Err(error(
                &c.ty,
                format!(
                    "`as` converts a condition or an `i64` to `i64`; a value is made with `{}::from_i64(..)`",
                    self.type_param
                ),
            ));
        }
        Ok(match self.expr(&c.expr, &Ty::I64)? {
            Typed::Scalar(ScalarTy::I64, s) => Typed::Scalar(ScalarTy::I64, s),
            Typed::Scalar(ScalarTy::Bool, Scalar::Bool(b)) => Typed::Scalar(ScalarTy::I64, Scalar::Int(b as i64)),
            Typed::Scalar(ScalarTy::Bool, s) => {
                Typed::Node(Node::Convert { from: Ty::Mask, to: Ty::I64, arg: Box::new(Node::MaskOf(s)) }, Ty::I64)
            }
            Typed::Node(n, Ty::I64) => Typed::Node(n, Ty::I64),
            Typed::Node(n, Ty::Mask) => {
                Typed::Node(Node::Convert { from: Ty::Mask, to: Ty::I64, arg: Box::new(n) }, Ty::I64)
            }
            _ => {
                return Err(error(
                    &c.expr,
                    "`as i64` converts a condition or an `i64`; an element value has no integer conversion here",
                ))
            }
        })
    }
}
