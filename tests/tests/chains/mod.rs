//! Random chains of elementwise ops (leaves of random dtypes, broadcast shapes and
//! layouts) shared by the fused-chain tests of the CPU and of CUDA.
#![allow(dead_code)]

use crate::common::{make, Lay, LAYOUTS};
use proptest::prelude::*;
use tensor_ops::fuse::{specs, Expr};
use tensor_ops::prelude::*;

pub const UNARY: [&str; 8] = ["neg", "abs", "relu", "exp", "sigmoid", "silu", "tanh", "sqrt"];
pub const BINARY: [&str; 8] = ["add", "sub", "mul", "div", "maximum", "minimum", "gt", "pow"];
pub const DTYPES: [DType; 8] =
    [DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::Bool];

/// A random chain: leaves, then nodes (op name, argument indices into leaves ++ nodes).
#[derive(Debug, Clone)]
pub struct Case {
    pub leaves: Vec<(DType, Vec<usize>, Lay, u64)>,
    pub nodes: Vec<(&'static str, Vec<usize>)>,
    pub reduce: Option<(usize, Option<Vec<usize>>, bool)>,
}

pub fn spec(name: &str) -> &'static tensor_core::registry::OpSpec {
    tensor_ops::registry().op(name).unwrap()
}

pub const REDUCTIONS: [&tensor_core::registry::ReduceSpec; 12] = [
    &specs::SUM,
    &specs::MEAN,
    &specs::AMAX,
    &specs::VAR,
    &specs::LOGSUMEXP,
    &specs::ARGMAX,
    &specs::PROD,
    &specs::AMIN,
    &specs::ALL,
    &specs::ANY,
    &specs::STD,
    &specs::ARGMIN,
];

pub fn case() -> impl Strategy<Value = Case> {
    let base = prop::collection::vec(1usize..7, 1..4);
    (base, 1usize..4, 1usize..6, any::<u64>(), any::<bool>()).prop_map(|(base, nleaves, nnodes, seed, reduce)| {
        let mut rng = seed;
        let mut next = |n: usize| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((rng >> 33) as usize) % n.max(1)
        };
        let leaves: Vec<_> = (0..nleaves)
            .map(|k| {
                // broadcast: some dims become 1, and a leaf may drop leading dims
                let mut shape: Vec<usize> = base.iter().map(|&d| if next(4) == 0 { 1 } else { d }).collect();
                let drop = next(shape.len() + 1).min(shape.len());
                if k > 0 {
                    shape.drain(..drop);
                }
                (DTYPES[next(DTYPES.len())], shape, LAYOUTS[next(LAYOUTS.len())], seed ^ k as u64)
            })
            .collect();
        let mut nodes = Vec::new();
        for i in 0..nnodes {
            let avail = nleaves + i;
            // prefer the latest node so chains are deep
            let pick = |r: usize| if r.is_multiple_of(2) && i > 0 { avail - 1 } else { r % avail };
            if next(3) == 0 {
                nodes.push((UNARY[next(UNARY.len())], vec![pick(next(8))]));
            } else {
                nodes.push((BINARY[next(BINARY.len())], vec![pick(next(8)), next(avail)]));
            }
        }
        let reduce = reduce.then(|| {
            let r = next(REDUCTIONS.len());
            let dims = if next(3) == 0 { None } else { Some(vec![]) };
            (r, dims, next(2) == 0)
        });
        Case { leaves, nodes, reduce }
    })
}

pub fn leaf_tensors(c: &Case) -> Vec<Tensor> {
    c.leaves
        .iter()
        .map(|(d, shape, lay, seed)| {
            let n: usize = shape.iter().product();
            make(&crate::common::gen_values(*d, n, *seed), shape, *d, *lay)
        })
        .collect()
}

/// The eager chain: one call per node the result depends on.
pub fn eager(c: &Case, leaves: &[Tensor]) -> Result<Tensor> {
    fn value(c: &Case, leaves: &[Tensor], memo: &mut Vec<Option<Tensor>>, i: usize) -> Result<Tensor> {
        if i < leaves.len() {
            return Ok(leaves[i].clone());
        }
        if let Some(t) = &memo[i - leaves.len()] {
            return Ok(t.clone());
        }
        let (name, args) = &c.nodes[i - leaves.len()];
        let ins = args.iter().map(|&a| value(c, leaves, memo, a)).collect::<Result<Vec<_>>>()?;
        let ins: Vec<&Tensor> = ins.iter().collect();
        let r = tensor_ops::by_spec::call_map_new(spec(name), &ins, &[])?;
        memo[i - leaves.len()] = Some(r.clone());
        Ok(r)
    }
    let mut memo = vec![None; c.nodes.len()];
    value(c, leaves, &mut memo, leaves.len() + c.nodes.len() - 1)
}

pub fn fused_expr(c: &Case, leaves: &[Tensor]) -> Expr {
    let mut exprs: Vec<Expr> = leaves.iter().map(Expr::input).collect();
    for (name, args) in &c.nodes {
        let ins: Vec<&Expr> = args.iter().map(|&a| &exprs[a]).collect();
        let e = Expr::call(name, &ins, &[]).unwrap();
        exprs.push(e);
    }
    exprs.pop().unwrap()
}

/// Reduction dims for the chain's result (`Some(vec![])` means "pick from the shape").
fn reduce_dims(dims: &Option<Vec<usize>>, ndim: usize, seed: u64) -> Option<Vec<usize>> {
    match dims {
        None => None,
        Some(_) if ndim == 0 => None,
        Some(_) => Some(vec![(seed as usize) % ndim]),
    }
}

/// The case evaluated eagerly (one call per node, then its reduction) and fused, on the
/// leaves' device: (eager, fused).
pub fn eager_and_fused(c: &Case, leaves: &[Tensor]) -> (Result<Tensor>, Result<Tensor>) {
    let want = eager(c, leaves);
    let expr = fused_expr(c, leaves);
    let Some((r, dims, keepdim)) = &c.reduce else { return (want, expr.eval()) };
    let spec = REDUCTIONS[*r];
    let params: Vec<Scalar> = spec.op.params.iter().map(|_| Scalar::Int(1)).collect();
    let w = match want {
        Err(e) => return (Err(e), expr.sum_all().eval()),
        Ok(w) => w,
    };
    let dims = reduce_dims(dims, w.ndim(), c.leaves[0].3);
    let dims = if matches!(spec.op.name, "argmax" | "argmin") && dims.is_none() && w.ndim() > 0 {
        Some(vec![0])
    } else {
        dims
    };
    let (eager_dims, all) = match &dims {
        Some(d) => (tensor_core::call::ReduceDims::Dims(d), *keepdim),
        None => (tensor_core::call::ReduceDims::All, false),
    };
    let eager_r = tensor_ops::by_spec::call_reduce_new(spec, &w, eager_dims, all, &params);
    let fused_r = match &dims {
        Some(d) => expr.reduce(spec, d, *keepdim, &params).eval(),
        None => expr.reduce_all(spec, &params).eval(),
    };
    (eager_r, fused_r)
}
