//! The strided elementwise driver: runs a generated block kernel ([`MapKernel`]) over
//! operands of any strides, broadcast and dtypes.
//!
//! 1. Canonicalise: [`IterPlan`] over (out, inputs...) — size-1 dims dropped, dims sorted by
//!    the output's strides, coalesced where every operand is contiguous across them.
//! 2. Classify each operand's inner run ([`RunKind`]): used in place when it is contiguous
//!    and already in the kernel's dtype; otherwise staged through an L1-sized block buffer
//!    (gathered with a cast for inputs; scattered with a cast for the output), or splatted
//!    once per run when its inner stride is 0. A large contiguous output is written with
//!    non-temporal stores (no read-for-ownership): by the block function itself, vector by
//!    vector from its registers ([`Store::Streaming`]), when it is in the kernel's output
//!    dtype at a 16-byte-aligned address; else through a block buffer.
//! 3. Pick the walk ([`Walk`]): `Linear` visits the flattened elements run by run;
//!    `Tiled` (some input is strided along the inner run, e.g. a transposed operand) visits
//!    tiles of [`TILE_ROWS`] (or [`TILE_ROWS_SMALL`]) rows × [`TILE_COLS`] columns, staging
//!    each strided input a tile at a time by walking down its columns — sequential reads
//!    for a transposed operand — so its cache sets and pages are not revisited per element.
//! 4. Split across rayon above [`GRAIN`] elements; each task walks
//!    its share with stack buffers (no allocation, no zeroing per call).

use super::affine::{dequantize_in_place, dequantize_widen, quantize_in_place, quantize_narrow};
use super::convert::{gather_cast, scatter_cast};
use super::copy::stream::{copy_bytes_nt_unfenced, store_fence, NT_THRESHOLD};
use super::map::prefetch;
use super::parallel::{for_each_chunk, for_each_row_chunk, GRAIN};
use super::quantize::quantize_bytes;
use crate::byte_map::ByteCodes;
use crate::kernel::{MapKernel, Store};
use std::mem::MaybeUninit;
use tensor_core::iter::{IterPlan, PerOperand};
use tensor_core::quant::{Affine, OperandAffines};
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{with_dtype, DType, Element, Error, Result, Scalar};

/// Bytes of one block buffer: 2048 f64 / 4096 f32 elements (four operands stay in L2 and
/// the per-block overhead is amortised; measured +2–14 % at DRAM sizes over 8 KiB).
const BUF_BYTES: usize = 16384;
/// Bytes of one block buffer when the output is streamed to memory (non-temporal stores):
/// shorter blocks interleave reading the inputs, computing and streaming the block out more
/// finely, so the memory stays busy through a compute-bound body (measured faster than 16
/// KiB blocks with `fused_probe`, no better at 2 KiB: `docs/performance-log.md`, “From the
/// code comments”).
const STREAMED_BUF_BYTES: usize = 4096;
/// [`STREAMED_BUF_BYTES`] for a kernel reading two or more inputs from memory (`add`, `mul`;
/// a broadcast scalar does not count):
/// shorter blocks keep both input streams and the output stream in flight together, as a
/// one-pass loop does (measured faster than 4 KiB blocks with `fused_probe`, 768 B no
/// better: `docs/performance-log.md`, “From the code comments”).
const STREAMED_MULTI_BUF_BYTES: usize = 1024;
/// Elements per block when an operand is converted (f16 computed in f32, casts): the
/// conversion passes then stay in L1 (an f16 `add` measured faster than with full-size
/// blocks: `docs/performance-log.md`, “From the code comments”).
const CAST_BLOCK: usize = 512;
/// Rows per tile of the tiled walk when the operands fit in cache.
pub const TILE_ROWS_SMALL: usize = 64;
/// Rows per tile of the tiled walk at DRAM sizes: each visit to a transposed operand's page
/// then reads 1 KiB of f32 instead of 256 B.
pub const TILE_ROWS: usize = 256;
/// Bytes of operands above which the taller tiles are used.
const TALL_TILE_BYTES: usize = 64 << 20;
/// Columns per tile of the tiled walk.
pub const TILE_COLS: usize = 64;
/// Most operands a kernel can have (the inputs, at most `tensor_core::MAX_INPUTS`, and the output).
const MAX_OPERANDS: usize = tensor_core::MAX_INPUTS + 1;

/// How an operand's inner run is accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Stride 1 in the kernel's dtype: the kernel reads/writes memory directly.
    Direct,
    /// Output only: stride 1, written with non-temporal stores (large outputs): by the
    /// block function ([`Store::Streaming`]) when in its output dtype and 16-byte aligned,
    /// else from a block buffer, converted from the kernel's output dtype first when the
    /// dtypes differ.
    Streamed,
    /// Stride 0: one value per run, splatted into a block.
    Splat,
    /// Any other stride or a dtype conversion: staged through a block buffer.
    Staged,
}

/// The order in which a call visits its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Flattened order, run by run.
    Linear,
    /// Bands of rows × column chunks (an input is strided along the inner run).
    Tiled,
}

#[derive(Clone, Copy)]
struct Operand {
    base: *mut u8,
    dtype: DType,
    kind: RunKind,
    /// A quantized operand's arithmetic (its staged block is dequantized after loading, or
    /// quantized before storing).
    affine: Option<Affine>,
}

struct Call<'a> {
    kernel: &'a MapKernel,
    plan: IterPlan,
    inner: PerOperand<isize>,
    ops: PerOperand<Operand>,
    params: &'a [Scalar],
    /// Elements per block (bounded by the widest staged element).
    block: usize,
    /// Rows per tile of the tiled walk.
    tile_rows: usize,
    /// Every operand contiguous along the run and all qint8 or all quint8 per tensor, with
    /// a kernel that maps them in one pass: each run goes to [`MapKernel::bytes`] whole.
    bytes: Option<ByteCodes>,
}

// SAFETY: `Call` holds raw pointers into storages the caller keeps locked for the whole
// `run_map`; tasks write disjoint output elements and only read inputs.
unsafe impl Sync for Call<'_> {}

/// Runs `kernel` with `out[i] = f(inputs[0][i], ...)` for every index of `out.shape`.
///
/// # Safety
/// `out` and every input are in-bounds views of locked storages (out exclusively); every
/// input has `out.shape` (broadcast dims with stride 0); `out` has no internal overlap and
/// does not partially overlap any input (exact aliasing is fine).
pub unsafe fn run_map(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
) -> Result<()> {
    check_operands(out, inputs)?;
    let mut strides: PerOperand<&[isize]> = PerOperand::new();
    strides.push(out.strides);
    strides.extend(inputs.iter().map(|i| i.strides));
    // SAFETY: forwarded (the plan describes the same iteration as the operands).
    unsafe { run_planned(kernel, IterPlan::new(out.shape, &strides), out, inputs, params, None) }
}

/// Every input has the output's shape, and there are at most `MAX_INPUTS` of them.
fn check_operands(out: &RawTensor<'_>, inputs: &[RawTensor<'_>]) -> Result<()> {
    if inputs.iter().any(|i| !tensor_core::shape::same_dims(i.shape, out.shape)) || inputs.len() + 1 > MAX_OPERANDS {
        return Err(Error::invalid(
            "run_map",
            format!("inputs must be 1 to {} tensors broadcast to the output shape", tensor_core::MAX_INPUTS),
        ));
    }
    Ok(())
}

/// [`run_map`] over operands that already lie on one canonical plan (what the core's call
/// path hands a kernel: `PreparedCall`), skipping the canonicalisation.
///
/// # Safety
/// As [`run_map`], and `out`/`inputs` are laid out on a canonical [`IterPlan`] (size-1
/// dims dropped, sorted by the output's memory order, coalesced).
pub unsafe fn run_map_canonical(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { run_canonical_with(kernel, out, inputs, params, None) }
}

/// [`run_map_canonical`] with the operands' quantizers (`CallExtra::Quantized`).
///
/// # Safety
/// As [`run_map_canonical`].
unsafe fn run_canonical_with(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
    quant: Option<&OperandAffines>,
) -> Result<()> {
    check_operands(out, inputs)?;
    if quant.is_some_and(|q| q.iter().any(Option::is_some)) && kernel.compute != DType::F32 {
        return Err(Error::invalid(
            "run_map",
            format!("quantized operands need a kernel computing in f32, this one computes in {}", kernel.compute),
        ));
    }
    // Few contiguous elements already in the kernel's dtypes (a canonical plan of at most
    // one dim with unit strides): one call of the block function, none of the driver's
    // classification, staging or split (the per-call overhead of small ops).
    let n: usize = out.shape.iter().product();
    let unit = |t: &RawTensor<'_>, dtype: DType| t.dtype == dtype && (t.shape.is_empty() || t.strides == [1]);
    if n <= SMALL_DIRECT
        && quant.is_none()
        && unit(out, kernel.output)
        && inputs.iter().all(|i| unit(i, kernel.compute))
    {
        if n == 0 {
            return Ok(());
        }
        // `check_operands`: at most MAX_OPERANDS - 1 inputs.
        let mut ptrs = [std::ptr::null::<u8>(); MAX_OPERANDS];
        for (p, i) in ptrs.iter_mut().zip(inputs) {
            *p = i.ptr as *const u8;
        }
        // SAFETY: every operand is contiguous for `n` elements of the kernel's dtypes (checked
        // above) in locked storages; the output aliases an input exactly or overlaps none
        // (this function's contract): the MapFn contract.
        unsafe { (kernel.func)(out.ptr, &ptrs[..inputs.len()], n, params, Store::Plain) };
        return Ok(());
    }
    let through_table = |o: &RawTensor<'_>, i: &[RawTensor<'_>]| {
        let plan = IterPlan::new(o.shape, &[o.strides, i[0].strides]);
        // SAFETY: the table's 256-element operands are the byte_table module's own, contiguous.
        unsafe { run_planned(kernel, plan, o, i, params, quant) }
    };
    // SAFETY: forwarded (this function's contract is try_run's).
    if let Some(result) = unsafe { super::byte_table::try_run(kernel, out, inputs, quant, through_table) } {
        return result;
    }
    let plan = IterPlan::from_canonical(out.shape, out.strides, inputs.iter().map(|i| i.strides));
    // SAFETY: forwarded.
    unsafe { run_planned(kernel, plan, out, inputs, params, quant) }
}

/// The most elements [`run_map_canonical`] hands to the block function in one call when
/// every operand is contiguous in the kernel's dtypes (a few blocks; far below the
/// parallel grain, so the driver would run them on this thread too).
const SMALL_DIRECT: usize = 2048;

/// The driver after canonicalisation.
///
/// # Safety
/// As [`run_map`]; `plan` is the canonical plan of (out, inputs).
unsafe fn run_planned(
    kernel: &MapKernel,
    plan: IterPlan,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
    quant: Option<&OperandAffines>,
) -> Result<()> {
    let total = plan.numel();
    let affine = |j: usize| quant.and_then(|q| q[j]);
    if total == 0 {
        return Ok(());
    }
    let inner = plan.inner_strides();
    let classify = |stride: isize, dtype: DType, want: DType, quantized: bool| match stride {
        _ if quantized => RunKind::Staged,
        1 if dtype == want => RunKind::Direct,
        0 if dtype == want => RunKind::Splat,
        _ => RunKind::Staged,
    };
    let mut ops = PerOperand::new();
    let large = total * out.dtype.size() >= NT_THRESHOLD;
    let out_kind = match classify(inner[0], out.dtype, kernel.output, affine(0).is_some()) {
        RunKind::Direct if large => RunKind::Streamed,
        // A contiguous output of another dtype (f16 computed in f32) is converted in cache,
        // then streamed: plain stores would pay a read-for-ownership of every line.
        RunKind::Staged if large && inner[0] == 1 => RunKind::Streamed,
        RunKind::Splat => RunKind::Staged,
        k => k,
    };
    ops.push(Operand { base: out.ptr, dtype: out.dtype, kind: out_kind, affine: affine(0) });
    for (j, (i, &s)) in inputs.iter().zip(&inner[1..]).enumerate() {
        let a = affine(j + 1);
        ops.push(Operand {
            base: i.ptr,
            dtype: i.dtype,
            kind: classify(s, i.dtype, kernel.compute, a.is_some()),
            affine: a,
        });
    }
    let converts = ops[0].dtype != kernel.output
        || ops[1..].iter().any(|o| o.dtype != kernel.compute)
        || ops.iter().any(|o| o.affine.is_some());
    let block = if converts {
        CAST_BLOCK
    } else {
        // No conversion: every operand has the compute or output dtype.
        let bytes = match out_kind {
            RunKind::Streamed if ops[1..].iter().filter(|o| o.kind != RunKind::Splat).count() >= 2 => {
                STREAMED_MULTI_BUF_BYTES
            }
            RunKind::Streamed => STREAMED_BUF_BYTES,
            _ => BUF_BYTES,
        };
        bytes / kernel.compute.size().max(kernel.output.size())
    };
    let walk = if plan.ndim() >= 2
        && ops[1..].iter().zip(&inner[1..]).any(|(o, s)| o.kind == RunKind::Staged && s.abs() > 1)
    {
        Walk::Tiled
    } else {
        Walk::Linear
    };
    if walk == Walk::Tiled && total >= RELAYOUT_MIN && tensor_core::shape::is_contiguous(out.shape, out.strides) {
        // SAFETY: forwarded from this function's contract.
        if let Some(result) = unsafe { relayout_then_run(kernel, out, inputs, params, &inner[1..], quant) } {
            return result;
        }
    }
    let streamed = out_kind == RunKind::Streamed;
    let bytes: usize = total * (out.dtype.size() + inputs.iter().map(|i| i.dtype.size()).sum::<usize>());
    let tile_rows = if bytes > TALL_TILE_BYTES { TILE_ROWS } else { TILE_ROWS_SMALL };
    let bytes = kernel
        .bytes
        .filter(|_| kernel.compute == DType::F32 && kernel.output == DType::F32 && inner.iter().all(|&s| s == 1))
        .and_then(|_| {
            let dtypes: Vec<DType> = ops.iter().map(|o| o.dtype).collect();
            let affines: Vec<Option<Affine>> = ops.iter().map(|o| o.affine).collect();
            ByteCodes::of(&dtypes, &affines)
        });
    let call = Call { kernel, plan, inner, ops, params, block, tile_rows, bytes };
    match walk {
        Walk::Linear => for_each_chunk(total, GRAIN, |range| {
            // SAFETY: forwarded from run_map's contract; chunks are disjoint.
            unsafe { call.linear(range) };
            if streamed {
                store_fence();
            }
        }),
        Walk::Tiled => {
            let rows = call.plan.outer_rows();
            let bands = rows.div_ceil(call.tile_rows);
            for_each_row_chunk(bands, call.tile_rows * call.plan.inner_len(), GRAIN, |range| {
                // SAFETY: as above; bands are disjoint row ranges.
                unsafe { call.tiled(range) };
                if streamed {
                    store_fence();
                }
            });
        }
    }
    Ok(())
}

/// Elements from which an input that jumps a cache line per element along the run (a
/// transposed operand) is first copied into the output's layout by the tiled transpose
/// engine (≈ 0.8 of memcpy bandwidth) so the op itself streams: two fast passes beat one
/// pass whose reads revisit every page per tile row.
const RELAYOUT_MIN: usize = 256 * 1024;

/// Copies each cache-line-jumping input of a large call into a row-major temporary with the
/// copy engine, then runs the op with those temporaries (now contiguous). `None` when no
/// input qualifies or the temporary cannot be allocated (the caller then uses the tiled
/// walk).
///
/// # Safety
/// As [`run_map`], with `out` row-major contiguous.
unsafe fn relayout_then_run(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
    inner: &[isize],
    quant: Option<&OperandAffines>,
) -> Option<Result<()>> {
    let numel: usize = out.shape.iter().product();
    let dense = tensor_core::shape::contiguous_strides(out.shape);
    let mut temps = Vec::new();
    let mut staged: Vec<RawTensor<'_>> = inputs.to_vec();
    for (k, input) in inputs.iter().enumerate() {
        if inner[k].unsigned_abs() * input.dtype.size() < 64 {
            continue;
        }
        let bytes = numel * input.dtype.size();
        // Overwritten whole by the copy below: no zeroing pass (a recycled block as it is).
        let block = tensor_core::allocator_for(tensor_core::Device::Cpu)
            .ok()?
            .allocate_uninit_on(tensor_core::Device::Cpu, bytes)
            .ok()?;
        let dst = RawTensor {
            ptr: block.as_ptr(),
            dtype: input.dtype,
            shape: out.shape,
            strides: &dense,
            device: out.device,
        };
        // SAFETY: `block` holds `numel` elements of the input's dtype, row-major, owned here;
        // the input is an in-bounds view of a locked storage (caller's contract).
        if let Err(e) = unsafe { super::copy::copy_strided(&dst, input) } {
            return Some(Err(e));
        }
        staged[k] = dst;
        temps.push(block);
    }
    if temps.is_empty() {
        return None;
    }
    // SAFETY: the temporaries are row-major views of `out.shape`, private to this call and
    // alive until it returns; the other operands are as the caller guaranteed.
    let result = unsafe {
        check_operands(out, &staged).and_then(|()| {
            let mut strides: PerOperand<&[isize]> = PerOperand::new();
            strides.push(out.strides);
            strides.extend(staged.iter().map(|i| i.strides));
            run_planned(kernel, IterPlan::new(out.shape, &strides), out, &staged, params, quant)
        })
    };
    drop(temps);
    Some(result)
}

/// Stages a tile: `dst[i * TILE_COLS + c] = src[starts[i] + c * col_stride]` for every row
/// `i` and column `c < n`, converting to `ddt`. Walks down each column so an input that is
/// contiguous along rows (a transposed operand) is read sequentially.
///
/// # Safety
/// Every addressed source element is in bounds; `dst` holds `starts.len() * TILE_COLS`
/// elements of `ddt`.
unsafe fn gather_tile(
    dst: *mut u8,
    ddt: DType,
    src: *mut u8,
    sdt: DType,
    starts: &[isize],
    col_stride: isize,
    n: usize,
) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for c in 0..n {
            let col = c as isize * col_stride;
            for (i, &st) in starts.iter().enumerate() {
                // SAFETY: caller's contract.
                unsafe { d.add(i * TILE_COLS + c).write(s.offset(st + col).read_unaligned().cast::<D>()) };
            }
        }
    }))
}

/// One 64-byte-aligned block buffer, left uninitialised until written.
#[repr(C, align(64))]
struct Buf([MaybeUninit<u8>; BUF_BYTES]);

/// Block buffers of one task: one per operand, and one more for a streamed output's
/// conversion to its dtype.
type Bufs = [Buf; MAX_OPERANDS + 1];

/// Index in [`Bufs`] of the streamed output's conversion buffer.
const CAST_BUF: usize = MAX_OPERANDS;

/// Uninitialised block buffers.
const fn new_bufs() -> Bufs {
    [const { Buf([MaybeUninit::uninit(); BUF_BYTES]) }; MAX_OPERANDS + 1]
}

impl Call<'_> {
    /// Visits flattened elements `range` run by run, block by block.
    ///
    /// # Safety
    /// As [`run_map`]; `range` lies within the plan and no other task touches it.
    unsafe fn linear(&self, range: std::ops::Range<usize>) {
        let inner_len = self.plan.inner_len();
        let mut bufs = new_bufs();
        let mut row_base = [0isize; MAX_OPERANDS];
        let mut i = range.start;
        while i < range.end {
            let (row, col) = (i / inner_len, i % inner_len);
            self.plan.row_offsets(row, &mut row_base[..self.ops.len()]);
            let n = (inner_len - col).min(range.end - i);
            // SAFETY: (row, col..col+n) lies in this task's range.
            unsafe { self.run_segment(&mut bufs, &row_base, col, n) };
            i += n;
        }
    }

    /// Visits bands `bands` (of TILE_ROWS rows each) column chunk by column chunk.
    ///
    /// # Safety
    /// As [`run_map`]; the bands' rows belong to this task only.
    unsafe fn tiled(&self, bands: std::ops::Range<usize>) {
        let (inner_len, rows) = (self.plan.inner_len(), self.plan.outer_rows());
        let nops = self.ops.len();
        let mut bufs = new_bufs();
        // Inputs strided along the run but contiguous along rows (a transposed operand) are
        // staged a whole tile at a time: read down each column (sequential in memory),
        // written across the tile, so neither the strided reads' cache sets nor their pages
        // are revisited element by element.
        let tile_inputs: Vec<usize> =
            (1..nops).filter(|&j| self.ops[j].kind == RunKind::Staged && self.inner[j].abs() > 1).collect();
        let cs = self.kernel.compute.size();
        let mut tiles: Vec<Vec<MaybeUninit<u8>>> =
            tile_inputs.iter().map(|_| vec![MaybeUninit::uninit(); self.tile_rows * TILE_COLS * cs]).collect();
        let mut offs = vec![[0isize; MAX_OPERANDS]; self.tile_rows];
        let mut starts = vec![0isize; self.tile_rows];
        for band in bands {
            let (r0, r1) = (band * self.tile_rows, ((band + 1) * self.tile_rows).min(rows));
            for (i, row) in (r0..r1).enumerate() {
                self.plan.row_offsets(row, &mut offs[i][..nops]);
            }
            for c0 in (0..inner_len).step_by(TILE_COLS) {
                let n = TILE_COLS.min(inner_len - c0);
                for (t, &j) in tile_inputs.iter().enumerate() {
                    let op = self.ops[j];
                    let tile = tiles[t].as_mut_ptr() as *mut u8;
                    for (st, off) in starts.iter_mut().zip(&offs[..r1 - r0]) {
                        *st = off[j] + c0 as isize * self.inner[j];
                    }
                    // SAFETY: every (row, column) of the tile is an element of this task's
                    // rows of the input, in bounds; the tile buffer holds TILE_ROWS x
                    // TILE_COLS compute elements.
                    unsafe {
                        gather_tile(tile, self.kernel.compute, op.base, op.dtype, &starts[..r1 - r0], self.inner[j], n);
                        if let Some(a) = &op.affine {
                            // Quantized rows compute in f32 (checked): each row's n values.
                            for i in 0..r1 - r0 {
                                dequantize_in_place((tile as *mut f32).add(i * TILE_COLS), n, a);
                            }
                        }
                    };
                }
                for (i, off) in offs[..r1 - r0].iter().enumerate() {
                    let mut pre = [None; MAX_OPERANDS];
                    for (t, &j) in tile_inputs.iter().enumerate() {
                        pre[j] = Some(tiles[t].as_ptr().wrapping_add(i * TILE_COLS * cs) as *const u8);
                    }
                    // SAFETY: row r0+i is in this task's band; c0..c0+n within the row; the
                    // pre-staged rows hold n compute elements each.
                    unsafe { self.run_segment_with(&mut bufs, off, c0, n, &pre) };
                }
            }
        }
    }

    /// Computes elements `col..col+n` of the run starting at `row_base`, block by block.
    ///
    /// # Safety
    /// The run's elements belong to the calling task.
    unsafe fn run_segment(&self, bufs: &mut Bufs, row_base: &[isize], col: usize, n: usize) {
        // SAFETY: forwarded.
        unsafe { self.run_segment_with(bufs, row_base, col, n, &[None; MAX_OPERANDS]) }
    }

    /// [`Self::run_segment`] where `pre[j]`, when set, is input `j`'s run already staged
    /// (contiguous, compute dtype, `n` elements, `n` ≤ one block).
    ///
    /// # Safety
    /// As [`Self::run_segment`].
    unsafe fn run_segment_with(
        &self,
        bufs: &mut Bufs,
        row_base: &[isize],
        col: usize,
        n: usize,
        pre: &[Option<*const u8>; MAX_OPERANDS],
    ) {
        let k = self.kernel;
        let streamed = self.ops[0].kind == RunKind::Streamed;
        if let (Some(codes), Some(f)) = (&self.bytes, k.bytes)
            && pre.iter().all(Option::is_none)
        {
            // The whole run in one pass (every operand a byte an element, stride 1).
            let c = col as isize;
            let at = |j: usize| self.ops[j].base.wrapping_offset(row_base[j] + c);
            let mut ins = [std::ptr::null::<u8>(); MAX_OPERANDS - 1];
            for (j, p) in ins.iter_mut().enumerate().take(self.ops.len() - 1) {
                *p = at(j + 1);
            }
            let store = if streamed { Store::Streaming } else { Store::Plain };
            // SAFETY: the run's n elements of each operand are this task's, contiguous one-
            // byte codes of `codes`' family (checked when planned); streaming stores are
            // fenced once per task (run_planned).
            if unsafe { f(at(0), &ins[..self.ops.len() - 1], n, self.params, codes, store) } {
                return;
            }
        }
        let mut in_ptrs = [std::ptr::null::<u8>(); MAX_OPERANDS - 1];
        let nin = self.ops.len() - 1;
        let mut done = 0;
        while done < n {
            let m = (n - done).min(self.block);
            let c = (col + done) as isize;
            for (j, op) in self.ops.iter().enumerate().skip(1) {
                let src = op.base.wrapping_offset((row_base[j] + c * self.inner[j]) * op.dtype.size() as isize);
                let buf = bufs[j].0.as_mut_ptr() as *mut u8;
                if let Some(p) = pre[j] {
                    in_ptrs[j - 1] = p.wrapping_add(done * k.compute.size());
                    continue;
                }
                if streamed && op.kind == RunKind::Staged && self.inner[j] == 1 {
                    prefetch_bytes(src.wrapping_add(m * op.dtype.size()), m * op.dtype.size());
                }
                in_ptrs[j - 1] = match op.kind {
                    RunKind::Direct | RunKind::Streamed => src,
                    RunKind::Splat => {
                        // SAFETY: buf holds BUF_BYTES >= m * size; src is an in-bounds element.
                        unsafe { splat_bytes(buf, src, op.dtype.size(), m) };
                        buf
                    }
                    RunKind::Staged => {
                        // SAFETY: the m elements from src with this stride are elements of
                        // this run (in bounds); buf holds m compute elements.
                        unsafe {
                            // Quantized rows compute in f32 (checked): m values.
                            let widened = match &op.affine {
                                Some(a) if self.inner[j] == 1 => dequantize_widen(buf as *mut f32, src, op.dtype, m, a),
                                _ => false,
                            };
                            if !widened {
                                gather_cast(buf, k.compute, src, op.dtype, self.inner[j], m);
                                if let Some(a) = &op.affine {
                                    dequantize_in_place(buf as *mut f32, m, a);
                                }
                            }
                        }
                        buf
                    }
                };
            }
            let out = self.ops[0];
            let dst = out.base.wrapping_offset((row_base[0] + c * self.inner[0]) * out.dtype.size() as isize);
            let ins = &in_ptrs[..nin];
            match out.kind {
                // SAFETY: dst..dst+m elements are this task's; inputs are valid for m.
                RunKind::Direct => unsafe { (k.func)(dst, ins, m, self.params, Store::Plain) },
                // The kernel's own dtype at a 16-byte-aligned address: the block function
                // streams each vector straight from its registers. Fenced once per task
                // (run_map), not per block.
                // SAFETY: dst..dst+m elements are this task's; inputs are valid for m.
                RunKind::Streamed
                    if out.dtype == k.output && out.affine.is_none() && (dst as usize).is_multiple_of(16) =>
                unsafe { (k.func)(dst, ins, m, self.params, Store::Streaming) },
                RunKind::Streamed => {
                    let buf = bufs[0].0.as_mut_ptr() as *mut u8;
                    // SAFETY: buf holds m output elements (block sized for the widest
                    // dtype); dst is this task's contiguous run of m elements, not
                    // overlapping the stack buffers. The streaming stores are fenced once
                    // per task (run_map), not per block.
                    unsafe {
                        (k.func)(buf, ins, m, self.params, Store::Plain);
                        if let (Some(a), DType::I8 | DType::U8) = (&out.affine, out.dtype) {
                            // f32 results (checked) quantized and streamed from registers.
                            let signed = out.dtype == DType::I8;
                            quantize_bytes(dst, signed, buf as *const f32, m, a, true);
                            done += m;
                            continue;
                        }
                        let staged = if out.dtype == k.output && out.affine.is_none() {
                            buf
                        } else {
                            let cast = bufs[CAST_BUF].0.as_mut_ptr() as *mut u8;
                            match &out.affine {
                                // f32 results (checked) to the integers, in one pass.
                                Some(a) => quantize_narrow(cast, out.dtype, buf as *const f32, m, a),
                                None => scatter_cast(cast, out.dtype, 1, buf, k.output, m),
                            }
                            cast
                        };
                        copy_bytes_nt_unfenced(dst, staged, m * out.dtype.size());
                    }
                }
                _ => {
                    let buf = bufs[0].0.as_mut_ptr() as *mut u8;
                    // SAFETY: buf holds m output elements; then scattered into this run.
                    unsafe {
                        (k.func)(buf, ins, m, self.params, Store::Plain);
                        match &out.affine {
                            // f32 results (checked) to the integers, in one pass.
                            Some(a) if self.inner[0] == 1 => quantize_narrow(dst, out.dtype, buf as *const f32, m, a),
                            Some(a) => {
                                quantize_in_place(buf as *mut f32, m, a);
                                scatter_cast(dst, out.dtype, self.inner[0], buf, k.output, m);
                            }
                            None => scatter_cast(dst, out.dtype, self.inner[0], buf, k.output, m),
                        }
                    }
                }
            }
            done += m;
        }
    }
}

/// Prefetches the `bytes` bytes from `p`, one cache line at a time (a hint: any address is
/// allowed). Used for converted inputs of DRAM-sized calls, whose conversion passes do not
/// overlap the next block's reads otherwise (the same prefetch slowed plain f32 inputs,
/// which the block loop reads and prefetches itself; measurements:
/// `docs/performance-log.md`, “From the code comments”).
#[inline]
fn prefetch_bytes(p: *const u8, bytes: usize) {
    for off in (0..bytes).step_by(64) {
        prefetch(p.wrapping_add(off));
    }
}

/// Writes `n` copies of the `size`-byte element at `src` into `dst`.
///
/// # Safety
/// `src` valid for `size` bytes, `dst` for `n * size`, not overlapping.
unsafe fn splat_bytes(dst: *mut u8, src: *const u8, size: usize, n: usize) {
    macro_rules! splat {
        ($t:ty) => {{
            // SAFETY: caller's contract; unaligned read of one element.
            let v = unsafe { (src as *const $t).read_unaligned() };
            for j in 0..n {
                // SAFETY: j < n, dst is a 64-byte-aligned buffer of n elements.
                unsafe { (dst as *mut $t).add(j).write(v) };
            }
        }};
    }
    match size {
        1 => splat!(u8),
        2 => splat!(u16),
        4 => splat!(u32),
        _ => splat!(u64),
    }
}

impl KernelImpl for MapKernel {
    fn kind(&self) -> &'static str {
        "cpu-map"
    }
    fn takes_quantized(&self) -> bool {
        true
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let [out] = call.outputs else {
            return Err(Error::invalid(call.op.name, "a CPU map kernel writes exactly one output"));
        };
        // SAFETY: the PreparedCall contract is run_map_canonical's (operands on one
        // canonical plan).
        unsafe { run_canonical_with(self, out, call.inputs, call.params, call.quantized()) }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
