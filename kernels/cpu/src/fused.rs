//! The CPU runner of fused chains (`tensor_core::call::fused`): block-at-a-time
//! evaluation. For each block of [`BLOCK`] elements of the result, every node runs its
//! generated block kernel (the eager op's [`MapKernel`]) on L1-resident buffers — leaves
//! staged as the map engine stages them (direct, splat, or gathered with a cast), each
//! intermediate converted to the dtype the eager op would have produced — so
//! intermediates never reach memory and the values are the eager chain's, bit for bit.
//! The result is written to the output (a cast scatter, or non-temporal stores for a large
//! contiguous output), or handed block by block to a reduction as its computed input
//! ([`InputSource`]), which walks it in the eager reduction's own order.

use crate::convert::{gather_cast, scatter_cast};
use crate::copy::stream::{copy_bytes_nt_unfenced, store_fence, NT_THRESHOLD};
use crate::kernel::{MapKernel, Store};
use crate::parallel::{for_each_chunk, GRAIN};
use crate::placement::{half_page_skew, PAGE};
use crate::reduce::{InputSource, ReduceKernel};
use smallvec::SmallVec;
use std::cell::RefCell;
use tensor_core::call::fused::{ChainArg, FusedCall};
use tensor_core::iter::IterPlan;
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Error, Result, Scalar, MAX_INPUTS};

/// Elements per block when the chain's operands fit in the caches: one buffer of f64 is
/// 8 KiB, so a few nodes' buffers stay in L1/L2, and each node's call is paid once per
/// 1024 elements.
pub const BLOCK: usize = 1024;
/// Elements per block when the chain streams from memory (operands and output together over
/// [`STREAMED_BYTES`]). Node by node over a block, the leaves are read one node after
/// another; short blocks keep every leaf's stream (and the output's) busy at once, as a
/// one-pass loop does, and the nodes' calls then cost less than the waits they overlap
/// (blocks swept with `fused_probe`: 128 elements came nearest the one-pass loop from
/// memory, while over cache-resident operands 1024 is best; `docs/performance-log.md`,
/// “From the code comments”).
pub const STREAM_BLOCK: usize = 128;
/// Operand bytes (leaves and output together) from which a chain is taken to stream from
/// memory rather than from the last-level cache (the size of that cache on the machine
/// the block sizes were measured on).
pub const STREAMED_BYTES: usize = 32 << 20;
/// Bytes of one block buffer (the widest element).
const SLOT: usize = BLOCK * 8;
/// The most leaves one run takes (a longer chain runs node by node through the eager path,
/// `tensor_core::call::fused`).
pub const MAX_LEAVES: usize = 63;

/// The `"cpu-fused"` runner (one row, op `"fused"`).
#[derive(Debug, Clone, Copy)]
pub struct FusedRunner;

/// Where one argument of a node comes from, resolved once per call.
#[derive(Debug, Clone, Copy)]
enum ArgFrom {
    /// Leaf `l` read in place (unit inner stride, the kernel's compute dtype).
    Leaf(usize),
    /// Leaf `l` gathered and cast into staging slot `stage`.
    LeafStaged { leaf: usize, stage: usize },
    /// Slot `k`: an earlier node's result, in the kernel's compute dtype.
    Slot(usize),
    /// Slot `k` (dtype `from`) cast into staging slot `stage`.
    SlotStaged { slot: usize, from: DType, stage: usize },
    /// Number `c` of the chain splatted (and cast) into staging slot `stage`.
    Const { c: usize, stage: usize },
}

/// One node, resolved to its CPU kernel and its arguments' sources.
struct Step<'a> {
    kernel: &'a MapKernel,
    params: &'a [Scalar],
    /// The dtype the eager op's result has (its kernel output is rounded to it).
    result: DType,
    args: [ArgFrom; MAX_INPUTS],
    nargs: usize,
}

/// A leaf as the blocks read it.
#[derive(Clone, Copy)]
struct LeafAt {
    ptr: *const u8,
    dtype: DType,
    /// Element size in bytes.
    size: isize,
    /// Stride along the inner run, in elements.
    stride: isize,
}

/// A chain over leaves laid out on one canonical plan.
struct Eval<'a> {
    steps: SmallVec<[Step<'a>; 8]>,
    leaves: SmallVec<[LeafAt; 8]>,
    /// The chain's numbers: dtype, and the value's bytes in that dtype (in a `u64`, which
    /// holds and aligns every dtype).
    consts: SmallVec<[(DType, u64); 4]>,
    plan: IterPlan,
    /// The output's stride along the inner run (elements).
    out_inner: isize,
    /// Elements per block ([`BLOCK`] or [`STREAM_BLOCK`]).
    block: usize,
    /// Block buffers one evaluation needs.
    slots: usize,
}

// SAFETY: `Eval` holds raw pointers into storages its caller keeps locked for the whole
// call; tasks only read leaves and write disjoint outputs.
unsafe impl Sync for Eval<'_> {}

/// `value` as an element of `dtype`, its bytes in a `u64` (low addresses first).
fn const_bytes(dtype: DType, value: Scalar) -> u64 {
    let mut bytes = 0u64;
    tensor_core::with_dtype!(dtype, T => {
        const { assert!(std::mem::size_of::<T>() <= 8 && std::mem::align_of::<T>() <= 8) };
        // SAFETY: every dtype's element fits a u64 and needs no more than its alignment
        // (checked above); a 0/1 bool is what `to` makes of a Scalar.
        unsafe { (&mut bytes as *mut u64).cast::<T>().write(value.to::<T>()) };
    });
    bytes
}

thread_local! {
    /// Block buffers of the calling thread (nodes + argument staging + the output's).
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl<'a> Eval<'a> {
    fn new(
        fused: &'a FusedCall<'a>,
        leaves: &'a [RawTensor<'a>],
        out_strides: &[isize],
        out_bytes: usize,
    ) -> Result<Eval<'a>> {
        let shape = leaves.first().map_or(&[][..], |l| l.shape);
        let plan = IterPlan::from_canonical(shape, out_strides, leaves.iter().map(|l| l.strides));
        let inner = plan.inner_strides();
        let leaf_at: SmallVec<[LeafAt; 8]> = leaves
            .iter()
            .enumerate()
            .map(|(l, t)| LeafAt { ptr: t.ptr, dtype: t.dtype, size: t.dtype.size() as isize, stride: inner[l + 1] })
            .collect();
        let nn = fused.nodes.len();
        let max_args = fused.nodes.iter().map(|n| n.args.len()).max().unwrap_or(0);
        let mut steps = SmallVec::new();
        for (i, n) in fused.nodes.iter().enumerate() {
            let Some(kernel) = n.row.kernel.as_any().downcast_ref::<MapKernel>() else {
                return Err(Error::invalid(
                    n.row.op.name,
                    format!("node {i} of the fused chain has a `{}` kernel, not a CPU map kernel", n.row.kernel.kind()),
                ));
            };
            if n.args.len() > MAX_INPUTS {
                return Err(Error::invalid(
                    n.row.op.name,
                    format!("node {i} of the fused chain has {} arguments; at most {MAX_INPUTS}", n.args.len()),
                ));
            }
            let mut args = [ArgFrom::Slot(0); MAX_INPUTS];
            for (a, arg) in n.args.iter().enumerate() {
                let stage = nn + a;
                args[a] = match *arg {
                    ChainArg::Leaf(l) => {
                        let leaf = &leaf_at[l];
                        if leaf.stride == 1 && leaf.dtype == kernel.compute {
                            ArgFrom::Leaf(l)
                        } else {
                            ArgFrom::LeafStaged { leaf: l, stage }
                        }
                    }
                    ChainArg::Const(c) if c < fused.consts.len() => ArgFrom::Const { c, stage },
                    ChainArg::Const(c) => {
                        return Err(Error::invalid(
                            "fused",
                            format!("node {i} reads number {c}, which the chain lacks"),
                        ))
                    }
                    ChainArg::Node(k) => {
                        let from = fused.nodes[k].result;
                        if from == kernel.compute {
                            ArgFrom::Slot(k)
                        } else {
                            ArgFrom::SlotStaged { slot: k, from, stage }
                        }
                    }
                };
            }
            steps.push(Step { kernel, params: n.params, result: n.result, args, nargs: n.args.len() });
        }
        // The bytes each leaf spans (a broadcast dim, stride 0, reads the same elements again).
        let spanned = |l: &RawTensor<'_>| {
            l.shape.iter().zip(l.strides).filter(|&(_, &st)| st != 0).map(|(&n, _)| n).product::<usize>()
                * l.dtype.size()
        };
        let streamed = leaves.iter().map(spanned).sum::<usize>() + out_bytes >= STREAMED_BYTES;
        let consts = fused.consts.iter().map(|c| (c.dtype, const_bytes(c.dtype, c.value))).collect();
        Ok(Eval {
            steps,
            leaves: leaf_at,
            consts,
            out_inner: inner[0],
            plan,
            block: if streamed { STREAM_BLOCK } else { BLOCK },
            slots: nn + max_args + 1,
        })
    }

    /// Computes flat plan positions `start..start + len` (run by run, block by block),
    /// handing each block to `sink(position, output offset, m, last node's block in its
    /// kernel output dtype)`; the output offset (elements) is the output operand's offset
    /// of the block's first element. When `direct(output offset)` gives an address (and a
    /// kind of store), the last node writes its `m` results there (and the sink gets that
    /// address); streaming stores there are the caller's to fence.
    ///
    /// # Safety
    /// The positions lie inside the plan; the leaves are readable there; a direct address
    /// is valid for `m` elements of the last node's kernel output dtype, the caller's only.
    unsafe fn eval(
        &self,
        start: usize,
        len: usize,
        direct: impl Fn(isize) -> Option<(*mut u8, Store)>,
        mut sink: impl FnMut(usize, isize, usize, *const u8),
    ) {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let need = (self.slots * SLOT + PAGE) / 8;
            if scratch.len() < need {
                scratch.resize(need, 0);
            }
            let raw = scratch.as_mut_ptr() as *mut u8;
            // The slots start on a line half a page from the first leaf (the scratch vector
            // is only 8-byte aligned): measured faster for cache-resident chains, DRAM-sized
            // ones within noise (their short blocks walk through every offset of a page
            // anyway); `docs/performance-log.md`, “From the code comments”.
            let first_leaf = self.leaves.first().map_or(0, |l| l.ptr as usize);
            let base = raw.wrapping_add(half_page_skew(raw as usize, first_leaf));
            let inner_len = self.plan.inner_len();
            let nl = self.leaves.len();
            let mut offs = [0isize; MAX_LEAVES + 1];
            let offs = &mut offs[..nl + 1];
            let mut run_ptr = [std::ptr::null::<u8>(); MAX_LEAVES];
            let run_ptr = &mut run_ptr[..nl];
            let mut i = start;
            while i < start + len {
                let (row, col) = (i / inner_len, i % inner_len);
                self.plan.row_offsets(row, offs);
                for (l, leaf) in self.leaves.iter().enumerate() {
                    run_ptr[l] = leaf.ptr.wrapping_offset(offs[l + 1] * leaf.size);
                }
                let run = (inner_len - col).min(start + len - i);
                let mut done = 0;
                while done < run {
                    let m = (run - done).min(self.block);
                    let c = (col + done) as isize;
                    let out_off = offs[0] + c * self.out_inner;
                    // SAFETY: forwarded; (row, c..c+m) lies in the plan.
                    let last = unsafe { self.block(base, run_ptr, c, m, direct(out_off)) };
                    sink(i + done, out_off, m, last);
                    done += m;
                }
                i += run;
            }
        })
    }

    /// Evaluates every node on `m` elements from column `c` of the run whose leaves start
    /// at `run_ptr`; returns the last node's block (its kernel output dtype).
    ///
    /// # Safety
    /// As [`Self::eval`]; `base` holds `self.slots` slots.
    #[inline(always)]
    unsafe fn block(
        &self,
        base: *mut u8,
        run_ptr: &[*const u8],
        c: isize,
        m: usize,
        to: Option<(*mut u8, Store)>,
    ) -> *const u8 {
        let slot = |k: usize| base.wrapping_add(k * SLOT);
        let leaf_ptr = |l: usize| {
            let leaf = &self.leaves[l];
            run_ptr[l].wrapping_offset(c * leaf.stride * leaf.size)
        };
        let nn = self.steps.len();
        let mut last = std::ptr::null();
        for (i, step) in self.steps.iter().enumerate() {
            let k = step.kernel;
            let mut ins = [std::ptr::null::<u8>(); MAX_INPUTS];
            for (a, arg) in step.args[..step.nargs].iter().enumerate() {
                ins[a] = match *arg {
                    ArgFrom::Leaf(l) => leaf_ptr(l),
                    ArgFrom::LeafStaged { leaf, stage } => {
                        let (at, src) = (slot(stage), leaf_ptr(leaf));
                        let l = &self.leaves[leaf];
                        // SAFETY: the m elements of this leaf's run are in bounds; the
                        // staging slot holds BLOCK elements of any dtype.
                        unsafe { gather_cast(at, k.compute, src, l.dtype, l.stride, m) };
                        at as *const u8
                    }
                    ArgFrom::Const { c, stage } => {
                        let at = slot(stage);
                        let (dtype, bytes) = &self.consts[c];
                        // SAFETY: `bytes` holds one element of `dtype` (stride 0: read m
                        // times); the staging slot holds BLOCK elements of any dtype.
                        unsafe { gather_cast(at, k.compute, (bytes as *const u64).cast(), *dtype, 0, m) };
                        at as *const u8
                    }
                    ArgFrom::Slot(s) => slot(s) as *const u8,
                    ArgFrom::SlotStaged { slot: s, from, stage } => {
                        let at = slot(stage);
                        // SAFETY: slot s holds m elements of its result dtype `from`.
                        unsafe { gather_cast(at, k.compute, slot(s), from, 1, m) };
                        at as *const u8
                    }
                };
            }
            let ins = &ins[..step.nargs];
            let own = slot(i);
            if i + 1 == nn {
                // The last node: its kernel output goes to the sink unconverted (the sink
                // converts once, to the output's dtype).
                let (dst, store) = to.unwrap_or((own, Store::Plain));
                // SAFETY: its slot holds BLOCK elements (a direct address m, the caller's
                // contract); inputs are valid for m elements and never alias `dst`: a
                // direct output partially overlapping a leaf was replaced by a copy, and an
                // exactly aliased leaf element is read before it is written.
                unsafe { (k.func)(dst, ins, m, step.params, store) };
                last = dst as *const u8;
            } else if k.output == step.result {
                // SAFETY: as above (an input of this node is never its own slot: nodes
                // read earlier nodes only).
                unsafe { (k.func)(own, ins, m, step.params, Store::Plain) };
            } else {
                let tmp = slot(self.slots - 1);
                // SAFETY: as above; then rounded to the eager result dtype in its slot.
                unsafe {
                    (k.func)(tmp, ins, m, step.params, Store::Plain);
                    scatter_cast(own, step.result, 1, tmp, k.output, m);
                }
            }
        }
        last
    }

    /// The kernel output dtype of the last node.
    fn last_output(&self) -> DType {
        self.steps.last().map_or(DType::F32, |n| n.kernel.output)
    }

    /// Writes the chain into `out` (on the plan), in parallel.
    ///
    /// # Safety
    /// `out` is an in-bounds view of a locked storage on the plan, no internal overlap, not
    /// partially overlapping a leaf.
    unsafe fn run_map(&self, out: &RawTensor<'_>) {
        let total = self.plan.numel();
        let large = total * out.dtype.size() >= NT_THRESHOLD && self.out_inner == 1;
        let from = self.last_output();
        let (out_ptr, out_dtype) = (OutPtr(out.ptr), out.dtype);
        let size = out_dtype.size() as isize;
        // The last node writes a contiguous output of its own dtype directly: plainly, or
        // (a large output at a 16-byte-aligned address) with streaming stores.
        let direct = out_dtype == from && self.out_inner == 1;
        for_each_chunk(total, GRAIN, |range| {
            // SAFETY: the chunk lies in the plan; each position's output element is this
            // task's only.
            unsafe {
                self.eval(
                    range.start,
                    range.len(),
                    |out_off| {
                        let at = out_ptr.at(out_off * size);
                        match (direct, large) {
                            (false, _) => None,
                            (true, false) => Some((at, Store::Plain)),
                            (true, true) => (at as usize).is_multiple_of(16).then_some((at, Store::Streaming)),
                        }
                    },
                    |_, out_off, m, block| {
                        let dst = out_ptr.at(out_off * size);
                        if std::ptr::eq(dst, block) {
                            // written in place by the last node
                        } else if large && out_dtype == from {
                            copy_bytes_nt_unfenced(dst, block, m * from.size());
                        } else {
                            scatter_cast(dst, out_dtype, self.out_inner, block, from, m);
                        }
                    },
                );
            }
            if large {
                store_fence();
            }
        });
    }
}

/// The output pointer shared by the tasks of one call (each writes disjoint elements).
#[derive(Clone, Copy)]
struct OutPtr(*mut u8);
// SAFETY: the storage is locked for the whole call and tasks write disjoint elements.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The address `bytes` from the base (a method, so closures capture the whole wrapper).
    fn at(self, bytes: isize) -> *mut u8 {
        self.0.wrapping_offset(bytes)
    }
}

/// The chain as a reduction's input: offsets of the dense virtual result are flat plan
/// positions.
struct ChainSource<'e, 'a> {
    eval: &'e Eval<'a>,
    /// The dtype of the virtual result (the last node's eager result dtype).
    dtype: DType,
}

impl InputSource for ChainSource<'_, '_> {
    unsafe fn fill(&self, off: isize, len: usize, dst: *mut u8) {
        let from = self.eval.last_output();
        let size = self.dtype.size();
        let at = |pos: isize| dst.wrapping_add((pos - off) as usize * size);
        // The last node writes straight into `dst` when no conversion is left to make.
        let direct = from == self.dtype;
        // SAFETY: the offsets are positions of the plan (the dense virtual result's
        // offsets, so the output offset is the position); `dst` holds `len` elements of
        // the result dtype.
        unsafe {
            self.eval.eval(
                off as usize,
                len,
                |pos| direct.then(|| (at(pos), Store::Plain)),
                |_, pos, m, block| {
                    if !direct {
                        scatter_cast(at(pos), self.dtype, 1, block, from, m);
                    }
                },
            );
        }
    }
}

impl KernelImpl for FusedRunner {
    fn kind(&self) -> &'static str {
        "cpu-fused"
    }

    /// The block evaluator keeps the leaves' run offsets on the stack ([`MAX_LEAVES`]).
    fn max_leaves(&self) -> usize {
        MAX_LEAVES
    }

    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let (Some(fused), Some(out)) = (call.fused(), call.outputs.first()) else {
            return Err(Error::invalid(call.op.name, "the fused runner needs a chain and one output"));
        };
        if call.inputs.len() > MAX_LEAVES {
            return Err(Error::invalid("fused", format!("a fused chain takes at most {MAX_LEAVES} leaves on the CPU")));
        }
        match fused.reduce {
            None => {
                let out_bytes = out.shape.iter().product::<usize>() * out.dtype.size();
                let eval = Eval::new(fused, call.inputs, out.strides, out_bytes)?;
                // SAFETY: the PreparedCall contract (operands on one canonical plan).
                unsafe { eval.run_map(out) };
                Ok(())
            }
            Some(red) => {
                let Some(kernel) = red.row.kernel.as_any().downcast_ref::<ReduceKernel>() else {
                    return Err(Error::invalid(red.row.op.name, "the fused reduction is not a CPU reduction"));
                };
                let shape = call.inputs.first().map_or(&[][..], |l| l.shape);
                let dense = tensor_core::shape::contiguous_strides(shape);
                let dtype = fused.nodes.last().map_or(DType::F32, |n| n.result);
                let eval = Eval::new(fused, call.inputs, &dense, 0)?;
                let source = ChainSource { eval: &eval, dtype };
                let input = RawTensor {
                    ptr: std::ptr::null_mut(),
                    dtype,
                    shape: &red.plan.shape,
                    strides: &red.plan.input,
                    device: out.device,
                };
                let out = RawTensor { shape: &red.plan.shape, strides: &red.plan.output, ..*out };
                // SAFETY: the output lies on the reduction plan of the virtual result, whose
                // every offset the source computes (the core's plans).
                unsafe { (kernel.fused)(&out, &input, call.index_strides(), red.params, &source) }
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
        device: tensor_core::DeviceKind::Cpu,
        layout: tensor_core::Layout::Strided,
        dtype: DType::F32,
        kernel: &FusedRunner,
    }
}

/// Referenced from [`crate::ensure_linked`] so the runner's registry row is linked.
#[inline(never)]
pub fn ensure_linked() {
    std::hint::black_box(&FusedRunner);
}
