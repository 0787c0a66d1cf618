//! CUDA C of a `#[tensor_op(reduce)]` definition: the four functions translated from their
//! Rust bodies into the member functions of a reducer struct template over the accumulate
//! type `C`, the interface of `kernels/cuda/include/reduce.cuh` (the built-ins' reducers
//! implement the same one by hand).
//!
//! The bodies are the Rust the CPU compiles (with `T` a one-lane value), so only what that
//! language allows appears: `let` (names, `_`, tuple patterns; shadowing renames), `if`/`else`
//! (statements, a tail, or `a if c else b` as a ternary), `return`, arithmetic and comparisons
//! (`tops_r_*`: a Rust literal takes the other operand's type), `&&`/`||`/`!`, tuples and
//! `.0` fields, `as` casts, `T::zero()`/`one()`/`from_f32`/`from_f64`/`from_i64`/`from_bool`,
//! the value methods (`x.sqrt()`, `x.min(y)`, ...), params, and calls of the definition's own
//! four functions. Anything else is a spanned compile error naming what CUDA cannot take.

use std::collections::HashMap;

use crate::errors::error;
use crate::ir::{Method, OpPath};
use crate::reduce_def::{ReduceArg, ReduceDef, ReduceFn};
use crate::signature::{type_name, ScalarTy};
use syn::{BinOp, Block, Expr, Lit, Pat, Stmt, Type, UnOp};

/// The reducer struct's name for op `name`.
pub fn reducer_name(name: &str) -> String {
    format!("tensor_op_reduce_{name}")
}

/// The C++ names of the four member functions holding the translated bodies.
const VALUE_FNS: [&str; 4] = ["identity_value", "fold_value", "combine_value", "finish_value"];

/// The reducer struct template of `def`.
pub fn emit(def: &ReduceDef, callees: &[OpPath]) -> syn::Result<String> {
    let tr = Translator::new(def, callees);
    let acc = tr.ty(&def.acc)?;
    let name = reducer_name(&def.name);
    let finish_ret = match &def.fns[3].item.sig.output {
        syn::ReturnType::Type(_, t) => tr.ty(t)?,
        syn::ReturnType::Default => return Err(error(&def.fns[3].item.sig, "finish returns a value")),
    };
    let mut s = format!("template <class C> struct {name} {{\n    typedef {acc} acc_t;\n");
    for (p, t) in &def.params {
        s.push_str(&format!("    {} p_{p};\n", t.c_type()));
    }
    let inits: Vec<String> =
        def.params.iter().enumerate().map(|(i, (p, t))| format!("p_{p}(({})p[{i}])", t.c_type())).collect();
    let init = if inits.is_empty() { String::new() } else { format!(" : {}", inits.join(", ")) };
    s.push_str(&format!("    __device__ __forceinline__ explicit {name}(const tops_param* p){init} {{ (void)p; }}\n"));
    // Positional value arguments of each function: (C++ type, role).
    let value_types: [&[&str]; 4] = [&[], &["acc_t", "C", "long long"], &["acc_t", "acc_t"], &["acc_t", "long long"]];
    let rets = ["acc_t".to_string(), "acc_t".to_string(), "acc_t".to_string(), finish_ret];
    for k in 0..4 {
        s.push_str(&tr.function(&def.fns[k], VALUE_FNS[k], value_types[k], &rets[k])?);
    }
    s.push_str(
        "    __device__ __forceinline__ acc_t identity() const { return identity_value(); }\n\
         \x20   template <class I> __device__ __forceinline__ acc_t fold(acc_t a, I x, long long i) const {\n\
         \x20       return fold_value(a, tops_cast<C>(x), i);\n    }\n\
         \x20   __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return combine_value(a, b); }\n\
         \x20   template <class O> __device__ __forceinline__ O finish(acc_t a, long long n) const {\n\
         \x20       return tops_cast<O>(finish_value(a, n));\n    }\n};\n",
    );
    Ok(s)
}

/// Translation state: the definition, the C++ names of Rust bindings in scope, a counter for
/// fresh names.
struct Translator<'a> {
    def: &'a ReduceDef,
    /// The ops the functions call (`reduce_compose::callees`).
    callees: &'a [OpPath],
    scopes: Vec<HashMap<String, String>>,
    fresh: std::cell::Cell<usize>,
    ret: String,
}

impl<'a> Translator<'a> {
    fn new(def: &'a ReduceDef, callees: &'a [OpPath]) -> Self {
        Translator { def, callees, scopes: Vec::new(), fresh: std::cell::Cell::new(0), ret: String::new() }
    }

    fn fresh(&self, base: &str) -> String {
        let k = self.fresh.get();
        self.fresh.set(k + 1);
        format!("v_{base}_{k}")
    }

    fn bind(&mut self, rust: &str, c: String) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(rust.to_string(), c);
        }
    }

    fn lookup(&self, rust: &str) -> Option<String> {
        self.scopes.iter().rev().find_map(|s| s.get(rust).cloned())
    }

    /// The C++ type of a Rust type of a definition: `T` → `C`, scalars, tuples.
    fn ty(&self, t: &Type) -> syn::Result<String> {
        match t {
            Type::Tuple(tt) if (1..=3).contains(&tt.elems.len()) => {
                let parts: Vec<String> = tt.elems.iter().map(|e| self.ty(e)).collect::<syn::Result<_>>()?;
                Ok(format!("tops_tuple{}<{}>", parts.len(), parts.join(", ")))
            }
            Type::Paren(p) => self.ty(&p.elem),
            t => match type_name(t) {
                Some(n) if self.def.type_param == n => Ok("C".into()),
                Some(n) => ScalarTy::from_name(&n.to_string()).map(|s| s.c_type().to_string()).ok_or_else(|| {
                    error(t, format!("the type `{n}` has no CUDA translation (use T, i64, bool, f32, f64 or tuples)"))
                }),
                None => Err(error(t, "this type has no CUDA translation (use T, i64, bool, f32, f64 or tuples)")),
            },
        }
    }

    /// One of the four functions as `RET NAME(values...) const { body }`.
    fn function(&self, f: &ReduceFn, name: &str, types: &[&str], ret: &str) -> syn::Result<String> {
        let mut tr = Translator {
            def: self.def,
            callees: self.callees,
            scopes: vec![HashMap::new()],
            fresh: self.fresh.clone(),
            ret: ret.into(),
        };
        let mut args = Vec::new();
        let mut prologue = String::new();
        let mut values = types.iter();
        let inputs: Vec<&syn::FnArg> = f.item.sig.inputs.iter().collect();
        for (arg, kind) in inputs.iter().zip(&f.args) {
            let syn::FnArg::Typed(pt) = arg else { return Err(error(arg, "a reduction function takes no self")) };
            match kind {
                ReduceArg::Param(i) => {
                    let (p, _) = &self.def.params[*i];
                    tr.bind(&p.to_string(), format!("p_{p}"));
                }
                ReduceArg::Value => {
                    let Some(ty) = values.next() else {
                        return Err(error(arg, "an argument this function does not take"));
                    };
                    let c = tr.fresh("arg");
                    args.push(format!("{ty} {c}"));
                    prologue.push_str(&format!("        (void){c};\n"));
                    tr.pattern(&pt.pat, &c, &mut prologue)?;
                }
            }
        }
        // Positions the Rust signature leaves out (fold's index, finish's count).
        for ty in values {
            let c = tr.fresh("unused");
            args.push(format!("{ty} {c}"));
            prologue.push_str(&format!("        (void){c};\n"));
        }
        let mut body = String::new();
        tr.block(&f.item.block, true, &mut body, 2)?;
        self.fresh.set(tr.fresh.get());
        Ok(format!(
            "    __device__ __forceinline__ {ret} {name}({}) const {{\n{prologue}{body}    }}\n",
            args.join(", ")
        ))
    }

    /// Binds a pattern to the C++ value `value` (an identifier, `_`, or a tuple of them).
    fn pattern(&mut self, pat: &Pat, value: &str, out: &mut String) -> syn::Result<()> {
        match pat {
            Pat::Ident(i) => {
                let c = self.fresh(&i.ident.to_string());
                out.push_str(&format!("        auto {c} = {value};\n        (void){c};\n"));
                self.bind(&i.ident.to_string(), c);
                Ok(())
            }
            Pat::Wild(_) => Ok(()),
            Pat::Type(t) => self.pattern(&t.pat, value, out),
            Pat::Paren(p) => self.pattern(&p.pat, value, out),
            Pat::Tuple(t) => {
                for (k, p) in t.elems.iter().enumerate() {
                    self.pattern(p, &format!("{value}.f{k}"), out)?;
                }
                Ok(())
            }
            p => Err(error(p, "this pattern has no CUDA translation (use a name, `_` or a tuple of them)")),
        }
    }

    /// A block's statements; in tail position its last expression is returned.
    fn block(&mut self, b: &Block, tail: bool, out: &mut String, depth: usize) -> syn::Result<()> {
        self.scopes.push(HashMap::new());
        let pad = "    ".repeat(depth);
        let n = b.stmts.len();
        for (k, stmt) in b.stmts.iter().enumerate() {
            match stmt {
                Stmt::Local(local) => {
                    let Some(init) = &local.init else { return Err(error(local, "a `let` needs a value here")) };
                    if init.diverge.is_some() {
                        return Err(error(local, "`let .. else` has no CUDA translation"));
                    }
                    let mut value = self.expr(&init.expr)?;
                    if let Pat::Type(pt) = &local.pat {
                        value = format!("tops_conv<{}>({value})", self.ty(&pt.ty)?);
                    }
                    let tmp = self.fresh("let");
                    out.push_str(&format!("{pad}auto {tmp} = {value};\n{pad}(void){tmp};\n"));
                    let mut binds = String::new();
                    self.pattern(&local.pat, &tmp, &mut binds)?;
                    out.push_str(&binds.replace("        ", &pad));
                }
                Stmt::Expr(e, semi) => {
                    let last = k + 1 == n && semi.is_none();
                    if last && tail {
                        self.tail(e, out, depth)?;
                    } else {
                        self.statement(e, out, depth)?;
                    }
                }
                Stmt::Item(i) => return Err(error(i, "items inside a reduction function have no CUDA translation")),
                Stmt::Macro(m) => return Err(error(m, "macros inside a reduction function have no CUDA translation")),
            }
        }
        self.scopes.pop();
        Ok(())
    }

    /// An expression whose value is the function's result.
    fn tail(&mut self, e: &Expr, out: &mut String, depth: usize) -> syn::Result<()> {
        let pad = "    ".repeat(depth);
        match e {
            Expr::If(i) => {
                let c = self.expr(&i.cond)?;
                out.push_str(&format!("{pad}if ({c}) {{\n"));
                self.block(&i.then_branch, true, out, depth + 1)?;
                let Some((_, els)) = &i.else_branch else {
                    return Err(error(i, "an `if` whose value is returned needs an `else`"));
                };
                out.push_str(&format!("{pad}}} else {{\n"));
                self.tail(els, out, depth + 1)?;
                out.push_str(&format!("{pad}}}\n"));
                Ok(())
            }
            Expr::Block(b) => {
                out.push_str(&format!("{pad}{{\n"));
                self.block(&b.block, true, out, depth + 1)?;
                out.push_str(&format!("{pad}}}\n"));
                Ok(())
            }
            Expr::Return(r) => self.statement(&Expr::Return(r.clone()), out, depth),
            e => {
                let v = self.expr(e)?;
                out.push_str(&format!("{pad}return tops_conv<{}>({v});\n", self.ret));
                Ok(())
            }
        }
    }

    /// An expression evaluated for its effect (`if` statements, `return`).
    fn statement(&mut self, e: &Expr, out: &mut String, depth: usize) -> syn::Result<()> {
        let pad = "    ".repeat(depth);
        match e {
            Expr::If(i) => {
                let c = self.expr(&i.cond)?;
                out.push_str(&format!("{pad}if ({c}) {{\n"));
                self.block(&i.then_branch, false, out, depth + 1)?;
                if let Some((_, els)) = &i.else_branch {
                    out.push_str(&format!("{pad}}} else {{\n"));
                    self.statement(els, out, depth + 1)?;
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            Expr::Block(b) => {
                out.push_str(&format!("{pad}{{\n"));
                self.block(&b.block, false, out, depth + 1)?;
                out.push_str(&format!("{pad}}}\n"));
            }
            Expr::Return(r) => {
                let Some(v) = &r.expr else { return Err(error(r, "a reduction function returns a value")) };
                let v = self.expr(v)?;
                out.push_str(&format!("{pad}return tops_conv<{}>({v});\n", self.ret));
            }
            e => {
                let v = self.expr(e)?;
                out.push_str(&format!("{pad}(void)({v});\n"));
            }
        }
        Ok(())
    }

    /// A value expression.
    fn expr(&self, e: &Expr) -> syn::Result<String> {
        Ok(match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => format!("tops_ilit({}LL)", i.base10_parse::<i64>()?),
                Lit::Float(f) => format!("tops_flit({:?})", f.base10_parse::<f64>()?),
                Lit::Bool(b) => b.value.to_string(),
                l => return Err(error(l, "this literal has no CUDA translation")),
            },
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return Err(error(p, "only local names, params and `T::..()` calls have a CUDA translation"));
                };
                self.lookup(&id.to_string()).ok_or_else(|| error(id, format!("`{id}` is not a local name or param")))?
            }
            Expr::Paren(p) => format!("({})", self.expr(&p.expr)?),
            Expr::Group(g) => self.expr(&g.expr)?,
            Expr::Tuple(t) if (1..=3).contains(&t.elems.len()) => {
                let parts: Vec<String> = t.elems.iter().map(|e| self.expr(e)).collect::<syn::Result<_>>()?;
                format!("tops_tuple({})", parts.join(", "))
            }
            Expr::Field(f) => match &f.member {
                syn::Member::Unnamed(i) => format!("({}).f{}", self.expr(&f.base)?, i.index),
                syn::Member::Named(n) => return Err(error(n, "only tuple fields (`.0`) have a CUDA translation")),
            },
            Expr::Cast(c) => format!("tops_conv<{}>({})", self.ty(&c.ty)?, self.expr(&c.expr)?),
            Expr::Unary(u) => {
                let v = self.expr(&u.expr)?;
                match u.op {
                    UnOp::Neg(_) => format!("tops_r_neg({v})"),
                    UnOp::Not(_) => format!("(!({v}))"),
                    _ => return Err(error(u, "this unary operator has no CUDA translation")),
                }
            }
            Expr::Binary(b) => {
                let (l, r) = (self.expr(&b.left)?, self.expr(&b.right)?);
                let f = match b.op {
                    BinOp::Add(_) => "add",
                    BinOp::Sub(_) => "sub",
                    BinOp::Mul(_) => "mul",
                    BinOp::Div(_) => "div",
                    BinOp::Eq(_) => "eq",
                    BinOp::Ne(_) => "ne",
                    BinOp::Lt(_) => "lt",
                    BinOp::Le(_) => "le",
                    BinOp::Gt(_) => "gt",
                    BinOp::Ge(_) => "ge",
                    BinOp::And(_) => return Ok(format!("(({l}) && ({r}))")),
                    BinOp::Or(_) => return Ok(format!("(({l}) || ({r}))")),
                    BinOp::BitAnd(_) => return Ok(format!("(tops_conv<bool>({l}) && tops_conv<bool>({r}))")),
                    BinOp::BitOr(_) => return Ok(format!("(tops_conv<bool>({l}) || tops_conv<bool>({r}))")),
                    _ => return Err(error(b, "this operator has no CUDA translation")),
                };
                format!("tops_r_{f}({l}, {r})")
            }
            Expr::If(i) => {
                // `if c { a } else { b }` as a value: both branches single expressions.
                let single = |b: &Block| match b.stmts.as_slice() {
                    [Stmt::Expr(e, None)] => Some(e.clone()),
                    _ => None,
                };
                let (Some(a), Some((_, els))) = (single(&i.then_branch), &i.else_branch) else {
                    return Err(error(i, "an `if` used as a value has one expression per branch and an `else` here"));
                };
                let b = match &**els {
                    Expr::Block(b) => single(&b.block).ok_or_else(|| error(b, "one expression per branch"))?,
                    e => e.clone(),
                };
                format!("(({}) ? ({}) : ({}))", self.expr(&i.cond)?, self.expr(&a)?, self.expr(&b)?)
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                let Some(method) = Method::ALL.iter().find(|x| x.name() == name) else {
                    return Err(error(&m.method, format!("`.{name}()` has no CUDA translation")));
                };
                let mut args = vec![self.expr(&m.receiver)?];
                for a in &m.args {
                    args.push(self.expr(a)?);
                }
                if args.len() == 2 {
                    format!("tops_r_{}({})", method.value_fn(), args.join(", "))
                } else {
                    format!("tops_{}({})", method.value_fn(), args.join(", "))
                }
            }
            Expr::Call(c) => self.call(c)?,
            e => return Err(error(e, "this expression has no CUDA translation")),
        })
    }

    /// `T::zero()`-style constructors and calls of the definition's own functions.
    fn call(&self, c: &syn::ExprCall) -> syn::Result<String> {
        let Expr::Path(p) = &*c.func else { return Err(error(&c.func, "only named functions can be called")) };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let args: Vec<String> = c.args.iter().map(|a| self.expr(a)).collect::<syn::Result<_>>()?;
        if let [ty, f] = segs.as_slice()
            && self.def.type_param == ty
        {
            let conv = |t: &str| format!("tops_cast<C>(tops_conv<{t}>({}))", args.first().cloned().unwrap_or_default());
            return Ok(match f.as_str() {
                "zero" => "tops_zero<C>()".into(),
                "one" => "tops_one<C>()".into(),
                "from_f32" => conv("float"),
                "from_f64" => conv("double"),
                "from_i64" => conv("long long"),
                "from_bool" => conv("bool"),
                other => return Err(error(p, format!("`{ty}::{other}` has no CUDA translation"))),
            });
        }
        let own = match segs.as_slice() {
            [f] => ["identity", "fold", "combine", "finish"].iter().position(|n| n == f),
            _ => None,
        };
        let Some(k) = own else { return self.op_call(p, c) };
        let f = &segs[0];
        let target = &self.def.fns[k];
        let types: [&[&str]; 4] = [&[], &["acc_t", "C", "long long"], &["acc_t", "acc_t"], &["acc_t", "long long"]];
        // Pass the value arguments (params are members), converted to the parameter types.
        let mut values = Vec::new();
        for (a, kind) in args.iter().zip(&target.args) {
            if let ReduceArg::Value = kind {
                let t = types[k].get(values.len()).ok_or_else(|| error(c, "too many arguments"))?;
                values.push(format!("tops_conv<{t}>({a})"));
            }
        }
        while values.len() < types[k].len() {
            values.push(format!("tops_conv<{}>(tops_ilit(0LL))", types[k][values.len()]));
        }
        if c.args.len() != target.args.len() {
            return Err(error(c, format!("`{f}` takes {} arguments", target.args.len())));
        }
        Ok(format!("{}({})", VALUE_FNS[k], values.join(", ")))
    }

    /// A call of a map op: its dispatcher over the accumulate type (`reduce_compose`), with
    /// values converted to `C` and literals and params passed as they are (C++ converts
    /// them to the callee's param types).
    fn op_call(&self, p: &syn::ExprPath, c: &syn::ExprCall) -> syn::Result<String> {
        let path = crate::callee::op_path(p, c, &self.def.type_param)?;
        let Some(k) = self.callees.iter().position(|q| q.text() == path.text()) else {
            return Err(error(p, "this call was not seen when the reduction's callees were collected"));
        };
        let mut args = Vec::new();
        for a in &c.args {
            args.push(match a {
                Expr::Lit(l) => match &l.lit {
                    Lit::Int(i) => format!("{}LL", i.base10_parse::<i64>()?),
                    Lit::Float(f) => format!("{:?}", f.base10_parse::<f64>()?),
                    Lit::Bool(b) => b.value.to_string(),
                    l => return Err(error(l, "this literal has no CUDA translation")),
                },
                Expr::Path(q)
                    if q.path.get_ident().is_some_and(|i| {
                        self.def.params.iter().any(|(n, _)| n == i)
                            && self.lookup(&i.to_string()) == Some(format!("p_{i}"))
                    }) =>
                {
                    self.expr(a)?
                }
                a => format!("tops_conv<C>({})", self.expr(a)?),
            });
        }
        let name = crate::reduce_compose::dispatcher(&reducer_name(&self.def.name), k);
        Ok(format!("{name}<C>::call({})", args.join(", ")))
    }
}
