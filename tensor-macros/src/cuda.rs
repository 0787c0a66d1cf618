//! CUDA C emission: one `__device__` function per dtype, calling only the `tops_*` helpers
//! of the CUDA prelude.

use crate::dtype::Dtype;
use crate::dtype::DtypeCode;
use crate::ir::{Arith, Body, CallArg, Node, Scalar, Ty};
use crate::signature::{ScalarTy, Signature};

/// The CUDA C of one op for one dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaFn {
    /// The function name: `tensor_op_<op>_<dtype>`.
    pub name: String,
    /// The full function definition. A call of another op appears as
    /// [`CALLEE_MARK`]`<i>`[`CALLEE_MARK`] (`i` indexing [`Body::callees`]): the callee's C
    /// function name is only known to the generated code (a `const` of the callee), see
    /// [`CudaFn::pieces`].
    pub source: String,
}

/// Brackets a callee's index in [`CudaFn::source`].
pub const CALLEE_MARK: char = '\u{1}';

/// A piece of a function's source: text, or the C name of the i-th callee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal C text.
    Text(String),
    /// The function name of callee `i` (for the same dtype).
    Callee(usize),
}

impl CudaFn {
    /// The source cut at the callee marks.
    pub fn pieces(&self) -> Vec<Piece> {
        self.source
            .split(CALLEE_MARK)
            .enumerate()
            .filter(|(_, t)| !t.is_empty())
            .map(|(i, t)| {
                if i % 2 == 1 {
                    Piece::Callee(t.parse().expect("a callee index"))
                } else {
                    Piece::Text(t.to_string())
                }
            })
            .collect()
    }
}

/// The name of the `__device__` function of op `op` for `dtype`.
pub fn function_name(op: &str, dtype: Dtype) -> String {
    format!("tensor_op_{op}_{}", dtype.name())
}

/// Emits the `__device__` function of the op named `op` for `dtype`:
/// `__device__ __forceinline__ OUT name(C a, C b, PARAM p)`, tensor arguments first.
pub fn emit_cuda(op: &str, sig: &Signature, body: &Body, dtype: Dtype) -> CudaFn {
    let c = dtype.c_type();
    let out = if sig.predicate { "bool" } else { c };
    let name = function_name(op, dtype);
    let inputs: Vec<String> = sig.inputs().iter().map(|i| c_ident(&i.to_string())).collect();
    let params: Vec<(String, ScalarTy)> = sig.params().iter().map(|(i, t)| (c_ident(&i.to_string()), *t)).collect();
    let args: Vec<String> = inputs
        .iter()
        .map(|i| format!("{c} {i}"))
        .chain(params.iter().map(|(p, t)| format!("{} {p}", t.c_type())))
        .collect();
    let e = Emitter { c, inputs: &inputs, params: &params, locals: &body.locals, callee: None };
    let text = format!(
        "__device__ __forceinline__ {out} {name}({}) {{\n{}}}\n",
        args.join(", "),
        e.statements(&body.root, "")
    );
    CudaFn { name, source: text }
}

/// The statements of a function returning `root` (its top-level lets as `const auto`
/// locals), each indented by four spaces; `convert` wraps the returned expression
/// (`tops_conv<acc_t>(` .. `)`), or is empty.
fn statements_of(e: &Emitter<'_>, root: &Node, convert: &str) -> String {
    let mut text = String::new();
    let (lets, tail) = match root {
        Node::Block(lets, tail) => (&lets[..], &**tail),
        root => (&[][..], root),
    };
    for l in lets {
        text += &format!("    const auto {} = {};\n", e.locals[l.id], e.node(&l.init));
    }
    let close = if convert.is_empty() { "" } else { ")" };
    text += &format!("    return {convert}{}{close};\n", e.node(tail));
    text
}

/// The statements of one function of a reduction's reducer struct template (over the
/// accumulate type `C`): `inputs` and `params` are the C names of its arguments and of the
/// reducer's param members; a call of map op `k` calls `callee(k)` (the reducer's
/// dispatcher of that callee). The result is converted by `convert` (see
/// [`statements_of`]).
pub fn reduce_statements(
    root: &Node,
    locals: &[String],
    inputs: &[String],
    params: &[(String, ScalarTy)],
    callee: &dyn Fn(usize) -> String,
    convert: &str,
) -> String {
    let e = Emitter { c: "C", inputs, params, locals, callee: Some(callee) };
    statements_of(&e, root, convert)
}

/// The C type of a reduction type over the accumulate type `C`.
pub fn c_type_of(ty: &Ty) -> String {
    match ty {
        Ty::Value => "C".into(),
        Ty::Mask => "bool".into(),
        Ty::I64 => "long long".into(),
        Ty::Tuple(items) => {
            let items: Vec<String> = items.iter().map(c_type_of).collect();
            format!("tops_tuple{}<{}>", items.len(), items.join(", "))
        }
    }
}

/// A Rust argument name as a C identifier (C keywords get a `_` appended).
fn c_ident(name: &str) -> String {
    if crate::lower::C_RESERVED.contains(&name) || name.starts_with("tops_") {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

struct Emitter<'a> {
    /// The value's C type (`C` in a reducer template).
    c: &'a str,
    inputs: &'a [String],
    params: &'a [(String, ScalarTy)],
    locals: &'a [String],
    /// In a reducer: the C name of callee `k` (its dispatcher); else callees are marked
    /// ([`CALLEE_MARK`]).
    callee: Option<&'a dyn Fn(usize) -> String>,
}

impl Emitter<'_> {
    fn statements(&self, root: &Node, convert: &str) -> String {
        statements_of(self, root, convert)
    }

    fn node(&self, n: &Node) -> String {
        let c = self.c;
        match n {
            Node::Input(i) => self.inputs[*i].clone(),
            Node::Local(id) => self.locals[*id].clone(),
            Node::Zero => format!("tops_cast<{c}>(0)"),
            Node::One => format!("tops_cast<{c}>(1)"),
            Node::FromScalar(ty, s) => format!("tops_cast<{c}>({})", self.scalar(s, *ty)),
            Node::Arith(op, a, b) => format!("tops_{}({}, {})", arith_name(*op), self.node(a), self.node(b)),
            Node::Neg(a) => format!("tops_neg({})", self.node(a)),
            Node::Method(m, args) => {
                let fname = m.value_fn();
                let args: Vec<String> = args.iter().map(|a| self.node(a)).collect();
                format!("tops_{fname}({})", args.join(", "))
            }
            Node::Cmp(op, a, b) => format!("tops_{}({}, {})", op.name(), self.node(a), self.node(b)),
            Node::And(a, b) => format!("({} && {})", self.node(a), self.node(b)),
            Node::Or(a, b) => format!("({} || {})", self.node(a), self.node(b)),
            Node::Not(a) => format!("(!{})", self.node(a)),
            Node::MaskOf(s) => self.scalar(s, ScalarTy::Bool),
            Node::If { cond, then, els, .. } => {
                format!("({} ? {} : {})", self.node(cond), self.node(then), self.node(els))
            }
            Node::Call { callee, args } => {
                let args: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        CallArg::Value(n, _) => self.node(n),
                        CallArg::Scalar(ty, s) => self.scalar(s, *ty),
                    })
                    .collect();
                match self.callee {
                    Some(name) => format!("{}({})", name(*callee), args.join(", ")),
                    None => format!("{CALLEE_MARK}{callee}{CALLEE_MARK}({})", args.join(", ")),
                }
            }
            Node::Int(s) => self.scalar(s, ScalarTy::I64),
            Node::IntArith(op, a, b) => format!("tops_{}({}, {})", arith_name(*op), self.node(a), self.node(b)),
            Node::IntNeg(a) => format!("tops_neg({})", self.node(a)),
            Node::IntCmp(op, a, b) => format!("tops_{}({}, {})", op.name(), self.node(a), self.node(b)),
            Node::IntMethod(m, args) => {
                let args: Vec<String> = args.iter().map(|a| self.node(a)).collect();
                format!("tops_{}({})", m.value_fn(), args.join(", "))
            }
            Node::Convert { to, arg, .. } => {
                let to = if *to == Ty::I64 { "long long" } else { c };
                format!("tops_cast<{to}>({})", self.node(arg))
            }
            Node::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|n| self.node(n)).collect();
                format!("tops_tuple({})", items.join(", "))
            }
            Node::Field(t, k) => format!("({}).f{k}", self.node(t)),
            Node::Block(lets, tail) => {
                let mut s = String::from("([&]() { ");
                for l in lets {
                    s += &format!("const auto {} = {}; ", self.locals[l.id], self.node(&l.init));
                }
                s += &format!("return {}; }}())", self.node(tail));
                s
            }
        }
    }

    /// A scalar expression of type `ty` as a C expression of the param type. Arithmetic goes
    /// through the prelude's `tops_*` helpers, which are total on integers (wrapping, division
    /// by zero gives 0, `MIN / -1` gives `MIN`): C's own `/` traps or is undefined there.
    fn scalar(&self, s: &Scalar, ty: ScalarTy) -> String {
        match s {
            Scalar::Param(i) => self.params[*i].0.clone(),
            Scalar::Float(d) => {
                let d = normalize_float(d);
                if ty == ScalarTy::F32 {
                    format!("{d}f")
                } else {
                    d
                }
            }
            Scalar::Int(v) => match ty {
                ScalarTy::F32 => format!("{v}.0f"),
                ScalarTy::F64 => format!("{v}.0"),
                // 9223372036854775808LL does not exist: spell i64::MIN as C does.
                _ if *v == i64::MIN => "(-9223372036854775807LL - 1LL)".to_string(),
                _ => format!("{v}LL"),
            },
            Scalar::Bool(b) => b.to_string(),
            Scalar::Neg(a) => match &**a {
                Scalar::Float(_) | Scalar::Int(_) => format!("-{}", self.scalar(a, ty)),
                _ => format!("tops_neg({})", self.scalar(a, ty)),
            },
            Scalar::Arith(op, a, b) => {
                format!("tops_{}({}, {})", arith_name(*op), self.scalar(a, ty), self.scalar(b, ty))
            }
        }
    }
}

fn arith_name(op: Arith) -> &'static str {
    match op {
        Arith::Add => "add",
        Arith::Sub => "sub",
        Arith::Mul => "mul",
        Arith::Div => "div",
    }
}

/// Base-10 float digits in a form both C and Rust read as a float (`2.` → `2.0`, `2` → `2.0`).
pub fn normalize_float(d: &str) -> String {
    if d.ends_with('.') {
        format!("{d}0")
    } else if d.contains(['.', 'e', 'E']) {
        d.to_string()
    } else {
        format!("{d}.0")
    }
}
