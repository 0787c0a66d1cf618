//! The CUDA runner of fused chains (`tensor_core::call::fused`): one kernel per chain,
//! generated from the nodes' `__device__` functions (each node's eager row), compiled by
//! NVRTC and cached by the chain's structure — its source, which holds the ops, the leaves'
//! dtypes and the params as constants — so the same chain with new tensors reuses it.
//!
//! The chain's function converts exactly as the eager kernels do: each argument from its
//! storage dtype (a leaf's, or the previous node's eager result dtype) to the node's
//! compute type, each node's output rounded to its eager result dtype before the next node
//! reads it, so the kernel computes what the eager CUDA chain computes. A chain ending in a
//! reduction is one pass over the leaves too: the reduction's first-pass kernel computes
//! each value with the chain's function instead of loading it from a stored result
//! ([`crate::reduce_plan::plan_fused_reduce`]), on the launches and in the fold order the
//! eager reduction of the stored result has — so the answer is the eager one, bit for bit.

use crate::args::KernelParam;
use crate::codegen::DeviceFn;
use crate::ctype::CType;
use crate::kernel::{CudaMapKernel, CudaReduceKernel};
use crate::launch::{run, run_reduce_plan};
use crate::plan::{plan_fused, Step};
use crate::reduce_codegen::ChainSource;
use crate::reduce_plan::plan_fused_reduce;
use crate::runtime;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use tensor_core::call::fused::{ChainArg, FusedCall};
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Error, Result};

/// The `"cuda-fused"` runner (one row, op `"fused"`).
#[derive(Debug, Clone, Copy)]
pub struct CudaFusedRunner;

/// `expr` (of C type `from`) as C type `to`.
fn conv(from: CType, to: CType, expr: &str) -> String {
    if from == to {
        expr.to_string()
    } else {
        format!("tops_cast<{}>({expr})", to.name)
    }
}

/// Sources and names of the chains built so far, interned: a kernel spec borrows them for
/// the life of the process, as the compiled-kernel cache keeps the kernels.
static CHAINS: Mutex<Option<HashMap<String, (&'static str, &'static str)>>> = Mutex::new(None);

/// Chains already built, by their structure ([`structure_key`]): a repeated `eval()` of
/// the same chain skips building and hashing its source.
static BY_STRUCTURE: Mutex<Option<HashMap<Vec<u64>, DeviceFn<'static>>>> = Mutex::new(None);

/// A key that tells chains apart as their sources do: each node's kernel row (by address:
/// rows are statics), its result dtype, its arguments and params (bits and kind), the
/// numbers (dtype, bits, kind) and the leaves' dtypes.
fn structure_key(fused: &FusedCall<'_>, leaves: &[DType]) -> Vec<u64> {
    let mut key = Vec::with_capacity(8 * fused.nodes.len() + 3 * fused.consts.len() + leaves.len() + 3);
    key.extend(leaves.iter().map(|&d| d as u64));
    key.push(u64::MAX);
    for n in fused.nodes {
        key.push(std::ptr::from_ref(n.row) as usize as u64);
        key.push(n.result as u64);
        for a in n.args {
            key.push(match *a {
                ChainArg::Leaf(l) => l as u64,
                ChainArg::Const(c) => (1 << 62) | c as u64,
                ChainArg::Node(m) => (2 << 62) | m as u64,
            });
        }
        key.push(u64::MAX - 1);
        for &p in n.params {
            let kp = KernelParam::from(p);
            key.extend([kp.bits, u64::from(kp.kind)]);
        }
        key.push(u64::MAX - 2);
    }
    for c in fused.consts {
        let kp = KernelParam::from(c.value);
        key.extend([c.dtype as u64, kp.bits, u64::from(kp.kind)]);
    }
    key
}

/// The chain's `__device__` function for leaves of `leaves` dtypes: its name
/// (`tops_chain_<hash>`) and source (the nodes' functions, then the chain); built once per
/// chain structure.
///
/// ```
/// # fn demo(f: &tensor_core::call::fused::FusedCall<'_>) -> tensor_core::Result<()> {
/// let func = tensor_kernels_cuda::fused::chain_function(f, &[tensor_core::DType::F32])?;
/// assert!(func.name.starts_with("tops_chain_"));
/// # Ok(()) }
/// ```
pub fn chain_function(fused: &FusedCall<'_>, leaves: &[DType]) -> Result<DeviceFn<'static>> {
    let key = structure_key(fused, leaves);
    let poisoned = || Error::Cuda("the fused-chain cache is poisoned".into());
    if let Some(f) = BY_STRUCTURE.lock().map_err(|_| poisoned())?.get_or_insert_with(HashMap::new).get(&key) {
        return Ok(*f);
    }
    let f = build_chain_function(fused, leaves)?;
    BY_STRUCTURE.lock().map_err(|_| poisoned())?.get_or_insert_with(HashMap::new).insert(key, f);
    Ok(f)
}

/// [`chain_function`] without the structure cache.
fn build_chain_function(fused: &FusedCall<'_>, leaves: &[DType]) -> Result<DeviceFn<'static>> {
    let mut kernels = Vec::with_capacity(fused.nodes.len());
    for (i, n) in fused.nodes.iter().enumerate() {
        let Some(k) = n.row.kernel.as_any().downcast_ref::<CudaMapKernel>() else {
            return Err(Error::invalid(
                n.row.op.name,
                format!("node {i} of the fused chain has a `{}` kernel, not a CUDA map kernel", n.row.kernel.kind()),
            ));
        };
        kernels.push(k);
    }
    let last = kernels.last().ok_or_else(|| Error::invalid("fused", "a fused chain needs a node"))?;
    let result = CType::of(last.output);
    let mut body = String::new();
    let params: Vec<String> = leaves.iter().enumerate().map(|(l, &d)| format!("{} l{l}", CType::of(d).name)).collect();
    let _ = writeln!(body, "__device__ __forceinline__ {} TOPS_CHAIN({}) {{", result.name, params.join(", "));
    for (i, (n, k)) in fused.nodes.iter().zip(&kernels).enumerate() {
        let compute = CType::of(k.compute);
        let mut args = Vec::new();
        for a in n.args {
            args.push(match *a {
                ChainArg::Leaf(l) => {
                    let d = leaves.get(l).ok_or_else(|| Error::invalid("fused", format!("node {i} reads leaf {l}")))?;
                    conv(CType::of(*d), compute, &format!("l{l}"))
                }
                ChainArg::Const(c) => {
                    let k = fused
                        .consts
                        .get(c)
                        .ok_or_else(|| Error::invalid("fused", format!("node {i} reads number {c}")))?;
                    // The number as its dtype's value (exact: a tops_param converts with Rust
                    // `as` rules, and the value came from that dtype), then as the node's
                    // compute type, as a 0-dim leaf of that dtype would arrive.
                    let kp = KernelParam::from(k.value);
                    let ct = CType::of(k.dtype);
                    let value = format!("static_cast<{}>(tops_param{{{}ull, {}u, 0u}})", ct.name, kp.bits, kp.kind);
                    conv(ct, compute, &value)
                }
                ChainArg::Node(m) => conv(CType::of(fused.nodes[m].result), compute, &format!("r{m}")),
            });
        }
        for &p in n.params {
            let kp = KernelParam::from(p);
            args.push(format!("tops_param{{{}ull, {}u, 0u}}", kp.bits, kp.kind));
        }
        let out = CType::of(k.output);
        let _ = writeln!(body, "    const {} n{i} = {}({});", out.name, k.function, args.join(", "));
        if i + 1 < fused.nodes.len() {
            let r = CType::of(n.result);
            let _ = writeln!(body, "    const {} r{i} = {};", r.name, conv(out, r, &format!("n{i}")));
        }
    }
    let _ = writeln!(body, "    return n{};\n}}", fused.nodes.len() - 1);
    let mut source = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for k in &kernels {
        if !seen.contains(&k.function) {
            seen.push(k.function);
            source.push_str(k.source);
            source.push('\n');
        }
    }
    source.push_str(&body);
    let name = format!("tops_chain_{:016x}", crate::cache::key(&[source.as_bytes()]));
    let source = source.replace("TOPS_CHAIN", &name);
    let (name, source) = {
        let mut chains = CHAINS.lock().map_err(|_| Error::Cuda("the fused-chain cache is poisoned".into()))?;
        let map = chains.get_or_insert_with(HashMap::new);
        *map.entry(name.clone())
            .or_insert_with(|| (Box::leak(name.into_boxed_str()), Box::leak(source.into_boxed_str())))
    };
    Ok(DeviceFn { name, source, compute: last.compute, output: last.output, nparams: 0 })
}

/// The launches of `fused` writing `out` from `leaves` (all on the canonical plan).
///
/// # Errors
/// A node without a CUDA map kernel, or more leaves than a kernel takes.
pub fn plan_chain(
    fused: &FusedCall<'_>,
    out: &RawTensor<'_>,
    leaves: &[RawTensor<'_>],
    max_blocks: u32,
) -> Result<Vec<Step>> {
    let dtypes: Vec<DType> = leaves.iter().map(|l| l.dtype).collect();
    let func = chain_function(fused, &dtypes)?;
    plan_fused(func, out, leaves, max_blocks)
}

impl KernelImpl for CudaFusedRunner {
    fn kind(&self) -> &'static str {
        "cuda-fused"
    }

    /// One kernel takes [`tensor_core::MAX_INPUTS`] leaves (its argument block's pointers).
    fn max_leaves(&self) -> usize {
        tensor_core::MAX_INPUTS
    }

    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let (Some(fused), Some(out)) = (call.fused(), call.outputs.first()) else {
            return Err(Error::invalid(call.op.name, "the fused runner needs a chain and one output"));
        };
        let dev = runtime::device_of(out.device)?;
        match fused.reduce {
            None => {
                let steps = plan_chain(fused, out, call.inputs, dev.max_blocks())?;
                // SAFETY: the PreparedCall contract covers every operand the plan touches.
                unsafe { run(&dev, &steps) }
            }
            Some(red) => {
                let Some(kernel) = red.row.kernel.as_any().downcast_ref::<CudaReduceKernel>() else {
                    return Err(Error::invalid(
                        red.row.op.name,
                        format!("the fused chain ends in a `{}` kernel, not a CUDA reduction", red.row.kernel.kind()),
                    ));
                };
                let dtypes: Vec<DType> = call.inputs.iter().map(|l| l.dtype).collect();
                let func = chain_function(fused, &dtypes)?;
                let value = fused.nodes.last().map_or(DType::F32, |n| n.result);
                let chain =
                    ChainSource { name: func.name, source: func.source, returns: func.output, value, leaves: dtypes };
                // The chain's result as the eager chain would store it, never written:
                // the first pass computes each value from the leaves.
                let virtual_result = RawTensor {
                    ptr: std::ptr::null_mut(),
                    dtype: value,
                    shape: &red.plan.shape,
                    strides: &red.plan.input,
                    device: out.device,
                };
                let target = RawTensor { shape: &red.plan.shape, strides: &red.plan.output, ..*out };
                let plan = plan_fused_reduce(
                    kernel,
                    chain,
                    &target,
                    &virtual_result,
                    call.inputs,
                    call.index_strides(),
                    red.params,
                    dev.max_blocks(),
                )?;
                // SAFETY: the PreparedCall contract: the leaves are live device views on the
                // map plan of the chain's dense result, `out` lies on its reduction plan and
                // overlaps no leaf.
                unsafe { run_reduce_plan(&dev, plan) }
            }
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

tensor_core::inventory::submit! {
    tensor_core::registry::KernelRow {
        op: &tensor_core::registry::FUSED_SPEC,
        device: tensor_core::DeviceKind::Cuda,
        layout: tensor_core::Layout::Strided,
        dtype: DType::F32,
        kernel: &CudaFusedRunner,
    }
}

/// Referenced from [`crate::register::ensure_linked`] so the runner's registry row is linked.
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box(&CudaFusedRunner);
}
