//! Launch planning: pure host logic that turns an elementwise op, copy or fill over strided
//! operands into the kernel launches (and device memcpys) that compute it. No driver call
//! happens here, so the CPU shim runs exactly the plans the GPU runs.
//!
//! 1. Canonicalise with [`IterPlan`] (size-1 dims dropped, dims in the output's memory
//!    order, coalesced where every operand is contiguous across them).
//! 2. Choose the layout class: contiguous when one dense run remains (inputs may be one
//!    broadcast element); strided otherwise, with 32-bit index math when [`fits_i32`]
//!    holds and 64-bit math when not (≥ 2^31 elements or offsets are never truncated).
//! 3. Plans deeper than [`MAX_DIMS`] are split on the host: one launch per index of the
//!    outer dims, with the operand pointers advanced to that sub-block.
//! 4. Same-dtype copies: one dense run is a memcpy; a copy whose innermost dims differ
//!    (the source is dense along another dim) uses the 32x32 tiled transpose, batch dims
//!    beyond one looped on the host; anything else the strided copy kernel. Casts use the
//!    cast kernels (converting on load/store).

use crate::kernel::CudaMapKernel;
use tensor_core::iter::IterPlan;
use tensor_core::registry::RawTensor;
use tensor_core::shape::{Dims, Strides};
use tensor_core::{with_dtype, DType, Element, Error, Result, Scalar};

use super::args::{
    fits_i32, AffineArgs, ContigArgs, KernelParam, StridedArgs32, StridedArgs64, TransposeArgs, MAX_DIMS, MAX_OPERANDS,
};
use super::codegen::{
    packed_elements, packed_fits, DeviceFn, Index, KernelSpec, MapLayout, BLOCK, STRIDED_UNROLL, TILE, TILE_ROWS,
};
/// Smallest rows and columns a copy needs to go through the tiled transpose.
pub const TRANSPOSE_MIN: usize = 16;

fn addr(t: &RawTensor<'_>) -> u64 {
    t.ptr as usize as u64
}

fn blocks(n: usize, per_block: usize, max_blocks: u32) -> u32 {
    n.div_ceil(per_block).clamp(1, max_blocks.max(1) as usize) as u32
}

/// True when every operand is one dense run (inputs may be stride-0 broadcast elements).
fn is_contiguous(plan: &IterPlan) -> bool {
    match plan.ndim() {
        0 => true,
        1 => plan.strides[0][0] == 1 && plan.strides[1..].iter().all(|s| s[0] == 0 || s[0] == 1),
        _ => false,
    }
}

/// What an elementwise launch needs besides its plan.
struct Elementwise<'a> {
    /// The kernel for a layout class.
    spec: &'a dyn Fn(MapLayout) -> KernelSpec<'static>,
    /// Whether the contiguous and tiled classes exist for it.
    contiguous: bool,
    /// The op's params, exactly as the caller gave them.
    params: &'a [KernelParam],
    bits: u64,
    max_blocks: u32,
    /// Quantized operands' arithmetic (zero for plain ones), output first.
    q: [AffineArgs; MAX_OPERANDS],
}

impl Elementwise<'_> {
    /// Appends the launches computing `plan` with operands at `ptrs` (element sizes
    /// `sizes`, output first).
    fn plan(&self, plan: &IterPlan, ptrs: &[u64], sizes: &[usize], steps: &mut Vec<Step>) -> Result<()> {
        let n = plan.numel();
        if n == 0 {
            return Ok(());
        }
        if self.contiguous && is_contiguous(plan) {
            let mask = if plan.ndim() == 1 {
                plan.strides[1..].iter().enumerate().filter(|(_, s)| s[0] == 0).fold(0u32, |m, (i, _)| m | 1 << i)
            } else {
                0
            };
            let mut args = ContigArgs::new(ptrs, n as u64, mask, self.params, self.bits)?;
            args.q = self.q;
            let grid = contiguous_grid(n, sizes);
            steps.push(Step::Kernel(Launch {
                spec: (self.spec)(MapLayout::Contiguous),
                grid,
                block: (BLOCK, 1),
                args: Args::Contig(args),
            }));
            return Ok(());
        }
        if self.contiguous
            && let Some(row_dim) = tiled_row_dim(plan)
        {
            self.tiled(plan, row_dim, ptrs, sizes, steps)?;
            return Ok(());
        }
        if plan.ndim() <= MAX_DIMS {
            return self.strided(plan, ptrs, steps);
        }
        // Too deep for one argument block: one launch per index of the outer dims.
        let outer = plan.ndim() - MAX_DIMS;
        let inner = IterPlan {
            shape: Dims::from_slice(&plan.shape[outer..]),
            strides: plan.strides.iter().map(|s| Strides::from_slice(&s[outer..])).collect(),
        };
        let count: usize = plan.shape[..outer].iter().product();
        let mut sub = vec![0u64; ptrs.len()];
        for idx in 0..count {
            sub.copy_from_slice(ptrs);
            offset_to(plan, 0..outer, idx, sizes, &mut sub);
            self.strided(&inner, &sub, steps)?;
        }
        Ok(())
    }

    /// Tiled launches of `plan` ([`MapLayout::Tiled`]): rows along `row_dim`, columns along
    /// the last dim, the innermost other dim as the kernel's batch, further dims looped
    /// here (as [`transpose`] does).
    fn tiled(
        &self,
        plan: &IterPlan,
        row_dim: usize,
        ptrs: &[u64],
        sizes: &[usize],
        steps: &mut Vec<Step>,
    ) -> Result<()> {
        let col_dim = plan.ndim() - 1;
        let (batch_dim, host_dims) = tile_batch_dims(plan.ndim(), row_dim);
        // outermost first: the argument block lists them innermost first (columns, rows, batch)
        let dims: Vec<usize> = [batch_dim, Some(row_dim), Some(col_dim)].into_iter().flatten().collect();
        let shape: Vec<usize> = dims.iter().map(|&d| plan.shape[d]).collect();
        let sub = IterPlan {
            shape: Dims::from_slice(&shape),
            strides: plan
                .strides
                .iter()
                .map(|s| Strides::from_slice(&dims.iter().map(|&d| s[d]).collect::<Vec<isize>>()))
                .collect(),
        };
        let mask = staged_inputs(plan, row_dim);
        let (rows, cols) = (plan.shape[row_dim], plan.shape[col_dim]);
        let batch = batch_dim.map_or(1, |b| plan.shape[b]);
        let tiles = batch * rows.div_ceil(TILE as usize) * cols.div_ceil(TILE as usize);
        let count: usize = host_dims.iter().map(|&d| plan.shape[d]).product();
        let mut p = ptrs.to_vec();
        for idx in 0..count {
            p.copy_from_slice(ptrs);
            offset_to(plan, host_dims.iter().copied(), idx, sizes, &mut p);
            let mut args = StridedArgs64::new(&sub, &p, self.params, u64::from(mask))?;
            args.q = self.q;
            // the kernel reads a 3-dim block: a batch of 1 when there is no batch dim
            if args.ndim < 3 {
                for d in args.ndim as usize..3 {
                    args.size[d] = 1;
                }
                args.ndim = 3;
            }
            steps.push(Step::Kernel(Launch {
                spec: (self.spec)(MapLayout::Tiled),
                // capped, tiles grid-strided: measured faster than a tile a block
                grid: tiles.clamp(1, self.max_blocks.max(1) as usize) as u32,
                block: (TILE, TILE_ROWS),
                args: Args::Strided64(args),
            }));
        }
        Ok(())
    }

    fn strided(&self, plan: &IterPlan, ptrs: &[u64], steps: &mut Vec<Step>) -> Result<()> {
        let n = plan.numel();
        let (layout, args) = if fits_i32(plan) {
            let mut a = StridedArgs32::new(plan, ptrs, self.params, self.bits)?;
            a.q = self.q;
            (MapLayout::Strided(Index::I32), Args::Strided32(a))
        } else {
            let mut a = StridedArgs64::new(plan, ptrs, self.params, self.bits)?;
            a.q = self.q;
            (MapLayout::Strided(Index::I64), Args::Strided64(a))
        };
        // each thread takes STRIDED_UNROLL elements a round
        let grid = blocks(n, (BLOCK * STRIDED_UNROLL) as usize, self.max_blocks);
        steps.push(Step::Kernel(Launch { spec: (self.spec)(layout), grid, block: (BLOCK, 1), args }));
        Ok(())
    }
}

/// Most blocks of a one-pass launch (the grid's x limit).
const MAX_GRID: usize = i32::MAX as usize;

/// Blocks of a contiguous launch over `n` elements of operands of `sizes` bytes: one pass,
/// each thread [`super::codegen::contig_unroll`] vectors (blocks start in order, so the
/// resident ones sweep the array front to back, as a copy does; a capped grid whose threads
/// loop would have its resident blocks at addresses spread over the whole array).
///
/// (Fewer vectors a thread and more blocks for arrays of a few waves — one a thread at
/// 16 MiB — measured 3-12 % slower on an H200, 2026-11-28. The grid this replaced also
/// launched blocks beyond the array's last vector for small arrays, which found no work.)
fn contiguous_grid(n: usize, sizes: &[usize]) -> u32 {
    let widest = sizes.iter().copied().max().unwrap_or(1).clamp(1, 16);
    let nvec = n.div_ceil(16 / widest);
    let per_thread = super::codegen::contig_unroll(16 / widest) as usize;
    nvec.div_ceil(BLOCK as usize * per_thread).clamp(1, MAX_GRID) as u32
}

/// The dim along which some input is dense while the output is dense along the last dim
/// and that input is not: such maps go through the tiled kernel (as copies go through the
/// tiled transpose). Both extents must be at least [`TRANSPOSE_MIN`].
fn tiled_row_dim(plan: &IterPlan) -> Option<usize> {
    let nd = plan.ndim();
    if nd < 2 || plan.strides[0][nd - 1] != 1 || plan.shape[nd - 1] < TRANSPOSE_MIN {
        return None;
    }
    plan.strides[1..]
        .iter()
        .filter(|s| s[nd - 1].unsigned_abs() > 1)
        .find_map(|s| (0..nd - 1).rev().find(|&j| s[j].unsigned_abs() == 1 && plan.shape[j] >= TRANSPOSE_MIN))
}

/// The inputs (bit i: input i) a tiled launch with rows along `row_dim` stages through
/// shared memory: those dense along the rows and not along the columns.
fn staged_inputs(plan: &IterPlan, row_dim: usize) -> u32 {
    let nd = plan.ndim();
    plan.strides[1..]
        .iter()
        .enumerate()
        .filter(|(_, s)| s[row_dim].unsigned_abs() == 1 && s[nd - 1].unsigned_abs() > 1)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The dims of a tiled launch besides rows (`row_dim`) and columns (the last dim): the
/// innermost one is the kernel's batch dim, the rest are looped on the host.
fn tile_batch_dims(nd: usize, row_dim: usize) -> (Option<usize>, Vec<usize>) {
    let others: Vec<usize> = (0..nd).filter(|&d| d != row_dim && d != nd - 1).collect();
    match others.split_last() {
        Some((&b, rest)) => (Some(b), rest.to_vec()),
        None => (None, Vec::new()),
    }
}

/// Moves each operand's address in `ptrs` (element sizes `sizes`) to host-loop index `idx`
/// over `dims` of `plan` (the last dim fastest).
fn offset_to(
    plan: &IterPlan,
    dims: impl DoubleEndedIterator<Item = usize>,
    mut idx: usize,
    sizes: &[usize],
    ptrs: &mut [u64],
) {
    for d in dims.rev() {
        let i = (idx % plan.shape[d]) as i64;
        idx /= plan.shape[d];
        for (op, p) in ptrs.iter_mut().enumerate() {
            *p = p.wrapping_add_signed(i * plan.strides[op][d] as i64 * sizes[op] as i64);
        }
    }
}

fn check_shapes(what: &str, out: &RawTensor<'_>, inputs: &[RawTensor<'_>]) -> Result<()> {
    if let Some(i) = inputs.iter().find(|i| i.shape != out.shape || i.strides.len() != i.shape.len()) {
        return Err(Error::invalid(
            "cuda",
            format!("{what}: operand of shape {:?} does not match the output shape {:?}", i.shape, out.shape),
        ));
    }
    if out.strides.len() != out.shape.len() {
        return Err(Error::invalid("cuda", format!("{what}: output strides do not match its shape")));
    }
    Ok(())
}

fn canonical(out: &RawTensor<'_>, inputs: &[RawTensor<'_>]) -> IterPlan {
    let mut strides: Vec<&[isize]> = vec![out.strides];
    strides.extend(inputs.iter().map(|i| i.strides));
    IterPlan::new(out.shape, &strides)
}

/// The launches computing `out = kernel(inputs..., params...)`; inputs are already
/// broadcast to the output's shape and stored as any dtype (converted on load to the
/// kernel's compute dtype; the result converted on store to the output's dtype).
pub fn plan_map(
    kernel: &CudaMapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    params: &[Scalar],
    quant: Option<&tensor_core::quant::OperandAffines>,
    max_blocks: u32,
) -> Result<Vec<Step>> {
    if inputs.is_empty() || inputs.len() > tensor_core::MAX_INPUTS {
        return Err(Error::Cuda(format!(
            "{}: CUDA kernels take 1..={} inputs, got {}",
            kernel.function,
            tensor_core::MAX_INPUTS,
            inputs.len()
        )));
    }
    check_shapes(kernel.function, out, inputs)?;
    let func = DeviceFn::from_kernel(kernel, params.len());
    let in_dtypes: Vec<DType> = inputs.iter().map(|i| i.dtype).collect();
    let out_dtype = out.dtype;
    // Quantized operands: bit k of the mask and their arithmetic in `a.q[k]` (output first).
    let mut q = [AffineArgs::default(); MAX_OPERANDS];
    let mut mask = 0u8;
    for (k, a) in quant.into_iter().flatten().enumerate().take(inputs.len() + 1) {
        if let Some(a) = a {
            q[k] = AffineArgs::of(a);
            mask |= 1 << k;
        }
    }
    let spec = move |layout| KernelSpec::Map { func, inputs: in_dtypes.clone(), out: out_dtype, layout, quant: mask };
    // Each param exactly (kind + 64 bits); the device function's declared type decides the
    // conversion, as `Scalar::to::<declared>()` does on the CPU.
    let params: Vec<KernelParam> = params.iter().map(|&p| KernelParam::from(p)).collect();
    let ew = Elementwise { spec: &spec, contiguous: true, params: &params, bits: 0, max_blocks, q };
    let ptrs: Vec<u64> = std::iter::once(out).chain(inputs).map(addr).collect();
    let sizes: Vec<usize> = std::iter::once(out).chain(inputs).map(|t| t.dtype.size()).collect();
    let mut steps = Vec::new();
    ew.plan(&canonical(out, inputs), &ptrs, &sizes, &mut steps)?;
    Ok(steps)
}

/// The launches of a fused chain's kernel (`super::fused`): `out = func(inputs...)`, every
/// input passed in its storage dtype.
pub fn plan_fused(
    func: DeviceFn<'static>,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    max_blocks: u32,
) -> Result<Vec<Step>> {
    if inputs.is_empty() || inputs.len() > tensor_core::MAX_INPUTS {
        return Err(Error::Cuda(format!(
            "a fused CUDA chain takes 1..={} leaf tensors, got {}",
            tensor_core::MAX_INPUTS,
            inputs.len()
        )));
    }
    check_shapes(func.name, out, inputs)?;
    let in_dtypes: Vec<DType> = inputs.iter().map(|i| i.dtype).collect();
    let out_dtype = out.dtype;
    let spec = move |layout| KernelSpec::Fused { func, inputs: in_dtypes.clone(), out: out_dtype, layout };
    let ew = Elementwise { spec: &spec, contiguous: true, params: &[], bits: 0, max_blocks, q: Default::default() };
    let ptrs: Vec<u64> = std::iter::once(out).chain(inputs).map(addr).collect();
    let sizes: Vec<usize> = std::iter::once(out).chain(inputs).map(|t| t.dtype.size()).collect();
    let mut steps = Vec::new();
    ew.plan(&canonical(out, inputs), &ptrs, &sizes, &mut steps)?;
    Ok(steps)
}

/// The launches computing `dst = src as dst.dtype` (shapes equal; broadcast sources have
/// stride 0).
pub fn plan_copy(dst: &RawTensor<'_>, src: &RawTensor<'_>, max_blocks: u32) -> Result<Vec<Step>> {
    check_shapes("copy", dst, std::slice::from_ref(src))?;
    let plan = canonical(dst, std::slice::from_ref(src));
    let n = plan.numel();
    let mut steps = Vec::new();
    if n == 0 {
        return Ok(steps);
    }
    let ptrs = [addr(dst), addr(src)];
    let sizes = [dst.dtype.size(), src.dtype.size()];
    if dst.dtype == src.dtype {
        let bytes = dst.dtype.size();
        let dense = plan.ndim() == 0 || (plan.ndim() == 1 && plan.strides[0][0] == 1 && plan.strides[1][0] == 1);
        if dense {
            steps.push(Step::Memcpy { dst: ptrs[0], src: ptrs[1], bytes: n * bytes });
            return Ok(steps);
        }
        if let Some(row_dim) = transpose_row_dim(&plan) {
            transpose(&plan, row_dim, ptrs, bytes, max_blocks, &mut steps);
            return Ok(steps);
        }
        let spec = move |layout| KernelSpec::Copy {
            bytes,
            index: match layout {
                MapLayout::Strided(i) => i,
                MapLayout::Contiguous | MapLayout::Tiled => Index::I64,
            },
        };
        let ew =
            Elementwise { spec: &spec, contiguous: false, params: &[], bits: 0, max_blocks, q: Default::default() };
        ew.plan(&plan, &ptrs, &sizes, &mut steps)?;
        return Ok(steps);
    }
    let (s, d) = (src.dtype, dst.dtype);
    let spec = move |layout| KernelSpec::Cast { src: s, dst: d, layout };
    let ew = Elementwise { spec: &spec, contiguous: true, params: &[], bits: 0, max_blocks, q: Default::default() };
    ew.plan(&plan, &ptrs, &sizes, &mut steps)?;
    Ok(steps)
}

/// The launches writing `value` (cast to `dst.dtype` with `as` rules) into every element.
pub fn plan_fill(dst: &RawTensor<'_>, value: Scalar, max_blocks: u32) -> Result<Vec<Step>> {
    check_shapes("fill", dst, &[])?;
    let bits = fill_bits(dst.dtype, value);
    let bytes = dst.dtype.size();
    let spec = move |layout| KernelSpec::Fill { bytes, layout };
    let ew = Elementwise { spec: &spec, contiguous: true, params: &[], bits, max_blocks, q: Default::default() };
    let mut steps = Vec::new();
    ew.plan(&canonical(dst, &[]), &[addr(dst)], &[bytes], &mut steps)?;
    Ok(steps)
}

/// The little-endian bits of `value` as `dtype`, zero-extended to 64 bits.
///
/// ```
/// use tensor_core::{DType, Scalar};
/// use tensor_kernels_cuda::plan::fill_bits;
/// assert_eq!(fill_bits(DType::I16, Scalar::Int(-1)), 0xffff);
/// assert_eq!(fill_bits(DType::F32, Scalar::Float(1.0)), 0x3f80_0000);
/// ```
pub fn fill_bits(dtype: DType, value: Scalar) -> u64 {
    with_dtype!(dtype, T => {
        let v: T = T::from_scalar(value);
        let mut b = [0u8; 8];
        let size = std::mem::size_of::<T>();
        // SAFETY: `v` is a plain element type (no padding) of `size <= 8` bytes, read as bytes.
        b[..size].copy_from_slice(unsafe { std::slice::from_raw_parts(std::ptr::from_ref(&v).cast::<u8>(), size) });
        u64::from_le_bytes(b)
    })
}

/// The dim along which the source is dense when the destination is dense along the last
/// dim and the source is not: such copies go through the tiled transpose.
fn transpose_row_dim(plan: &IterPlan) -> Option<usize> {
    let nd = plan.ndim();
    if nd < 2 {
        return None;
    }
    let (d, s) = (&plan.strides[0], &plan.strides[1]);
    if d[nd - 1] != 1 || s[nd - 1].unsigned_abs() == 1 || plan.shape[nd - 1] < TRANSPOSE_MIN {
        return None;
    }
    (0..nd - 1).rev().find(|&j| s[j].unsigned_abs() == 1 && plan.shape[j] >= TRANSPOSE_MIN)
}

/// Tiled transposes of `plan` (rows along `row_dim`, columns along the last dim). The
/// innermost other dim is the kernel's batch dim; any further dims are looped here.
fn transpose(plan: &IterPlan, row_dim: usize, ptrs: [u64; 2], bytes: usize, max_blocks: u32, steps: &mut Vec<Step>) {
    let col_dim = plan.ndim() - 1;
    let (batch_dim, host_dims) = tile_batch_dims(plan.ndim(), row_dim);
    let (rows, cols) = (plan.shape[row_dim], plan.shape[col_dim]);
    let batch = batch_dim.map_or(1, |b| plan.shape[b]);
    let stride = |op: usize, d: Option<usize>| d.map_or(0, |d| plan.strides[op][d] as i64);
    let count: usize = host_dims.iter().map(|&d| plan.shape[d]).product();
    for idx in 0..count {
        let mut p = ptrs;
        offset_to(plan, host_dims.iter().copied(), idx, &[bytes, bytes], &mut p);
        let args = TransposeArgs {
            dst: p[0],
            src: p[1],
            batch: batch as i64,
            rows: rows as i64,
            cols: cols as i64,
            dst_strides: [stride(0, batch_dim), stride(0, Some(row_dim)), stride(0, Some(col_dim))],
            src_strides: [stride(1, batch_dim), stride(1, Some(row_dim)), stride(1, Some(col_dim))],
        };
        let packed = packed_fits(bytes, rows, cols, args.dst, args.dst_strides, args.src, args.src_strides);
        // a word-wise tile's edge is `P` element tiles'
        let edge = TILE as usize * if packed { packed_elements(bytes).unwrap_or(1) } else { 1 };
        let tiles = batch * rows.div_ceil(edge) * cols.div_ceil(edge);
        steps.push(Step::Kernel(Launch {
            spec: KernelSpec::Transpose { bytes, packed },
            // capped, tiles grid-strided: a tile a block was 6-8 % slower on an H200
            grid: tiles.clamp(1, max_blocks.max(1) as usize) as u32,
            block: (TILE, TILE_ROWS),
            args: Args::Transpose(args),
        }));
    }
}

/// The same launches with every 32-bit strided kernel replaced by its 64-bit twin (same
/// work, 64-bit index math): lets tests run the 64-bit kernels on small tensors.
pub fn widen_index(steps: &[Step]) -> Vec<Step> {
    steps
        .iter()
        .map(|step| match step {
            Step::Kernel(Launch { spec, grid, block, args: Args::Strided32(a) }) => {
                let nd = a.ndim.max(0) as usize;
                let plan = IterPlan {
                    shape: (0..nd).rev().map(|k| a.size[k] as usize).collect(),
                    strides: a.stride.iter().map(|st| (0..nd).rev().map(|k| st[k] as isize).collect()).collect(),
                };
                let Ok(mut wide) = StridedArgs64::new(&plan, &a.ptr, &a.params, a.bits) else {
                    // A valid 32-bit plan always widens; keep the step as it is otherwise.
                    return step.clone();
                };
                wide.q = a.q;
                let spec = match spec {
                    KernelSpec::Map { func, inputs, out, quant, .. } => KernelSpec::Map {
                        func: *func,
                        inputs: inputs.clone(),
                        out: *out,
                        layout: MapLayout::Strided(Index::I64),
                        quant: *quant,
                    },
                    KernelSpec::Fused { func, inputs, out, .. } => KernelSpec::Fused {
                        func: *func,
                        inputs: inputs.clone(),
                        out: *out,
                        layout: MapLayout::Strided(Index::I64),
                    },
                    KernelSpec::Cast { src, dst, .. } => {
                        KernelSpec::Cast { src: *src, dst: *dst, layout: MapLayout::Strided(Index::I64) }
                    }
                    KernelSpec::Copy { bytes, .. } => KernelSpec::Copy { bytes: *bytes, index: Index::I64 },
                    KernelSpec::Fill { bytes, .. } => {
                        KernelSpec::Fill { bytes: *bytes, layout: MapLayout::Strided(Index::I64) }
                    }
                    other => other.clone(),
                };
                Step::Kernel(Launch { spec, grid: *grid, block: *block, args: Args::Strided64(wide) })
            }
            other => other.clone(),
        })
        .collect()
}

mod step;
#[cfg(test)]
mod tests;

pub use step::{Args, Launch, Step};
