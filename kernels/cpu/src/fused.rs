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
use crate::kernel::MapKernel;
use crate::parallel::{for_each_chunk, GRAIN};
use crate::reduce::{InputSource, ReduceKernel};
use smallvec::SmallVec;
use std::cell::RefCell;
use tensor_core::call::fused::{ChainArg, FusedCall};
use tensor_core::iter::{IterPlan, PerOperand};
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Error, Result, Scalar};

/// Elements per block: one buffer of f64 is 8 KiB, so a few nodes' buffers stay in L1/L2.
pub const BLOCK: usize = 1024;
/// Bytes of one block buffer (the widest element).
const SLOT: usize = BLOCK * 8;

/// The `"cpu-fused"` runner (one row, op `"fused"`).
#[derive(Debug, Clone, Copy)]
pub struct FusedRunner;

/// One node, resolved to its CPU kernel.
struct Node<'a> {
    kernel: &'a MapKernel,
    args: &'a [ChainArg],
    params: &'a [Scalar],
    result: DType,
}

/// A chain over leaves laid out on one canonical plan.
struct Eval<'a> {
    nodes: SmallVec<[Node<'a>; 8]>,
    leaves: &'a [RawTensor<'a>],
    plan: IterPlan,
    inner: PerOperand<isize>,
}

// SAFETY: `Eval` holds raw pointers into storages its caller keeps locked for the whole
// call; tasks only read leaves and write disjoint outputs.
unsafe impl Sync for Eval<'_> {}

thread_local! {
    /// Block buffers of the calling thread (nodes + argument staging + the output's).
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl<'a> Eval<'a> {
    fn new(fused: &'a FusedCall<'a>, leaves: &'a [RawTensor<'a>], out_strides: &[isize]) -> Result<Eval<'a>> {
        let mut nodes = SmallVec::new();
        for (i, n) in fused.nodes.iter().enumerate() {
            let Some(kernel) = n.row.kernel.as_any().downcast_ref::<MapKernel>() else {
                return Err(Error::invalid(
                    n.row.op.name,
                    format!("node {i} of the fused chain has a `{}` kernel, not a CPU map kernel", n.row.kernel.kind()),
                ));
            };
            nodes.push(Node { kernel, args: n.args, params: n.params, result: n.result });
        }
        let shape = leaves.first().map_or(&[][..], |l| l.shape);
        let plan = IterPlan::from_canonical(shape, out_strides, leaves.iter().map(|l| l.strides));
        let inner = plan.inner_strides();
        Ok(Eval { nodes, leaves, plan, inner })
    }

    /// Block buffers one evaluation needs: a result per node, a staging buffer per
    /// argument of the widest node, and one for a kernel output before its conversion.
    fn scratch_slots(&self) -> usize {
        self.nodes.len() + self.nodes.iter().map(|n| n.args.len()).max().unwrap_or(0) + 1
    }

    /// Computes flat plan positions `start..start + len` (run by run, block by block),
    /// handing each block to `sink(position, m, last node's block in its kernel output dtype)`.
    /// When `direct(position)` gives an address, the last node writes its `m` results there
    /// (and the sink gets that address).
    ///
    /// # Safety
    /// The positions lie inside the plan; the leaves are readable there; a direct address
    /// is valid for `m` elements of the last node's kernel output dtype, the caller's only.
    unsafe fn eval(
        &self,
        start: usize,
        len: usize,
        direct: impl Fn(usize) -> Option<*mut u8>,
        mut sink: impl FnMut(usize, usize, *const u8),
    ) {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            let need = self.scratch_slots() * SLOT / 8;
            if scratch.len() < need {
                scratch.resize(need, 0);
            }
            let bufs = &mut scratch[..need];
            let inner_len = self.plan.inner_len();
            let mut offs = [0isize; 64];
            let nl = self.leaves.len();
            let offs = &mut offs[..nl + 1];
            let mut i = start;
            while i < start + len {
                let (row, col) = (i / inner_len, i % inner_len);
                self.plan.row_offsets(row, offs);
                let run = (inner_len - col).min(start + len - i);
                let mut done = 0;
                while done < run {
                    let m = (run - done).min(BLOCK);
                    let c = (col + done) as isize;
                    // SAFETY: forwarded; (row, c..c+m) lies in the plan.
                    let last = unsafe { self.block(bufs, offs, c, m, direct(i + done)) };
                    sink(i + done, m, last);
                    done += m;
                }
                i += run;
            }
        })
    }

    /// Evaluates every node on `m` elements from column `c` of the run at `offs`;
    /// returns the last node's block (its kernel output dtype).
    ///
    /// # Safety
    /// As [`Self::eval`].
    unsafe fn block(&self, bufs: &mut [u64], offs: &[isize], c: isize, m: usize, to: Option<*mut u8>) -> *const u8 {
        let nn = self.nodes.len();
        let base = bufs.as_mut_ptr() as *mut u8;
        let slot = |k: usize| base.wrapping_add(k * SLOT);
        let mut last = std::ptr::null();
        for (i, node) in self.nodes.iter().enumerate() {
            let k = node.kernel;
            let mut ins: SmallVec<[*const u8; 4]> = SmallVec::new();
            for (a, arg) in node.args.iter().enumerate() {
                let stage = slot(nn + a);
                ins.push(match *arg {
                    ChainArg::Leaf(l) => {
                        let leaf = &self.leaves[l];
                        let stride = self.inner[l + 1];
                        let src = leaf.ptr.wrapping_offset((offs[l + 1] + c * stride) * leaf.dtype.size() as isize);
                        if stride == 1 && leaf.dtype == k.compute {
                            src as *const u8
                        } else {
                            // SAFETY: the m elements of this leaf's run are in bounds; the
                            // staging slot holds BLOCK elements of any dtype.
                            unsafe { gather_cast(stage, k.compute, src, leaf.dtype, stride, m) };
                            stage as *const u8
                        }
                    }
                    ChainArg::Node(n) => {
                        let from = slot(n);
                        let dt = self.nodes[n].result;
                        if dt == k.compute {
                            from as *const u8
                        } else {
                            // SAFETY: node n's slot holds m elements of its result dtype.
                            unsafe { gather_cast(stage, k.compute, from, dt, 1, m) };
                            stage as *const u8
                        }
                    }
                });
            }
            let own = slot(i);
            if i + 1 == nn {
                // The last node: its kernel output goes to the sink unconverted (the sink
                // converts once, to the output's dtype).
                let dst = to.unwrap_or(own);
                // SAFETY: its slot holds BLOCK elements (a direct address m, the caller's
                // contract); inputs are valid for m elements and never alias `dst`: a
                // direct output partially overlapping a leaf was replaced by a copy, and an
                // exactly aliased leaf element is read before it is written.
                unsafe { (k.func)(dst, &ins, m, node.params) };
                last = dst as *const u8;
            } else if k.output == node.result {
                // SAFETY: as above (an input of this node is never its own slot: nodes
                // read earlier nodes only).
                unsafe { (k.func)(own, &ins, m, node.params) };
            } else {
                let tmp = slot(nn + node.args.len());
                // SAFETY: as above; then rounded to the eager result dtype in its slot.
                unsafe {
                    (k.func)(tmp, &ins, m, node.params);
                    scatter_cast(own, node.result, 1, tmp, k.output, m);
                }
            }
        }
        last
    }

    /// The kernel output dtype of the last node.
    fn last_output(&self) -> DType {
        self.nodes.last().map_or(DType::F32, |n| n.kernel.output)
    }

    /// Writes the chain into `out` (on the plan), in parallel.
    ///
    /// # Safety
    /// `out` is an in-bounds view of a locked storage on the plan, no internal overlap, not
    /// partially overlapping a leaf.
    unsafe fn run_map(&self, out: &RawTensor<'_>) {
        let total = self.plan.numel();
        let large = total * out.dtype.size() >= NT_THRESHOLD && self.inner[0] == 1;
        let from = self.last_output();
        let inner_len = self.plan.inner_len();
        let (out_ptr, out_dtype) = (OutPtr(out.ptr), out.dtype);
        // The last node writes a plain contiguous output of its own dtype directly.
        let direct = !large && out_dtype == from && self.inner[0] == 1;
        for_each_chunk(total, GRAIN, |range| {
            let mut row_off = [0isize; 64];
            let mut cur_row = usize::MAX;
            let nops = self.leaves.len() + 1;
            // SAFETY: the chunk lies in the plan; each position's output element is this
            // task's only.
            let at = |pos: usize, row_off: &mut [isize; 64], cur_row: &mut usize| {
                let (row, col) = (pos / inner_len, pos % inner_len);
                if row != *cur_row {
                    self.plan.row_offsets(row, &mut row_off[..nops]);
                    *cur_row = row;
                }
                out_ptr.at((row_off[0] + col as isize * self.inner[0]) * out_dtype.size() as isize)
            };
            let (mut d_off, mut d_row) = ([0isize; 64], usize::MAX);
            let d_off = std::cell::RefCell::new((&mut d_off, &mut d_row));
            unsafe {
                self.eval(
                    range.start,
                    range.len(),
                    |pos| {
                        direct.then(|| {
                            let (o, r) = &mut *d_off.borrow_mut();
                            at(pos, o, r)
                        })
                    },
                    |pos, m, block| {
                        let dst = at(pos, &mut row_off, &mut cur_row);
                        if std::ptr::eq(dst, block) {
                            // written in place by the last node
                        } else if large && out_dtype == from {
                            copy_bytes_nt_unfenced(dst, block, m * from.size());
                        } else {
                            scatter_cast(dst, out_dtype, self.inner[0], block, from, m);
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
        // SAFETY: the offsets are positions of the plan (the dense virtual result's
        // offsets); `dst` holds `len` elements of the result dtype.
        unsafe {
            self.eval.eval(
                off as usize,
                len,
                |_| None,
                |pos, m, block| {
                    let at = dst.wrapping_add((pos - off as usize) * size);
                    scatter_cast(at, self.dtype, 1, block, from, m);
                },
            );
        }
    }
}

impl KernelImpl for FusedRunner {
    fn kind(&self) -> &'static str {
        "cpu-fused"
    }

    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let (Some(fused), Some(out)) = (call.fused, call.outputs.first()) else {
            return Err(Error::invalid(call.op.name, "the fused runner needs a chain and one output"));
        };
        if call.inputs.len() + 1 > 64 {
            return Err(Error::invalid("fused", "a fused chain takes at most 63 leaves on the CPU"));
        }
        match fused.reduce {
            None => {
                let eval = Eval::new(fused, call.inputs, out.strides)?;
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
                let eval = Eval::new(fused, call.inputs, &dense)?;
                let dtype = fused.nodes.last().map_or(DType::F32, |n| n.result);
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
                unsafe { (kernel.fused)(&out, &input, call.index_strides, red.params, &source) }
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
