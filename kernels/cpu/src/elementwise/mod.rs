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
//!
//! Steps 1–4 are here; the walks and the block-by-block runs are in `segment.rs` (where a
//! run of quantized bytes goes to [`MapKernel::bytes`] in one pass instead).

use super::affine::{dequantize_in_place, dequantize_widen, quantize_in_place, quantize_narrow};
use super::convert::{gather_cast, scatter_cast};
use super::copy::stream::{copy_bytes_nt_unfenced, store_fence, NT_THRESHOLD};
use super::map::prefetch;
use super::parallel::{for_each_chunk, for_each_row_chunk, GRAIN};
use super::quantize::quantize_bytes;
use crate::byte_codes::ByteCodes;
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

mod segment;

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
    // (every operand contiguous along the run: the walk is linear, no input is pre-staged)
    let byte_codes = kernel
        .bytes
        .filter(|_| kernel.compute == DType::F32 && kernel.output == DType::F32 && inner.iter().all(|&s| s == 1))
        .and_then(|_| {
            let mut dtypes = [DType::U8; MAX_OPERANDS];
            let mut affines = [None; MAX_OPERANDS];
            for (j, o) in ops.iter().enumerate() {
                (dtypes[j], affines[j]) = (o.dtype, o.affine);
            }
            ByteCodes::of(&dtypes[..ops.len()], &affines[..ops.len()])
        });
    let call = Call { kernel, plan, inner, ops, params, block, tile_rows, bytes: byte_codes };
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
