//! The checked form of an op body — a map op's body or a reduction's four functions —
//! shared by the Rust and the CUDA C code generators.
//!
//! Every node has a [`Ty`]: a *value* (an element, `V` in Rust, the compute type in C), a
//! *mask* (a comparison result, `V::Mask` in Rust — `bool` in a reduction —, `bool` in C),
//! and, in reductions only, an `i64` or a tuple of them. The lowering pass guarantees the
//! types fit, so the generators never fail.

use crate::signature::ScalarTy;

/// The type of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// An element value (`T` in the definition).
    Value,
    /// A condition (`bool` in the definition).
    Mask,
    /// A runtime `i64` (reductions: indices, counts, integer accumulators).
    I64,
    /// A tuple of one to three of the others (reduction accumulators).
    Tuple(Vec<Ty>),
}

/// `+ - * /` on values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
}

/// Comparisons of values (giving masks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl Cmp {
    /// The `Value` method / `tops_` suffix (`"gt"`).
    pub fn name(self) -> &'static str {
        match self {
            Cmp::Eq => "eq",
            Cmp::Ne => "ne",
            Cmp::Lt => "lt",
            Cmp::Le => "le",
            Cmp::Gt => "gt",
            Cmp::Ge => "ge",
        }
    }
}

/// The math methods a body may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// e^x.
    Exp,
    /// 2^x.
    Exp2,
    /// ln x.
    Ln,
    /// log2 x.
    Log2,
    /// √x.
    Sqrt,
    /// |x|.
    Abs,
    /// max(x, y).
    Max,
    /// min(x, y).
    Min,
    /// tanh x.
    Tanh,
    /// The logistic function 1 / (1 + e^-x).
    Sigmoid,
    /// sin x.
    Sin,
    /// cos x.
    Cos,
    /// x^y on floats (`powf`).
    Powf,
    /// x^y (`pow`, any dtype).
    Pow,
    /// 1/x.
    Recip,
    /// ⌊x⌋.
    Floor,
    /// ⌈x⌉.
    Ceil,
    /// Round half away from zero.
    Round,
}

impl Method {
    /// Every method, for lookups and messages.
    pub const ALL: [Method; 18] = [
        Method::Exp,
        Method::Exp2,
        Method::Ln,
        Method::Log2,
        Method::Sqrt,
        Method::Abs,
        Method::Max,
        Method::Min,
        Method::Tanh,
        Method::Sigmoid,
        Method::Sin,
        Method::Cos,
        Method::Powf,
        Method::Pow,
        Method::Recip,
        Method::Floor,
        Method::Ceil,
        Method::Round,
    ];

    /// The name in a body.
    pub fn name(self) -> &'static str {
        match self {
            Method::Exp => "exp",
            Method::Exp2 => "exp2",
            Method::Ln => "ln",
            Method::Log2 => "log2",
            Method::Sqrt => "sqrt",
            Method::Abs => "abs",
            Method::Max => "max",
            Method::Min => "min",
            Method::Tanh => "tanh",
            Method::Sigmoid => "sigmoid",
            Method::Sin => "sin",
            Method::Cos => "cos",
            Method::Powf => "powf",
            Method::Pow => "pow",
            Method::Recip => "recip",
            Method::Floor => "floor",
            Method::Ceil => "ceil",
            Method::Round => "round",
        }
    }

    /// The `Value` trait method implementing it.
    pub fn value_fn(self) -> &'static str {
        match self {
            Method::Powf => "pow",
            m => m.name(),
        }
    }

    /// Arguments besides the receiver.
    pub fn extra_args(self) -> usize {
        match self {
            Method::Max | Method::Min | Method::Powf | Method::Pow => 1,
            _ => 0,
        }
    }

    /// True when only `T: Float` bodies may call it.
    pub fn float_only(self) -> bool {
        !matches!(self, Method::Abs | Method::Max | Method::Min | Method::Pow)
    }
}

/// A runtime scalar expression (the argument of `T::from_f32(..)`, or a param or literal
/// used as a value). Its type is given by the context.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// The i-th `#[param]`.
    Param(usize),
    /// A float literal, as its base-10 digits.
    Float(String),
    /// An integer literal.
    Int(i64),
    /// `true` / `false`.
    Bool(bool),
    /// `-e`.
    Neg(Box<Scalar>),
    /// `a op b`.
    Arith(Arith, Box<Scalar>, Box<Scalar>),
}

/// A node of the body.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// The i-th tensor argument (value).
    Input(usize),
    /// The local with this id (value or mask).
    Local(usize),
    /// `T::zero()`.
    Zero,
    /// `T::one()`.
    One,
    /// A scalar converted to a value: `T::from_f32(e)`, a literal or a param.
    FromScalar(ScalarTy, Scalar),
    /// `a op b` on values.
    Arith(Arith, Box<Node>, Box<Node>),
    /// `-a` on a value.
    Neg(Box<Node>),
    /// A method call on values; the receiver comes first.
    Method(Method, Vec<Node>),
    /// A comparison of values (a mask).
    Cmp(Cmp, Box<Node>, Box<Node>),
    /// `a && b` on masks.
    And(Box<Node>, Box<Node>),
    /// `a || b` on masks.
    Or(Box<Node>, Box<Node>),
    /// `!a` on a mask.
    Not(Box<Node>),
    /// A `bool` scalar used as a mask (`true`, a bool param).
    MaskOf(Scalar),
    /// `if c { a } else { b }`: `c` is a mask; `a` and `b` have the type `ty`.
    If { cond: Box<Node>, then: Box<Node>, els: Box<Node>, ty: Ty },
    /// `{ let ..; tail }`.
    Block(Vec<Let>, Box<Node>),
    /// A call of another `#[tensor_op]` map op on element values: `sigmoid(x)`. `callee`
    /// indexes [`Body::callees`]; the result is a value, or a mask when the callee is a
    /// predicate (the Rust types decide; the lowering lets a call stand where either is wanted).
    Call { callee: usize, args: Vec<CallArg> },
    /// An `i64` scalar (literal, param, or arithmetic of them) as a runtime `i64`.
    Int(Scalar),
    /// `a op b` on `i64`s: wrapping, an integer divided by zero is 0 (as on values).
    IntArith(Arith, Box<Node>, Box<Node>),
    /// `-a` on an `i64` (wrapping).
    IntNeg(Box<Node>),
    /// A comparison of `i64`s (a mask).
    IntCmp(Cmp, Box<Node>, Box<Node>),
    /// `max`, `min` or `abs` (wrapping) of `i64`s; the receiver comes first.
    IntMethod(Method, Vec<Node>),
    /// A conversion: `b as i64` (mask → i64), `T::from_i64(n)` (i64 → value) and
    /// `T::from_bool(b)` (mask → value) of runtime operands.
    Convert { from: Ty, to: Ty, arg: Box<Node> },
    /// `(a, b, ..)`.
    Tuple(Vec<Node>),
    /// `t.k` of a tuple.
    Field(Box<Node>, usize),
}

/// An argument of a [`Node::Call`].
#[derive(Debug, Clone, PartialEq)]
pub enum CallArg {
    /// An element value (for a tensor argument of the callee), and where it is written.
    Value(Node, At),
    /// A literal or a param of the caller: a value for a tensor argument, or the callee's
    /// param (converted to the param's type as a `Scalar` is).
    Scalar(ScalarTy, Scalar),
}

/// Where something is written (equal to every other `At`: spans do not change a body).
#[derive(Debug, Clone, Copy)]
pub struct At(pub proc_macro2::Span);

impl PartialEq for At {
    fn eq(&self, _: &At) -> bool {
        true
    }
}

/// The Rust path of a called op, as written (`sigmoid`, `tensor_ops::sigmoid`), with spans.
#[derive(Debug, Clone, PartialEq)]
pub struct OpPath {
    /// A leading `::`.
    pub leading_colon: bool,
    /// The segments; the last one is the op's fn name.
    pub segments: Vec<proc_macro2::Ident>,
}

impl OpPath {
    /// The op's fn name (the last segment).
    pub fn name(&self) -> &proc_macro2::Ident {
        self.segments.last().expect("a path has a segment")
    }

    /// The path as written, for messages (`tensor_ops::sigmoid`).
    pub fn text(&self) -> String {
        let segs: Vec<String> = self.segments.iter().map(|s| s.to_string()).collect();
        format!("{}{}", if self.leading_colon { "::" } else { "" }, segs.join("::"))
    }
}

/// `let name = init;` in a block.
#[derive(Debug, Clone, PartialEq)]
pub struct Let {
    /// The local's id (an index into [`Body::locals`]).
    pub id: usize,
    /// Its value.
    pub init: Node,
}

/// The four functions of a reduction, lowered: each one expression over its own positional
/// arguments ([`Node::Input`]: identity none; fold `acc, x, index`; combine `a, b`; finish
/// `acc, n`), the calls of one function by another inlined.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceBody {
    /// `identity`, `fold`, `combine`, `finish`.
    pub fns: [Node; 4],
    /// Generated, unique names of the locals of all four, by id.
    pub locals: Vec<String>,
    /// The map ops the functions call, each once, in order of first use.
    pub callees: Vec<OpPath>,
    /// The accumulator's type.
    pub acc: Ty,
    /// What `finish` returns (a value, an `i64` or a mask).
    pub finish: Ty,
}

/// A lowered body.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The expression (a value, or a mask for predicates).
    pub root: Node,
    /// Generated, unique names of the locals, by id (usable in Rust and C).
    pub locals: Vec<String>,
    /// The ops the body calls ([`Node::Call`]), each once, in order of first use.
    pub callees: Vec<OpPath>,
}
