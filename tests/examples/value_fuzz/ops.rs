//! The ops the value fuzzer calls, by name: eager, `_out` and as fused nodes.

use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

pub const UNARY: [&str; 11] = ["neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "sin", "cos", "silu"];
pub const BINARY: [&str; 13] =
    ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge"];

pub type Unary = fn(&Tensor) -> Result<Tensor>;
pub type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The eager function of a one-input op (`None` for a two-input one).
pub fn unary(name: &str) -> Option<Unary> {
    use tensor_ops::*;
    let f: Unary = match name {
        "neg" => neg,
        "abs" => abs,
        "exp" => exp,
        "log" => log,
        "sqrt" => sqrt,
        "relu" => relu,
        "sigmoid" => sigmoid,
        "tanh" => tanh,
        "sin" => sin,
        "cos" => cos,
        "silu" => silu,
        _ => return None,
    };
    Some(f)
}

/// The eager function of a two-input op.
pub fn binary(name: &str) -> Binary {
    use tensor_ops::*;
    match name {
        "add" => add,
        "sub" => sub,
        "mul" => mul,
        "div" => div,
        "maximum" => maximum,
        "minimum" => minimum,
        "pow" => pow,
        "eq" => eq,
        "ne" => ne,
        "lt" => lt,
        "le" => le,
        "gt" => gt,
        _ => ge,
    }
}

/// `name` applied to `a` (and `b` for a binary op).
pub fn eager(name: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    match unary(name) {
        Some(f) => f(a),
        None => binary(name)(a, b),
    }
}

/// `name` applied into `out`.
pub fn eager_out(name: &str, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    match name {
        "neg" => tensor_ops::neg_out(a, out),
        "abs" => tensor_ops::abs_out(a, out),
        "exp" => tensor_ops::exp_out(a, out),
        "relu" => tensor_ops::relu_out(a, out),
        "sigmoid" => tensor_ops::sigmoid_out(a, out),
        "sqrt" => tensor_ops::sqrt_out(a, out),
        "add" => tensor_ops::add_out(a, b, out),
        "sub" => tensor_ops::sub_out(a, b, out),
        "mul" => tensor_ops::mul_out(a, b, out),
        "div" => tensor_ops::div_out(a, b, out),
        "maximum" => tensor_ops::maximum_out(a, b, out),
        "minimum" => tensor_ops::minimum_out(a, b, out),
        "lt" => tensor_ops::lt_out(a, b, out),
        _ => tensor_ops::eq_out(a, b, out),
    }
}

/// `name` as a fused node.
pub fn node(name: &str, a: &Expr, b: &Expr) -> Expr {
    match name {
        "neg" => a.neg(),
        "abs" => a.abs(),
        "exp" => a.exp(),
        "log" => a.log(),
        "sqrt" => a.sqrt(),
        "relu" => a.relu(),
        "sigmoid" => a.sigmoid(),
        "tanh" => a.tanh(),
        "sin" => a.sin(),
        "cos" => a.cos(),
        "silu" => a.silu(),
        "add" => a.add(b),
        "sub" => a.sub(b),
        "mul" => a.mul(b),
        "div" => a.div(b),
        "maximum" => a.maximum(b),
        "minimum" => a.minimum(b),
        "pow" => a.pow(b),
        "eq" => a.eq(b),
        "ne" => a.ne(b),
        "lt" => a.lt(b),
        "le" => a.le(b),
        "gt" => a.gt(b),
        _ => a.ge(b),
    }
}
