//! Fused chains on the one call path: a chain of elementwise ops over some leaf tensors,
//! optionally ending in one reduction, checked and planned here exactly as the eager calls
//! would be (each node's dtype rule, broadcast, row lookup, and the memory order a new
//! result would get), then run in one pass by the device's `"fused"` runner row.
//!
//! The runner gets, through the one tail (`launch`), a [`crate::registry::PreparedCall`]
//! whose inputs are the leaves laid out on one canonical plan of the chain's (virtual)
//! result, and whose [`CallExtra::Fused`] ([`crate::registry::PreparedCall::fused`]) describes the
//! nodes ([`FusedCall`]): each node's kernel row, arguments, params and the dtype the eager
//! op would have produced — every intermediate is rounded to that dtype, so a fused chain
//! computes exactly what the eager chain computes.

mod eager;

use super::launch::{layout_of, lookup, ChainLayout, Dest, Launch, MapLayout};
use super::output::{check_output, empty_in_order, new_output_order, rounds_before_out};
use super::reduce_geometry::ReduceGeometry;
use super::types::call_types_of;
use super::{check_arity, ReduceDims, ReductionPlan};
use crate::iter::{IterPlan, PerOperand};
use crate::registry::{CallExtra, KernelRow, OpSpec, ReduceSpec, FUSED_SPEC};
use crate::shape::{self, Dims, Strides};
use crate::{DType, Device, Error, Result, Scalar, Tensor};
use eager::run_eager;
pub use eager::MAX_FUSED_NODES;
use smallvec::SmallVec;

/// An argument of a chain node: a leaf tensor, a number, or an earlier node's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainArg {
    /// `leaves[i]`.
    Leaf(usize),
    /// `consts[i]`: a number, a constant of the kernel (not a leaf tensor).
    Const(usize),
    /// The result of node `i` (an earlier node).
    Node(usize),
}

/// A number operand of a chain (`x * 2.0f32`): it takes part in the dtype rule and the
/// broadcast as a 0-dim tensor of `dtype` would (so the answer is the eager chain's), but
/// it is a constant of the kernel, not a leaf: it costs no operand of the runner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainConst {
    /// Its dtype.
    pub dtype: DType,
    /// Its value (exact in `dtype`).
    pub value: Scalar,
}

/// One elementwise node: `spec(args..., params...)`.
#[derive(Debug, Clone)]
pub struct ChainNode {
    /// The op.
    pub spec: &'static OpSpec,
    /// Its tensor arguments.
    pub args: SmallVec<[ChainArg; 4]>,
    /// Its params.
    pub params: SmallVec<[Scalar; 4]>,
}

/// The reduction a chain may end in (over the last node's result).
#[derive(Debug, Clone)]
pub struct ChainReduce {
    /// The reduction.
    pub spec: &'static ReduceSpec,
    /// The reduced dims (`None`: every dim).
    pub dims: Option<SmallVec<[usize; 8]>>,
    /// Keep reduced dims as size 1.
    pub keepdim: bool,
    /// Its params.
    pub params: SmallVec<[Scalar; 4]>,
}

impl ChainReduce {
    /// The reduced dims as the reduction call takes them.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::call::fused::ChainReduce;
    /// use tensor_ops::tensor_core::call::ReduceDims;
    /// # fn check(r: &ChainReduce) {
    /// assert!(matches!(r.reduce_dims(), ReduceDims::All) == r.dims.is_none());
    /// # }
    /// ```
    pub fn reduce_dims(&self) -> ReduceDims<'_> {
        match &self.dims {
            None => ReduceDims::All,
            Some(d) => ReduceDims::Dims(d),
        }
    }
}

/// A chain: leaves, numbers, nodes in order (each node's args are leaves, numbers or
/// earlier nodes; the last node is the result), and an optional final reduction.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a> {
    /// The leaf tensors.
    pub leaves: &'a [&'a Tensor],
    /// The numbers.
    pub consts: &'a [ChainConst],
    /// The elementwise nodes, in evaluation order.
    pub nodes: &'a [ChainNode],
    /// A final reduction of the last node's result.
    pub reduce: Option<&'a ChainReduce>,
}

/// A planned node, as the runner gets it.
#[derive(Debug, Clone, Copy)]
pub struct FusedNode<'a> {
    /// The node's kernel row (the eager call's row for the same dtypes).
    pub row: &'static KernelRow,
    /// Its arguments (leaf indices are input indices of the [`crate::registry::PreparedCall`]).
    pub args: &'a [ChainArg],
    /// Its params.
    pub params: &'a [Scalar],
    /// The dtype of its result in the eager chain: the node's kernel output is converted to
    /// it before anything reads it (the last node of a map chain converts straight to the
    /// output's dtype, as an eager call writing that output would).
    pub result: DType,
}

/// A planned final reduction.
#[derive(Debug, Clone, Copy)]
pub struct FusedReduce<'a> {
    /// The reduction's kernel row (for the last node's result dtype).
    pub row: &'static KernelRow,
    /// The reduction plan of the last node's result as the eager chain would lay it out
    /// (dense; input strides are offsets into that virtual tensor, whose elements the
    /// runner computes on demand); the output operand of the [`crate::registry::PreparedCall`] walks it.
    pub plan: &'a ReductionPlan,
    /// Its params.
    pub params: &'a [Scalar],
}

/// The chain part of a fused [`crate::registry::PreparedCall`].
#[derive(Debug, Clone, Copy)]
pub struct FusedCall<'a> {
    /// The nodes, in order; the last is the result.
    pub nodes: &'a [FusedNode<'a>],
    /// The numbers ([`ChainArg::Const`]), constants of the kernel.
    pub consts: &'a [ChainConst],
    /// The final reduction. When present, the inputs lie on the canonical plan of the last
    /// node's (virtual, dense) result, whose flat plan index is its memory offset.
    pub reduce: Option<FusedReduce<'a>>,
}

/// What the checks know of a node's result (or a leaf).
#[derive(Debug, Clone)]
struct Meta {
    dtype: DType,
    shape: Dims,
    /// The memory order a new result would have (dense strides), or a leaf's strides.
    strides: Strides,
    /// A result's memory order (outermost dim first; `None`: row-major or a leaf).
    order: Option<Dims>,
}

/// The error `e` of node `i` (op `name`), naming the node.
fn at_node(e: Error, i: usize, name: &'static str) -> Error {
    let at = format!("node {i} (`{name}`) of the fused chain: ");
    match e.renamed(name) {
        Error::Shape { op, msg } => Error::Shape { op, msg: at + &msg },
        Error::Broadcast { op, lhs, rhs } => {
            Error::Shape { op, msg: format!("{at}shapes {lhs:?} and {rhs:?} do not broadcast") }
        }
        Error::DType { op, msg } => Error::DType { op, msg: at + &msg },
        Error::InvalidArgument { op, msg } => Error::InvalidArgument { op, msg: at + &msg },
        Error::InvalidOutput { op, msg } => Error::InvalidOutput { op, msg: at + &msg },
        Error::DeviceMismatch { op, lhs, rhs } => Error::InvalidArgument {
            op,
            msg: format!("{at}operands on {lhs} and {rhs} (every leaf of a chain must be on one device)"),
        },
        Error::NoKernel { op, device, layout, dtype, supported } => {
            Error::NoKernel { op: format!("{op} (node {i} of the fused chain)"), device, layout, dtype, supported }
        }
        other => other,
    }
}

/// Checks every node (args, arity, device, dtype rule, broadcast, row) and returns each
/// node's result description and row.
fn check_nodes(chain: &Chain<'_>, device: Device) -> Result<Vec<(Meta, &'static KernelRow)>> {
    check_used(chain)?;
    let mut metas: Vec<(Meta, &'static KernelRow)> = Vec::with_capacity(chain.nodes.len());
    for (i, node) in chain.nodes.iter().enumerate() {
        let name = node.spec.name;
        let mut args: SmallVec<[Meta; 4]> = SmallVec::new();
        for a in &node.args {
            args.push(match *a {
                ChainArg::Leaf(l) if l < chain.leaves.len() => {
                    let t = chain.leaves[l];
                    Meta {
                        dtype: t.dtype(),
                        shape: Dims::from_slice(t.shape()),
                        strides: Strides::from_slice(t.strides()),
                        order: None,
                    }
                }
                ChainArg::Const(c) if c < chain.consts.len() => Meta {
                    dtype: chain.consts[c].dtype,
                    shape: Dims::new(),
                    strides: Strides::new(),
                    order: None,
                },
                ChainArg::Node(n) if n < i => metas[n].0.clone(),
                other => {
                    return Err(at_node(
                        Error::invalid(
                            name,
                            format!(
                                "argument {other:?} does not exist (the chain has {} leaves and {} numbers; a node reads earlier nodes only)",
                                chain.leaves.len(),
                                chain.consts.len()
                            ),
                        ),
                        i,
                        name,
                    ))
                }
            });
        }
        let dummy: SmallVec<[&Tensor; 4]> = args.iter().map(|_| chain.leaves[0]).collect();
        check_arity(node.spec, &dummy, &node.params).map_err(|e| at_node(e, i, name))?;
        let operands: PerOperand<(DType, bool)> = args.iter().map(|m| (m.dtype, !m.shape.is_empty())).collect();
        let types = call_types_of(node.spec, &operands);
        let row = lookup(node.spec, layout_of(chain.leaves.iter().copied()), device, types.kernel)
            .map_err(|e| at_node(e, i, name))?;
        let mut shape = args[0].shape.clone();
        for m in &args[1..] {
            if m.shape != shape {
                shape = shape::broadcast_shapes(name, &shape, &m.shape).map_err(|e| at_node(e, i, name))?;
            }
        }
        shape::checked_numel(name, &shape, types.result).map_err(|e| at_node(e, i, name))?;
        let views: SmallVec<[(&[usize], &[isize]); 4]> =
            args.iter().map(|m| (m.shape.as_slice(), m.strides.as_slice())).collect();
        let order = new_output_order(&shape, &views);
        let strides = dense_strides(&shape, order.as_deref());
        metas.push((Meta { dtype: types.result, shape, strides, order }, row));
    }
    Ok(metas)
}

/// The planned nodes of `chain` on `device` — each node's eager row and result dtype, as
/// [`run_chain`] hands them to a runner — and the result's dtype and shape; for backends'
/// tests and tools that plan a chain's launches outside a call.
///
/// ```no_run
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// # fn demo(chain: &tensor_ops::tensor_core::call::fused::Chain<'_>) -> tensor_ops::Result<()> {
/// let (nodes, dtype, shape) = tensor_ops::tensor_core::call::fused::plan_nodes(chain, tensor_ops::Device::Cuda(0))?;
/// assert_eq!(nodes.len(), chain.nodes.len());
/// # Ok(()) }
/// ```
pub fn plan_nodes<'c>(chain: &Chain<'c>, device: Device) -> Result<(Vec<FusedNode<'c>>, DType, Dims)> {
    if chain.leaves.is_empty() || chain.nodes.is_empty() {
        return Err(Error::invalid("fused", "a fused chain needs at least one leaf tensor and one node"));
    }
    let metas = check_nodes(chain, device)?;
    let root = metas.last().expect("a node").0.clone();
    let nodes = chain
        .nodes
        .iter()
        .zip(metas)
        .map(|(n, (m, row))| FusedNode { row, args: &n.args, params: &n.params, result: m.dtype })
        .collect();
    Ok((nodes, root.dtype, root.shape))
}

/// Every leaf is on `device`; a mismatch names the first node that reads another device.
fn check_devices(chain: &Chain<'_>, device: Device) -> Result<()> {
    for (i, node) in chain.nodes.iter().enumerate() {
        for a in &node.args {
            if let ChainArg::Leaf(l) = *a
                && let Some(t) = chain.leaves.get(l).filter(|t| t.device() != device)
            {
                let name = node.spec.name;
                return Err(at_node(Error::DeviceMismatch { op: name, lhs: device, rhs: t.device() }, i, name));
            }
        }
    }
    Ok(())
}

/// Every leaf and node must contribute to the result (the last node): a chain is the DAG
/// of one expression, and its leaves are broadcast to the result's shape.
fn check_used(chain: &Chain<'_>) -> Result<()> {
    let (nl, nn) = (chain.leaves.len(), chain.nodes.len());
    let mut used = vec![false; nl + nn];
    used[nl + nn - 1] = true;
    for i in (0..nn).rev() {
        if !used[nl + i] {
            continue;
        }
        for a in &chain.nodes[i].args {
            match *a {
                ChainArg::Leaf(l) if l < nl => used[l] = true,
                ChainArg::Node(n) if n < i => used[nl + n] = true,
                _ => {} // reported with the node by `check_nodes`
            }
        }
    }
    match used.iter().position(|u| !u) {
        None => Ok(()),
        Some(k) => Err(Error::invalid(
            "fused",
            format!(
                "{} of the fused chain does not contribute to its result (the last node); every leaf and node must",
                if k < nl { format!("leaf {k}") } else { format!("node {}", k - nl) }
            ),
        )),
    }
}

/// Dense strides of `shape` in `order` (outermost dim first), or row-major.
fn dense_strides(shape: &[usize], order: Option<&[usize]>) -> Strides {
    let Some(order) = order else { return Strides::from_slice(&shape::contiguous_strides(shape)) };
    let mut strides = Strides::from_elem(0, shape.len());
    let mut step = 1isize;
    for &d in order.iter().rev() {
        strides[d] = step;
        step *= shape[d].max(1) as isize;
    }
    strides
}

/// Evaluates `chain` in one pass on its leaves' device: a new result (`out: None`, returned)
/// or into `out` (the result's shape exactly; a dtype the result can be cast to). The result
/// equals the eager chain's, bit for bit: each node runs its eager kernel row and each
/// intermediate is rounded to the dtype the eager op would have produced.
///
/// ```no_run
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// # fn demo(mul: &'static tensor_ops::tensor_core::registry::OpSpec) -> tensor_ops::Result<()> {
/// use tensor_ops::tensor_core::call::fused::{run_chain, Chain, ChainArg, ChainNode};
/// use tensor_ops::Tensor;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let args = [ChainArg::Leaf(0), ChainArg::Leaf(0)].into_iter().collect();
/// let node = ChainNode { spec: mul, args, params: Default::default() };
/// let sq = run_chain(&Chain { leaves: &[&a], consts: &[], nodes: &[node], reduce: None }, None)?.unwrap();
/// assert_eq!(sq.to_vec::<f32>()?, vec![1.0, 4.0]);
/// # Ok(()) }
/// ```
pub fn run_chain(chain: &Chain<'_>, out: Option<&Tensor>) -> Result<Option<Tensor>> {
    let (Some(first), Some(_)) = (chain.leaves.first(), chain.nodes.last()) else {
        return Err(Error::invalid("fused", "a fused chain needs at least one leaf tensor and one node"));
    };
    let device = first.device();
    check_devices(chain, device)?;
    if chain.leaves.iter().copied().chain(out).any(|t| t.dtype().is_quantized()) {
        // Quantized leaves or output: node by node, each node dequantizing its inputs and
        // quantizing its result (the eager chain's answer, which fusion must not change).
        return run_eager(chain, out);
    }
    let metas = check_nodes(chain, device)?;
    let (root, _) = metas.last().expect("a node");
    let runner = lookup(&FUSED_SPEC, layout_of(chain.leaves.iter().copied()), device, DType::F32)?;
    if chain.leaves.len() > runner.kernel.max_leaves() || chain.nodes.len() > MAX_FUSED_NODES {
        return run_eager(chain, out);
    }
    let nodes: Vec<FusedNode<'_>> = chain
        .nodes
        .iter()
        .zip(&metas)
        .map(|(n, (m, row))| FusedNode { row, args: &n.args, params: &n.params, result: m.dtype })
        .collect();
    match chain.reduce {
        None => {
            // Straight into `out`, or into a result of the chain's dtype (new, or rounded
            // to its dtype before `out` takes it: `rounds_before_out`).
            let direct = match out {
                Some(o) => {
                    o.check_same_device("fused", first)?;
                    let last = chain.nodes.len() - 1;
                    check_output(chain.nodes[last].spec, o, &root.shape, root.dtype, "out")
                        .map_err(|e| at_node(e, last, chain.nodes[last].spec.name))?;
                    (!rounds_before_out(root.dtype, o.dtype())).then_some(o)
                }
                None => None,
            };
            let Some(o) = direct else {
                let result = empty_in_order(&root.shape, root.order.as_deref(), root.dtype, device)?;
                run_map_chain(runner, chain.leaves, chain.consts, &result, &nodes)?;
                return match out {
                    Some(o) => o.copy_(&result).map(|_| None),
                    None => Ok(Some(result)),
                };
            };
            run_map_chain(runner, chain.leaves, chain.consts, o, &nodes)?;
            Ok(None)
        }
        Some(red) => reduce_chain(runner, chain, root, &nodes, red, out),
    }
}

fn run_map_chain(
    runner: &'static KernelRow,
    leaves: &[&Tensor],
    consts: &[ChainConst],
    out: &Tensor,
    nodes: &[FusedNode<'_>],
) -> Result<()> {
    let fused = FusedCall { nodes, consts, reduce: None };
    let launch = Launch { name: "fused", op: &FUSED_SPEC, row: runner, params: &[], extra: CallExtra::Fused(&fused) };
    // The leaves on one canonical plan of out's shape; partially overlapping ones copied.
    launch.run(Dest::Shared(out), leaves, MapLayout::of)
}

fn reduce_chain(
    runner: &'static KernelRow,
    chain: &Chain<'_>,
    root: &Meta,
    nodes: &[FusedNode<'_>],
    red: &ChainReduce,
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let spec = red.spec;
    let name = spec.op.name;
    if red.params.len() != spec.op.params.len() {
        return Err(Error::invalid(
            name,
            format!("{name} takes {} param(s), got {}", spec.op.params.len(), red.params.len()),
        ));
    }
    let geo = ReduceGeometry::new(name, &root.shape, red.reduce_dims(), red.keepdim)?;
    let result = spec.output.result(root.dtype);
    let device = chain.leaves[0].device();
    let row = lookup(&spec.op, layout_of(chain.leaves.iter().copied()), device, root.dtype)?;
    geo.check_extent(spec, || format!("{name} of an empty extent (shape {:?}) has no value", root.shape))?;
    if let Some(o) = out {
        o.check_same_device(name, chain.leaves[0])?;
        geo.check_out(name, o, result, || format!("the fused {name} of shape {:?}", root.shape))?;
    }
    // The reduction writes a private result of its own dtype, then `out` (if any) takes a
    // cast copy: what the eager reduction does whenever the dtypes differ.
    let target = Tensor::empty(&geo.out_shape, result, device)?;
    if geo.out_numel > 0 {
        let plan = geo.plan(&root.shape, &root.strides, target.strides());
        let reduce = Some(FusedReduce { row, plan: &plan, params: &red.params });
        let fused = FusedCall { nodes, consts: chain.consts, reduce };
        let launch = Launch { name, op: &FUSED_SPEC, row: runner, params: &[], extra: CallExtra::Fused(&fused) };
        // The target is fresh: no leaf overlaps it. The leaves lie on the canonical plan of
        // the chain's dense virtual result, the target on the reduction plan of that result.
        launch.run(Dest::Apart(&target), chain.leaves, |_, leaves| {
            let mut strides: Vec<Strides> = vec![root.strides.clone()];
            for t in leaves {
                strides.push(t.broadcast_strides(&root.shape)?);
            }
            let views: Vec<&[isize]> = strides.iter().map(|s| s.as_slice()).collect();
            Ok(ChainLayout { reduce: &plan, leaves: IterPlan::new(&root.shape, &views) })
        })?;
    }
    match out {
        None => Ok(Some(target)),
        Some(o) => {
            o.copy_(&target).map_err(|e| e.renamed(name))?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_errors_name_the_node() {
        let e = at_node(Error::DeviceMismatch { op: "add", lhs: Device::Cpu, rhs: Device::Cuda(0) }, 2, "add");
        let msg = e.to_string();
        assert!(msg.contains("node 2 (`add`) of the fused chain") && msg.contains("one device"), "{msg}");
        let e = at_node(Error::Broadcast { op: "mul", lhs: vec![2, 3], rhs: vec![4] }, 0, "mul").to_string();
        assert!(e.contains("node 0 (`mul`)") && e.contains("[2, 3]") && e.contains("[4]"), "{e}");
    }

    #[test]
    fn unused_leaves_and_nodes_are_errors() {
        let t = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        let node = |args: &[ChainArg]| ChainNode {
            spec: &crate::registry::COPY_SPEC,
            args: args.iter().copied().collect(),
            params: SmallVec::new(),
        };
        let nodes = [node(&[ChainArg::Leaf(0)]), node(&[ChainArg::Leaf(0)])];
        let chain = Chain { leaves: &[&t, &t], consts: &[], nodes: &nodes, reduce: None };
        let e = check_used(&chain).unwrap_err().to_string();
        assert!(e.contains("leaf 1") && e.contains("does not contribute"), "{e}");
        let chain = Chain { leaves: &[&t], consts: &[], nodes: &nodes, reduce: None };
        assert!(check_used(&chain).unwrap_err().to_string().contains("node 0"));
    }
}
