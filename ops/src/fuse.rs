//! Fused chains: an expression of elementwise ops — any `#[tensor_op]`, built-in or
//! user-defined — over tensors, optionally ending in one reduction, evaluated in one pass
//! over memory (`tensor_core::call::fused`). Broadcasting and dtype promotion are the eager
//! calls' own, and the result is the eager chain's, bit for bit.
//!
//! ```
//! use tensor_ops::prelude::*;
//! use tensor_ops::fuse::Expr;
//! let a = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3]).unwrap();
//! let b = Tensor::from_vec(vec![2.0f32, 2.0, -1.0], &[3]).unwrap();
//! let c = Tensor::from_vec(vec![0.5f32], &[1]).unwrap();
//! let (x, y, z) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
//! // relu(a * b + c): one pass, no intermediate tensors
//! let r = (&x * &y + &z).relu().eval().unwrap();
//! assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, 0.0, 0.0]);
//! // ((a - b)²).sum(): the squares never reach memory
//! let d = &x - &y;
//! let s = (&d * &d).sum_all().eval().unwrap();
//! assert_eq!(s.to_vec::<f32>().unwrap(), vec![1.0 + 16.0 + 16.0]);
//! ```

/// The built-in reductions' specs (`specs::SUM`, ...), for [`Expr::reduce`].
pub use crate::builtin::reduce::specs;
use std::collections::HashMap;
use std::sync::Arc;
use tensor_core::call::fused::{run_chain, Chain, ChainArg, ChainConst, ChainNode, ChainReduce};
use tensor_core::registry::{OpSpec, ReduceSpec};
use tensor_core::{DType, Device, Error, Result, Scalar, Tensor};

/// A node of an expression: a tensor, a number operand, or an op applied to expressions.
#[derive(Debug)]
enum Node {
    Leaf(Tensor),
    /// A number operand (`x * 2.0`): a constant of the chain's kernel, not a leaf; equal
    /// numbers of one chain are one constant.
    Number(ChainConst),
    Op {
        spec: &'static OpSpec,
        args: Vec<Expr>,
        params: Vec<Scalar>,
    },
}

/// What makes two number operands one constant: dtype and value bits.
type NumberKey = (DType, u64);

/// The [`NumberKey`] of `c`.
fn number_key(c: &ChainConst) -> NumberKey {
    let bits = match c.value {
        Scalar::Bool(b) => b as u64,
        Scalar::Int(i) => i as u64,
        Scalar::Float(f) => f.to_bits(),
    };
    (c.dtype, bits)
}

impl Drop for Node {
    /// Drops the expressions below this one without recursion: a chain built by a loop
    /// (`x = x * 0.5 + 1.0` a hundred thousand times) is as deep as it is long, and a
    /// recursive drop would overflow the stack.
    fn drop(&mut self) {
        let Node::Op { args, .. } = self else { return };
        let mut pending: Vec<Expr> = std::mem::take(args);
        while let Some(e) = pending.pop() {
            // The last handle of a node gives up its arguments here, so its own drop finds
            // none; a shared node only loses one count.
            if let Some(mut node) = Arc::into_inner(e.0)
                && let Node::Op { args, .. } = &mut node
            {
                pending.append(args);
            }
        }
    }
}

/// An elementwise expression over tensors (cheap to clone: shared subexpressions are
/// computed once per block). Build with [`Expr::input`], operators `+ - * /` and unary `-`,
/// the built-in methods or [`Expr::apply`] for any op; finish with [`Expr::eval`] or a
/// reduction ([`Expr::sum`], [`Expr::reduce`], ...).
///
/// ```
/// use tensor_ops::prelude::*;
/// use tensor_ops::fuse::Expr;
/// let a = Tensor::from_vec(vec![0.0f32, 1.0], &[2]).unwrap();
/// let x = Expr::input(&a);
/// let y = (&x * 2.0f32).exp().eval().unwrap(); // e^(2x)
/// assert_eq!(y.to_vec::<f32>().unwrap()[0], 1.0);
/// ```
#[derive(Debug, Clone)]
pub struct Expr(Arc<Node>);

/// A reduction of an [`Expr`] (a chain's end): evaluate with [`Reduction::eval`].
#[derive(Debug, Clone)]
pub struct Reduction {
    expr: Expr,
    reduce: ChainReduce,
}

impl Expr {
    /// A tensor in the expression (any dtype, layout and device; every leaf of one chain
    /// must be on one device).
    pub fn input(t: &Tensor) -> Expr {
        Expr(Arc::new(Node::Leaf(t.clone())))
    }

    /// A 0-dim constant of `dtype` on `device` (it takes part in promotion as a 0-dim
    /// tensor does in eager calls).
    pub fn scalar(value: impl Into<Scalar>, dtype: DType, device: Device) -> Result<Expr> {
        Ok(Expr::input(&Tensor::scalar(value, dtype)?.to_device(device)?))
    }

    /// `op(args..., params...)` for any elementwise op spec: a built-in's or a user's
    /// `#[tensor_op]` (`my_op::SPEC`, the hidden module under the op's name). Arity and
    /// params are checked at [`Expr::eval`], naming the node.
    pub fn apply(spec: &'static OpSpec, args: &[&Expr], params: &[Scalar]) -> Expr {
        let args = args.iter().map(|e| (*e).clone()).collect();
        Expr(Arc::new(Node::Op { spec, args, params: params.to_vec() }))
    }

    /// [`Expr::apply`] of the op registered as `name`.
    pub fn call(name: &str, args: &[&Expr], params: &[Scalar]) -> Result<Expr> {
        let spec = tensor_core::registry().op_named("Expr::call", name)?;
        Ok(Expr::apply(spec, args, params))
    }

    /// Evaluates into a new tensor (memory order as the eager chain's result).
    pub fn eval(&self) -> Result<Tensor> {
        let Some(chain) = self.flatten_on_device()? else { return self.leaf_copy() };
        let out = chain.run(None, None)?;
        out.ok_or_else(|| Error::invalid("fused", "the chain produced no result"))
    }

    /// Evaluates into `out` (the result's shape; a dtype the result can be cast to).
    pub fn eval_into(&self, out: &Tensor) -> Result<()> {
        let Some(chain) = self.flatten_on_device()? else { return out.copy_(&self.leaf_copy()?) };
        chain.run(None, Some(out)).map(|_| ())
    }

    /// A bare tensor's value: a copy.
    fn leaf_copy(&self) -> Result<Tensor> {
        let Node::Leaf(t) = &*self.0 else { return Err(Error::invalid("fused", "not a tensor")) };
        t.deep_clone()
    }

    /// Ends the chain in the reduction `spec` over `dims` (any built-in's `specs::SUM`...
    /// or a user's `#[tensor_op(reduce)]` `my_reduction::SPEC`).
    pub fn reduce(&self, spec: &'static ReduceSpec, dims: &[usize], keepdim: bool, params: &[Scalar]) -> Reduction {
        self.reduction(spec, Some(dims), keepdim, params)
    }

    /// Ends the chain in the reduction `spec` over every dim (a 0-dim result).
    pub fn reduce_all(&self, spec: &'static ReduceSpec, params: &[Scalar]) -> Reduction {
        self.reduction(spec, None, false, params)
    }

    fn reduction(
        &self,
        spec: &'static ReduceSpec,
        dims: Option<&[usize]>,
        keepdim: bool,
        params: &[Scalar],
    ) -> Reduction {
        let reduce = ChainReduce { spec, dims: dims.map(|d| d.into()), keepdim, params: params.into() };
        Reduction { expr: self.clone(), reduce }
    }

    /// The chain this expression evaluates — its leaves, numbers and nodes in evaluation
    /// order, shared subexpressions once (`None` for a bare tensor) — for tools and tests
    /// that plan chains themselves (`tensor_core::call::fused`).
    ///
    /// ```
    /// use tensor_ops::fuse::Expr;
    /// use tensor_ops::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    /// let x = Expr::input(&a);
    /// let chain = ((&x * 0.5f32 + 1.0f32) * 0.5f32).to_chain().unwrap();
    /// assert_eq!((chain.leaves.len(), chain.consts.len(), chain.nodes.len()), (1, 2, 3));
    /// ```
    pub fn to_chain(&self) -> Option<FlatChain> {
        self.flatten()
    }

    fn flatten(&self) -> Option<FlatChain> {
        let mut f = Flatten::default();
        match f.visit(self) {
            ChainArg::Node(_) => Some(FlatChain { leaves: f.leaves, consts: f.consts, nodes: f.nodes }),
            ChainArg::Leaf(_) | ChainArg::Const(_) => None,
        }
    }

    /// `flatten`, with 0-dim CPU leaves (scalars) copied to the device of the chain's other
    /// leaves when those all sit on one other device — as PyTorch lets a CPU scalar take
    /// part in a CUDA op. Leaves on two other devices stay as they are (the chain then
    /// reports the mismatch). Numbers are constants of the kernel, on no device.
    fn flatten_on_device(&self) -> Result<Option<FlatChain>> {
        let Some(FlatChain { mut leaves, consts, nodes }) = self.flatten() else { return Ok(None) };
        let cpu_scalar = |t: &Tensor| t.device() == Device::Cpu && t.ndim() == 0;
        let mut others = leaves.iter().filter(|t| !cpu_scalar(t)).map(Tensor::device);
        if let Some(device) = others.next().filter(|&d| d != Device::Cpu)
            && others.all(|d| d == device)
        {
            for t in leaves.iter_mut().filter(|t| cpu_scalar(t)) {
                *t = t.to_device(device)?;
            }
        }
        Ok(Some(FlatChain { leaves, consts, nodes }))
    }
}

/// An expression flattened into the parts of a [`tensor_core::call::fused::Chain`]: leaf
/// tensors, numbers (constants of the kernel) and nodes in evaluation order.
#[derive(Debug, Clone)]
pub struct FlatChain {
    /// The leaf tensors.
    pub leaves: Vec<Tensor>,
    /// The numbers.
    pub consts: Vec<ChainConst>,
    /// The nodes; the last is the result.
    pub nodes: Vec<ChainNode>,
}

impl FlatChain {
    /// The chain over `refs` (`self.leaves`, borrowed), ending in `reduce`.
    ///
    /// ```
    /// use tensor_ops::fuse::Expr;
    /// use tensor_ops::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    /// let flat = (Expr::input(&a) * 2.0f32).to_chain().unwrap();
    /// let refs: Vec<&Tensor> = flat.leaves.iter().collect();
    /// assert_eq!(flat.chain(&refs, None).consts.len(), 1);
    /// ```
    pub fn chain<'a>(&'a self, refs: &'a [&'a Tensor], reduce: Option<&'a ChainReduce>) -> Chain<'a> {
        Chain { leaves: refs, consts: &self.consts, nodes: &self.nodes, reduce }
    }

    /// Runs the chain ([`run_chain`]) ending in `reduce`, into a new tensor or `out`.
    pub fn run(&self, reduce: Option<&ChainReduce>, out: Option<&Tensor>) -> Result<Option<Tensor>> {
        let refs: Vec<&Tensor> = self.leaves.iter().collect();
        run_chain(&self.chain(&refs, reduce), out)
    }
}

#[derive(Default)]
struct Flatten {
    leaves: Vec<Tensor>,
    consts: Vec<ChainConst>,
    nodes: Vec<ChainNode>,
    seen: HashMap<*const Node, ChainArg>,
    numbers: HashMap<NumberKey, usize>,
}

impl Flatten {
    /// The chain argument of `root`: its nodes in evaluation order (post-order, shared
    /// subexpressions once), by an explicit stack — a chain is as deep as it is long.
    fn visit(&mut self, root: &Expr) -> ChainArg {
        // (expression, whether its arguments are already visited)
        let mut stack: Vec<(&Expr, bool)> = vec![(root, false)];
        while let Some((e, args_done)) = stack.pop() {
            let key = Arc::as_ptr(&e.0);
            if self.seen.contains_key(&key) {
                continue;
            }
            let arg = match &*e.0 {
                Node::Leaf(t) => {
                    self.leaves.push(t.clone());
                    ChainArg::Leaf(self.leaves.len() - 1)
                }
                Node::Number(c) => {
                    let next = self.consts.len();
                    let at = *self.numbers.entry(number_key(c)).or_insert(next);
                    if at == next {
                        self.consts.push(*c);
                    }
                    ChainArg::Const(at)
                }
                Node::Op { args, .. } if !args_done => {
                    stack.push((e, true));
                    stack.extend(args.iter().rev().map(|a| (a, false)));
                    continue;
                }
                Node::Op { spec, args, params } => {
                    let args = args.iter().map(|a| self.seen[&Arc::as_ptr(&a.0)]).collect();
                    self.nodes.push(ChainNode { spec, args, params: params.as_slice().into() });
                    ChainArg::Node(self.nodes.len() - 1)
                }
            };
            self.seen.insert(key, arg);
        }
        self.seen[&Arc::as_ptr(&root.0)]
    }
}

impl Reduction {
    /// Evaluates into a new tensor.
    pub fn eval(&self) -> Result<Tensor> {
        let out = self.run(None)?;
        out.ok_or_else(|| Error::invalid("fused", "the chain produced no result"))
    }

    /// Evaluates into `out` (the result's shape; a dtype the result can be cast to).
    pub fn eval_into(&self, out: &Tensor) -> Result<()> {
        self.run(Some(out)).map(|_| ())
    }

    fn run(&self, out: Option<&Tensor>) -> Result<Option<Tensor>> {
        let r = &self.reduce;
        let Some(chain) = self.expr.flatten_on_device()? else {
            // A reduction of a bare tensor is the eager reduction.
            let t = self.expr.leaf_copy()?;
            return tensor_core::call::reduce(r.spec, &t, r.reduce_dims(), r.keepdim, &r.params, out);
        };
        chain.run(Some(r), out)
    }
}

macro_rules! unary_methods {
    ($($(#[$m:meta])* $name:ident),*) => { $(
        $(#[$m])*
        pub fn $name(&self) -> Expr {
            Expr::apply(&crate::$name::SPEC, &[self], &[])
        }
    )* };
}

macro_rules! binary_methods {
    ($($(#[$m:meta])* $name:ident),*) => { $(
        $(#[$m])*
        pub fn $name(&self, other: impl Into<Operand>) -> Expr {
            let other = other.into().0;
            Expr::apply(&crate::$name::SPEC, &[self, &other], &[])
        }
    )* };
}

macro_rules! reduce_methods {
    ($($(#[$m:meta])* $name:ident, $all:ident, $spec:ident);*) => { $(
        $(#[$m])*
        pub fn $name(&self, dims: &[usize], keepdim: bool) -> Reduction {
            self.reduce(&specs::$spec, dims, keepdim, &[])
        }
        $(#[$m])*
        /// Over every element (a 0-dim result).
        pub fn $all(&self) -> Reduction {
            self.reduce_all(&specs::$spec, &[])
        }
    )* };
}

impl Expr {
    unary_methods!(
        /// `-x`.
        neg,
        /// `|x|`.
        abs,
        /// e^x.
        exp,
        /// ln x.
        log,
        /// √x.
        sqrt,
        /// max(x, 0).
        relu,
        /// 1 / (1 + e^-x).
        sigmoid,
        /// x · sigmoid(x).
        silu,
        /// tanh x.
        tanh,
        /// sin x.
        sin,
        /// cos x.
        cos
    );
    binary_methods!(
        /// `self + other`.
        add,
        /// `self - other`.
        sub,
        /// `self * other`.
        mul,
        /// `self / other`.
        div,
        /// NaN-propagating maximum.
        maximum,
        /// NaN-propagating minimum.
        minimum,
        /// `self` to the power `other`.
        pow,
        /// `self == other` (bool).
        eq,
        /// `self != other` (bool).
        ne,
        /// `self < other` (bool).
        lt,
        /// `self <= other` (bool).
        le,
        /// `self > other` (bool).
        gt,
        /// `self >= other` (bool).
        ge
    );
    reduce_methods!(
        /// Σ over `dims`.
        sum, sum_all, SUM;
        /// Π over `dims`.
        prod, prod_all, PROD;
        /// The mean over `dims`.
        mean, mean_all, MEAN;
        /// The greatest element over `dims`.
        amax, amax_all, AMAX;
        /// The least element over `dims`.
        amin, amin_all, AMIN;
        /// ln Σ e^x over `dims`.
        logsumexp, logsumexp_all, LOGSUMEXP
    );

    /// The variance over `dims`, dividing by `n - correction`.
    pub fn var(&self, dims: &[usize], correction: i64, keepdim: bool) -> Reduction {
        self.reduce(&specs::VAR, dims, keepdim, &[Scalar::Int(correction)])
    }

    /// The standard deviation over `dims`, dividing by `n - correction`.
    pub fn std(&self, dims: &[usize], correction: i64, keepdim: bool) -> Reduction {
        self.reduce(&specs::STD, dims, keepdim, &[Scalar::Int(correction)])
    }

    /// The index of the first greatest element along `dim`.
    pub fn argmax(&self, dim: usize, keepdim: bool) -> Reduction {
        self.reduce(&specs::ARGMAX, &[dim], keepdim, &[])
    }

    /// The index of the first least element along `dim`.
    pub fn argmin(&self, dim: usize, keepdim: bool) -> Reduction {
        self.reduce(&specs::ARGMIN, &[dim], keepdim, &[])
    }

    /// True where every element over `dims` is non-zero (Bool; NaN counts as non-zero).
    ///
    /// ```
    /// use tensor_ops::fuse::Expr;
    /// use tensor_ops::prelude::*;
    /// let a = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, 0.5], &[2, 2]).unwrap();
    /// let x = Expr::input(&a);
    /// let r = x.gt(0.0f32).all(&[1], false).eval().unwrap();
    /// assert_eq!(r.to_vec::<bool>().unwrap(), vec![false, true]);
    /// ```
    pub fn all(&self, dims: &[usize], keepdim: bool) -> Reduction {
        self.reduce(&crate::specs::ALL, dims, keepdim, &[])
    }

    /// True where some element over `dims` is non-zero (Bool; NaN counts as non-zero).
    pub fn any(&self, dims: &[usize], keepdim: bool) -> Reduction {
        self.reduce(&crate::specs::ANY, dims, keepdim, &[])
    }
}

/// The right operand of a binary method or operator: an expression, or a number (a 0-dim
/// CPU constant of the number's own dtype, promoted as eager calls promote 0-dim tensors:
/// `x * 2.0f32` keeps an f16 `x` in f16; copied to the chain's device when it runs there).
#[derive(Debug, Clone)]
pub struct Operand(Expr);

impl From<Expr> for Operand {
    fn from(e: Expr) -> Operand {
        Operand(e)
    }
}

impl From<&Expr> for Operand {
    fn from(e: &Expr) -> Operand {
        Operand(e.clone())
    }
}

macro_rules! number_operands {
    ($($t:ty),*) => { $(
        impl From<$t> for Operand {
            fn from(v: $t) -> Operand {
                let c = ChainConst { dtype: <$t as tensor_core::Element>::DTYPE, value: Scalar::from(v) };
                Operand(Expr(Arc::new(Node::Number(c))))
            }
        }
    )* };
}
number_operands!(f32, f64, i32, i64, bool);

macro_rules! operators {
    ($($tr:ident, $f:ident);*) => { $(
        impl<R: Into<Operand>> std::ops::$tr<R> for Expr {
            type Output = Expr;
            fn $f(self, rhs: R) -> Expr {
                Expr::$f(&self, rhs)
            }
        }
        impl<R: Into<Operand>> std::ops::$tr<R> for &Expr {
            type Output = Expr;
            fn $f(self, rhs: R) -> Expr {
                Expr::$f(self, rhs)
            }
        }
    )* };
}
operators!(Add, add; Sub, sub; Mul, mul; Div, div);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::neg(&self)
    }
}

impl std::ops::Neg for &Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::neg(self)
    }
}
