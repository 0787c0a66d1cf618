//! Launch planning of reductions: pure host logic (no driver call), so the CPU shim runs
//! exactly the launches a GPU runs.
//!
//! The core hands over its canonical reduction plan (dims by decreasing input |stride|,
//! the output's stride 0 along reduced dims, the logical-index step of each reduced dim).
//! Its dims split into kept and reduced, each innermost first. An extent of at most
//! [`SMALL_EXTENT_MAX`] elements along one dim is folded whole by a thread per output (the
//! small pass, several outputs a thread). Otherwise, when the innermost dim is reduced, the
//! row kernel runs a block per output, of as many threads (32 to [`REDUCE_BLOCK`]) as give
//! each a round of four 16-byte vectors (a row of 2 Ki f32: 128; 256 did not fill the rounds
//! and ran argmax, var and logsumexp at two thirds of the speed, H200 2026-11-28); else the
//! column kernel runs a thread per output with threadIdx.y splitting the extent. A long extent with too few outputs to fill the device is
//! cut into slices whose partials go to a workspace and a second pass combines them in slice
//! order (a block per output when outputs are few and partials many); no thread folds more than [`MAX_SEQUENTIAL`] elements in one
//! running accumulator (f32 sums stay blocked at any size).

use tensor_core::registry::RawTensor;
use tensor_core::{Error, Result, Scalar};

use super::args::{FusedReduceArgs, KernelParam, ReduceArgs, StridedArgs64, MAX_DIMS, MAX_PARAMS};
use super::codegen::{KernelSpec, BLOCK};
use super::plan::{Args, Launch, Step};
use super::reduce_codegen::{ChainSource, ReduceFn, ReducePass, REDUCE_BLOCK, SMALL_EXTENT_MAX};
use crate::kernel::CudaReduceKernel;
use tensor_core::iter::IterPlan;

/// Bytes of one partial accumulator in the workspace (`TOPS_REDUCE_ACC_BYTES`).
pub const ACC_BYTES: usize = 32;
/// Most elements one thread folds into one running accumulator.
pub const MAX_SEQUENTIAL: usize = 4096;
/// Elements per thread below which an extent is not worth a split.
const MIN_PER_THREAD: usize = 16;
/// Most rows of a column block (`TOPS_REDUCE_MAX_Y`).
const MAX_Y: u32 = 8;
/// Partials per output from which the second pass runs a block per output.
const WIDE_FINISH_SPLIT: usize = 64;

/// A planned reduction: its launches and the workspace they need.
#[derive(Debug, Clone)]
pub struct ReducePlan {
    /// The launches, in order.
    pub steps: Vec<Step>,
    /// Workspace bytes the launches share (0 when the extent is not split).
    pub workspace_bytes: usize,
}

impl ReducePlan {
    /// Points every launch at a workspace of [`ReducePlan::workspace_bytes`] bytes at `addr`.
    pub fn bind_workspace(&mut self, addr: u64) {
        for step in &mut self.steps {
            match step {
                Step::Kernel(Launch { args: Args::Reduce(a), .. }) => a.work = addr,
                Step::Kernel(Launch { args: Args::FusedReduce(a), .. }) => a.r.work = addr,
                _ => {}
            }
        }
    }
}

fn addr(t: &RawTensor<'_>) -> u64 {
    t.ptr as usize as u64
}

/// The launches reducing `input` into `out` over the plan dims where `out`'s stride is 0
/// (the core's canonical plan: both operands share `out.shape`, dims by decreasing input
/// |stride|; `index_strides` the logical-index steps, 0 on kept dims). `max_blocks` bounds
/// the grid (a device's resident blocks; tests pass small values to force splits).
pub fn plan_reduce(
    kernel: &CudaReduceKernel,
    out: &RawTensor<'_>,
    input: &RawTensor<'_>,
    index_strides: &[isize],
    params: &[Scalar],
    max_blocks: u32,
) -> Result<ReducePlan> {
    let name = kernel.reducer;
    let nd = out.shape.len();
    if input.shape != out.shape || input.strides.len() != nd || out.strides.len() != nd || index_strides.len() != nd {
        return Err(Error::Cuda(format!("{name}: the reduction plan's operands disagree on their dims")));
    }
    if params.len() > MAX_PARAMS {
        return Err(Error::Cuda(format!("{name}: a CUDA reduction takes at most {MAX_PARAMS} params")));
    }
    // An empty input is never read: null, not its empty block's dangling address.
    let empty = input.shape.contains(&0);
    let mut a = ReduceArgs { out: addr(out), input: if empty { 0 } else { addr(input) }, ..Default::default() };
    let (mut kdim, mut rdim) = (0usize, 0usize);
    // Innermost first: the plan lists dims outermost first.
    for d in (0..nd).rev() {
        let size = out.shape[d];
        if size == 1 {
            continue;
        }
        let reduced = out.strides[d] == 0;
        let slot = if reduced { rdim } else { kdim };
        if slot == MAX_DIMS {
            return Err(Error::Cuda(format!(
                "{name}: a CUDA reduction takes at most {MAX_DIMS} kept and {MAX_DIMS} reduced dims after coalescing (shape {:?})",
                out.shape
            )));
        }
        if reduced {
            a.rsize[slot] = size as i64;
            a.rin[slot] = input.strides[d] as i64;
            a.ridx[slot] = index_strides[d] as i64;
            rdim += 1;
        } else {
            a.ksize[slot] = size as i64;
            a.kin[slot] = input.strides[d] as i64;
            a.kout[slot] = out.strides[d] as i64;
            kdim += 1;
        }
    }
    let n_out: usize = a.ksize[..kdim].iter().map(|&s| s as usize).product();
    let n_red: usize = a.rsize[..rdim].iter().map(|&s| s as usize).product();
    if n_out == 0 {
        return Ok(ReducePlan { steps: Vec::new(), workspace_bytes: 0 });
    }
    a.kdim = kdim as i32;
    a.rdim = rdim as i32;
    a.n_out = n_out as i64;
    a.n_red = n_red as i64;
    for (slot, p) in a.params.iter_mut().zip(params) {
        *slot = KernelParam::from(*p);
    }
    let reducer = ReduceFn::from_kernel(kernel);
    // A tiny extent along one dim: a thread per output folds it all (several outputs a
    // thread), on either dim.
    if rdim == 1 && n_red <= usize::from(SMALL_EXTENT_MAX) {
        let extent = n_red.next_power_of_two().max(2) as u8;
        let per_thread = match extent {
            2 | 4 => 4,
            8 => 2,
            _ => 1,
        };
        a.split = 1;
        a.chunk = n_red as i64;
        let grid = n_out.div_ceil(REDUCE_BLOCK as usize * per_thread).clamp(1, max_blocks.max(1) as usize) as u32;
        let spec = KernelSpec::Reduce { reducer, input: input.dtype, pass: ReducePass::Small { extent } };
        let steps = vec![Step::Kernel(Launch { spec, grid, block: (REDUCE_BLOCK, 1), args: Args::Reduce(a) })];
        return Ok(ReducePlan { steps, workspace_bytes: 0 });
    }
    // The row kernel when the innermost dim is reduced (or nothing is kept).
    let rows = rdim > 0 && (kdim == 0 || a.rin[0].unsigned_abs() <= a.kin[0].unsigned_abs());
    let pass = if rows { ReducePass::Rows } else { ReducePass::Columns };
    let max_blocks = max_blocks.max(1) as usize;
    let (block, out_tasks) = if rows {
        // Threads a row: enough for each to have a round of four 16-byte vectors (the
        // loads the dense body keeps in flight), 32 to REDUCE_BLOCK.
        let per_thread = 64 / input.dtype.size().clamp(1, 16);
        let threads = n_red.div_ceil(per_thread).clamp(32, REDUCE_BLOCK as usize).next_power_of_two() as u32;
        ((threads.min(REDUCE_BLOCK), 1), n_out)
    } else {
        let by = n_red.clamp(1, MAX_Y as usize).next_power_of_two() as u32;
        ((32, by.min(MAX_Y)), n_out.div_ceil(32))
    };
    let reducing_threads = if rows { block.0 } else { block.1 } as usize;
    // Slices: enough tasks to fill the device when outputs are few, and never more than
    // MAX_SEQUENTIAL elements per thread.
    let mut split = 1usize;
    if out_tasks < max_blocks && n_red > reducing_threads * MIN_PER_THREAD {
        split = max_blocks.div_ceil(out_tasks).min(n_red / (reducing_threads * MIN_PER_THREAD));
    }
    split = split.max(n_red.div_ceil(reducing_threads * MAX_SEQUENTIAL)).max(1);
    let chunk = n_red.div_ceil(split).max(1);
    split = n_red.div_ceil(chunk).max(1);
    a.split = split as i64;
    a.chunk = chunk as i64;
    let tasks = out_tasks.saturating_mul(split);
    let grid = tasks.min(max_blocks.saturating_mul(8)).min(i32::MAX as usize) as u32;
    let mut steps = vec![Step::Kernel(Launch {
        spec: KernelSpec::Reduce { reducer, input: input.dtype, pass },
        grid,
        block,
        args: Args::Reduce(a),
    })];
    let workspace_bytes = if split > 1 {
        // Few outputs over many partials: a block per output combines them (one thread
        // combining thousands of partials in turn would wait on each load).
        let wide = n_out < max_blocks && split >= WIDE_FINISH_SPLIT;
        let (grid, block) = if wide {
            (n_out as u32, (REDUCE_BLOCK, 1))
        } else {
            (n_out.div_ceil(BLOCK as usize).min(max_blocks) as u32, (BLOCK, 1))
        };
        steps.push(Step::Kernel(Launch {
            spec: KernelSpec::ReduceFinish { reducer, wide },
            grid,
            block,
            args: Args::Reduce(a),
        }));
        n_out
            .checked_mul(split)
            .and_then(|n| n.checked_mul(ACC_BYTES))
            .ok_or_else(|| Error::Cuda(format!("{name}: the reduction's workspace size overflows")))?
    } else {
        0
    };
    Ok(ReducePlan { steps, workspace_bytes })
}

/// The launches reducing, into `out`, the values a fused `chain` computes from its `leaves`:
/// the launches [`plan_reduce`] makes for the chain's result stored densely (`value` is the
/// eager chain's view of it: its dtype, the reduction plan's shape and input strides, a null
/// address), whose first pass computes each value from the leaves instead of loading it.
/// The leaves lie on the map plan of that dense result (its flat index is its offset).
/// Same launches, same order of folds: the answer is the eager chain's, bit for bit.
#[allow(clippy::too_many_arguments)]
pub fn plan_fused_reduce(
    kernel: &CudaReduceKernel,
    chain: ChainSource<'static>,
    out: &RawTensor<'_>,
    value: &RawTensor<'_>,
    leaves: &[RawTensor<'_>],
    index_strides: &[isize],
    params: &[Scalar],
    max_blocks: u32,
) -> Result<ReducePlan> {
    let name = kernel.reducer;
    let Some(first) = leaves.first() else {
        return Err(Error::Cuda(format!("{name}: a fused CUDA reduction needs a leaf")));
    };
    if leaves.iter().any(|l| l.shape != first.shape || l.strides.len() != first.shape.len()) {
        return Err(Error::Cuda(format!("{name}: the fused reduction's leaves disagree on their map plan")));
    }
    let dense = tensor_core::shape::contiguous_strides(first.shape);
    let map = IterPlan {
        shape: first.shape.iter().copied().collect(),
        strides: std::iter::once(dense.iter().copied().collect())
            .chain(leaves.iter().map(|l| l.strides.iter().copied().collect()))
            .collect(),
    };
    // Empty leaves are never read: null, not their empty blocks' dangling addresses.
    let empty = first.shape.contains(&0);
    let ptrs: Vec<u64> = std::iter::once(0).chain(leaves.iter().map(|l| if empty { 0 } else { addr(l) })).collect();
    let m = StridedArgs64::new(&map, &ptrs, &[], 0)?;
    let mut plan = plan_reduce(kernel, out, value, index_strides, params, max_blocks)?;
    for step in &mut plan.steps {
        if let Step::Kernel(l) = step
            && let (KernelSpec::Reduce { reducer, pass, .. }, Args::Reduce(r)) = (&l.spec, &l.args)
        {
            let (reducer, pass, r) = (*reducer, *pass, *r);
            l.spec = KernelSpec::FusedReduce { reducer, chain: chain.clone(), pass };
            l.args = Args::FusedReduce(FusedReduceArgs { r, m });
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensor_core::{DType, Device};

    fn raw<'a>(shape: &'a [usize], strides: &'a [isize], dtype: DType) -> RawTensor<'a> {
        RawTensor { ptr: std::ptr::null_mut(), dtype, shape, strides, device: Device::Cpu }
    }

    const SUM: CudaReduceKernel =
        CudaReduceKernel { reducer: "tops_red_amax", source: "", compute: DType::F32, output: DType::F32 };

    fn first(p: &ReducePlan) -> (&KernelSpec<'static>, &ReduceArgs, (u32, u32)) {
        match &p.steps[0] {
            Step::Kernel(Launch { spec, args: Args::Reduce(a), block, .. }) => (spec, a, *block),
            other => panic!("not a reduce launch: {other:?}"),
        }
    }

    #[test]
    fn last_dim_uses_rows_and_first_dim_columns() {
        let shape = [64usize, 100];
        let p = plan_reduce(
            &SUM,
            &raw(&shape, &[1, 0], DType::F32),
            &raw(&shape, &[100, 1], DType::F32),
            &[0, 1],
            &[],
            1000,
        )
        .unwrap();
        let (spec, a, block) = first(&p);
        assert!(matches!(spec, KernelSpec::Reduce { pass: ReducePass::Rows, .. }));
        assert_eq!((a.n_out, a.n_red, a.split, block.0), (64, 100, 1, 32));
        let shape = [100usize, 64];
        let p = plan_reduce(
            &SUM,
            &raw(&shape, &[0, 1], DType::F32),
            &raw(&shape, &[64, 1], DType::F32),
            &[1, 0],
            &[],
            1000,
        )
        .unwrap();
        let (spec, a, block) = first(&p);
        assert!(matches!(spec, KernelSpec::Reduce { pass: ReducePass::Columns, .. }));
        assert_eq!((a.n_out, a.n_red, a.kin[0], a.rin[0], block), (64, 100, 1, 64, (32, 8)));
    }

    #[test]
    fn row_threads_each_have_a_round_of_four_vectors() {
        // (dtype, row length, threads a row): 64 bytes a thread, 32 to REDUCE_BLOCK threads
        for (dtype, n, threads) in [
            (DType::F32, 2048usize, 128u32),
            (DType::F32, 1024, 64),
            (DType::F32, 3000, 256),
            (DType::F32, 1 << 14, REDUCE_BLOCK),
            (DType::F64, 2048, 256),
            (DType::U8, 2048, 32),
            (DType::F32, 40, 32),
        ] {
            let shape = [4096usize, n];
            let p = plan_reduce(
                &SUM,
                &raw(&shape, &[1, 0], DType::F32),
                &raw(&shape, &[n as isize, 1], dtype),
                &[0, 1],
                &[],
                1000,
            )
            .unwrap();
            let (spec, a, block) = first(&p);
            assert!(matches!(spec, KernelSpec::Reduce { pass: ReducePass::Rows, .. }), "{dtype} {n}");
            assert_eq!((a.split, block), (1, (threads, 1)), "{dtype} rows of {n}");
        }
    }

    #[test]
    fn few_outputs_over_a_long_extent_split_with_a_second_pass() {
        let shape = [1usize << 20];
        let p =
            plan_reduce(&SUM, &raw(&shape, &[0], DType::F32), &raw(&shape, &[1], DType::F32), &[1], &[], 100).unwrap();
        let (_, a, block) = first(&p);
        assert!(a.split > 1 && a.split as usize * a.chunk as usize >= 1 << 20);
        assert!(a.chunk as usize <= block.0 as usize * MAX_SEQUENTIAL);
        assert_eq!(p.steps.len(), 2);
        assert_eq!(p.workspace_bytes, a.split as usize * ACC_BYTES);
    }

    #[test]
    fn tiny_extents_use_the_small_pass_on_either_dim() {
        // [1000, 4] along the last dim: 4 outputs a thread, one launch, no workspace
        let shape = [1000usize, 4];
        let p =
            plan_reduce(&SUM, &raw(&shape, &[1, 0], DType::F32), &raw(&shape, &[4, 1], DType::F32), &[0, 1], &[], 64)
                .unwrap();
        let (spec, a, block) = first(&p);
        assert!(matches!(spec, KernelSpec::Reduce { pass: ReducePass::Small { extent: 4 }, .. }), "{spec:?}");
        assert_eq!((a.n_out, a.n_red, a.split, block, p.steps.len()), (1000, 4, 1, (REDUCE_BLOCK, 1), 1));
        // [3, 5000] along the first dim: extent 3 rounds up to a bound of 4
        let shape = [3usize, 5000];
        let p = plan_reduce(
            &SUM,
            &raw(&shape, &[0, 1], DType::F32),
            &raw(&shape, &[5000, 1], DType::F32),
            &[1, 0],
            &[],
            64,
        )
        .unwrap();
        let (spec, a, _) = first(&p);
        assert!(matches!(spec, KernelSpec::Reduce { pass: ReducePass::Small { extent: 4 }, .. }), "{spec:?}");
        assert_eq!((a.n_out, a.n_red, a.kin[0], a.rin[0]), (5000, 3, 1, 5000));
        // 17 elements: the row kernel
        let shape = [1000usize, 17];
        let p =
            plan_reduce(&SUM, &raw(&shape, &[1, 0], DType::F32), &raw(&shape, &[17, 1], DType::F32), &[0, 1], &[], 64)
                .unwrap();
        assert!(matches!(first(&p).0, KernelSpec::Reduce { pass: ReducePass::Rows, .. }));
    }

    #[test]
    fn one_long_row_finishes_with_a_block() {
        let shape = [1usize << 24];
        let p =
            plan_reduce(&SUM, &raw(&shape, &[0], DType::F32), &raw(&shape, &[1], DType::F32), &[1], &[], 512).unwrap();
        let Step::Kernel(l) = &p.steps[1] else { panic!("no finish") };
        assert!(matches!(l.spec, KernelSpec::ReduceFinish { wide: true, .. }));
        assert_eq!((l.grid, l.block), (1, (REDUCE_BLOCK, 1)));
        // many outputs, few partials each: a thread per output
        let shape = [4096usize, 1 << 14];
        let p = plan_reduce(
            &SUM,
            &raw(&shape, &[1, 0], DType::F32),
            &raw(&shape, &[1 << 14, 1], DType::F32),
            &[0, 1],
            &[],
            64,
        )
        .unwrap();
        if let Some(Step::Kernel(l)) = p.steps.get(1) {
            assert!(matches!(l.spec, KernelSpec::ReduceFinish { wide: false, .. }));
        }
    }

    #[test]
    fn an_empty_extent_still_writes_every_output() {
        let shape = [5usize, 0];
        let p =
            plan_reduce(&SUM, &raw(&shape, &[1, 0], DType::F32), &raw(&shape, &[0, 1], DType::F32), &[0, 1], &[], 10)
                .unwrap();
        let (_, a, _) = first(&p);
        assert_eq!((a.n_out, a.n_red, a.split), (5, 0, 1));
        assert_eq!(p.workspace_bytes, 0);
    }
}
