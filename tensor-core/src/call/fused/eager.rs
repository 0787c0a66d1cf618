//! A chain node by node through the eager call path: what a fused run must equal bit for
//! bit, and the way chains too large for one kernel run.

use super::{at_node, Chain, ChainArg};
use crate::{Error, Result, Tensor};

/// The most nodes one fused run takes: a kernel keeps a block buffer per node (8 KiB on the
/// CPU, per thread) and CUDA compiles a chain's nodes into one kernel, so a longer chain
/// runs node by node through the eager path instead (the same answer, bit for bit).
pub const MAX_FUSED_NODES: usize = 256;

/// The chain node by node through the eager call path — what a fused run must equal bit for
/// bit — for chains with more leaves or nodes than the device's runner takes in one
/// kernel. Each intermediate is dropped after the last node that reads it.
pub(super) fn run_eager(chain: &Chain<'_>, out: Option<&Tensor>) -> Result<Option<Tensor>> {
    let last = chain.nodes.len() - 1;
    let mut last_use = vec![last; chain.nodes.len()];
    for (i, n) in chain.nodes.iter().enumerate() {
        for a in &n.args {
            if let ChainArg::Node(j) = *a {
                last_use[j] = i;
            }
        }
    }
    let device = chain.leaves[0].device();
    let consts: Vec<Tensor> =
        chain.consts.iter().map(|c| Tensor::scalar(c.value, c.dtype)?.to_device(device)).collect::<Result<_>>()?;
    let mut results: Vec<Option<Tensor>> = Vec::with_capacity(chain.nodes.len());
    for (i, n) in chain.nodes.iter().enumerate() {
        let result = {
            let mut args: Vec<&Tensor> = Vec::with_capacity(n.args.len());
            for a in &n.args {
                args.push(match *a {
                    ChainArg::Leaf(j) => chain.leaves[j],
                    ChainArg::Const(j) => &consts[j],
                    ChainArg::Node(j) => results[j].as_ref().ok_or_else(|| {
                        Error::invalid("fused", format!("node {i} reads node {j}, which is not an earlier node"))
                    })?,
                });
            }
            match out {
                Some(o) if i == last && chain.reduce.is_none() => {
                    return crate::call::map_into(n.spec, &args, &n.params, Some(o))
                        .map(|()| None)
                        .map_err(|e| at_node(e, i, n.spec.name));
                }
                _ => crate::call::map_new(n.spec, &args, &n.params).map_err(|e| at_node(e, i, n.spec.name))?,
            }
        };
        results.push(Some(result));
        for a in &n.args {
            if let ChainArg::Node(j) = *a
                && last_use[j] == i
            {
                results[j] = None;
            }
        }
    }
    let root = results.pop().flatten().ok_or_else(|| Error::invalid("fused", "the chain produced no result"))?;
    match chain.reduce {
        None => Ok(Some(root)),
        Some(red) => crate::call::reduce::reduce(red.spec, &root, red.reduce_dims(), red.keepdim, &red.params, out),
    }
}
