//! Kernel argument blocks, `#[repr(C)]` mirrors of `kernels/cuda/include/args.cuh`. They are passed
//! by value as the single kernel parameter: no per-launch device or host allocation.

use tensor_core::iter::IterPlan;
use tensor_core::{Error, Result};

use super::divmod::{magic32, magic64};

/// Most dims of a strided launch (after coalescing); deeper plans are split on the host.
pub const MAX_DIMS: usize = 8;
/// Most operands: the output and up to three inputs.
pub const MAX_OPERANDS: usize = 4;
/// Most scalar parameters of an op (passed as `float`).
pub const MAX_PARAMS: usize = 4;

/// `tops_contig_args`: every operand dense, or an input that is one broadcast scalar.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ContigArgs {
    /// Device addresses: output, then inputs.
    pub ptr: [u64; MAX_OPERANDS],
    /// Element count.
    pub n: u64,
    /// Fill value bits (fill kernels).
    pub bits: u64,
    /// Bit `i`: input `i` is a single broadcast element.
    pub scalar_mask: u32,
    /// Op parameters.
    pub params: [f32; MAX_PARAMS],
}

/// `tops_strided_args32`: 32-bit index math (`n` and every offset below 2^31).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StridedArgs32 {
    /// Device addresses: output, then inputs.
    pub ptr: [u64; MAX_OPERANDS],
    /// Fill value bits (fill kernels).
    pub bits: u64,
    /// Element count.
    pub n: u32,
    /// Number of dims used.
    pub ndim: i32,
    /// Sizes, innermost first.
    pub size: [u32; MAX_DIMS],
    /// Division magic per dim.
    pub magic: [u32; MAX_DIMS],
    /// Division shift per dim.
    pub shift: [u32; MAX_DIMS],
    /// Strides in elements per operand, innermost first.
    pub stride: [[i32; MAX_DIMS]; MAX_OPERANDS],
    /// Op parameters.
    pub params: [f32; MAX_PARAMS],
}

/// `tops_strided_args64`: 64-bit index math, any size.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StridedArgs64 {
    /// Device addresses: output, then inputs.
    pub ptr: [u64; MAX_OPERANDS],
    /// Fill value bits (fill kernels).
    pub bits: u64,
    /// Element count.
    pub n: u64,
    /// Number of dims used.
    pub ndim: i32,
    /// Sizes, innermost first.
    pub size: [u64; MAX_DIMS],
    /// Division magic per dim.
    pub magic: [u64; MAX_DIMS],
    /// Division shift per dim.
    pub shift: [u32; MAX_DIMS],
    /// Strides in elements per operand, innermost first.
    pub stride: [[i64; MAX_DIMS]; MAX_OPERANDS],
    /// Op parameters.
    pub params: [f32; MAX_PARAMS],
}

/// `tops_transpose_args`: `dst[b][r][c] = src[b][r][c]`, dst dense along `c`, src along `r`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TransposeArgs {
    /// Destination device address.
    pub dst: u64,
    /// Source device address.
    pub src: u64,
    /// Batch count.
    pub batch: i64,
    /// Rows.
    pub rows: i64,
    /// Columns.
    pub cols: i64,
    /// Destination strides (batch, row, col), elements.
    pub dst_strides: [i64; 3],
    /// Source strides (batch, row, col), elements.
    pub src_strides: [i64; 3],
}

/// True when 32-bit index math is exact for `plan`: fewer than 2^31 elements and every
/// operand's reachable offsets within ±(2^31 - 1).
pub fn fits_i32(plan: &IterPlan) -> bool {
    const LIM: u128 = (1 << 31) - 1;
    if plan.numel() as u128 > LIM || plan.shape.iter().any(|&s| s as u128 > LIM) {
        return false;
    }
    plan.strides.iter().all(|st| {
        let span: u128 =
            plan.shape.iter().zip(st).map(|(&n, &s)| (n.saturating_sub(1) as u128) * s.unsigned_abs() as u128).sum();
        span <= LIM
    })
}

fn check_operands(plan: &IterPlan, ptrs: &[u64], params: &[f32]) -> Result<()> {
    if ptrs.len() > MAX_OPERANDS || plan.strides.len() != ptrs.len() {
        return Err(Error::Cuda(format!(
            "a kernel takes at most {MAX_OPERANDS} operands with one stride list each (got {} pointers, {} stride lists)",
            ptrs.len(),
            plan.strides.len()
        )));
    }
    if params.len() > MAX_PARAMS {
        return Err(Error::Cuda(format!("a CUDA kernel takes at most {MAX_PARAMS} parameters, got {}", params.len())));
    }
    if plan.ndim() > MAX_DIMS {
        return Err(Error::Cuda(format!("a strided launch takes at most {MAX_DIMS} dims, got {}", plan.ndim())));
    }
    Ok(())
}

fn copy_params(dst: &mut [f32; MAX_PARAMS], params: &[f32]) {
    dst[..params.len()].copy_from_slice(params);
}

impl ContigArgs {
    /// Arguments for `n` dense elements.
    pub fn new(ptrs: &[u64], n: u64, scalar_mask: u32, params: &[f32], bits: u64) -> Result<Self> {
        if ptrs.len() > MAX_OPERANDS || params.len() > MAX_PARAMS {
            return Err(Error::Cuda(format!(
                "a kernel takes at most {MAX_OPERANDS} operands and {MAX_PARAMS} parameters"
            )));
        }
        let mut a = ContigArgs { n, bits, scalar_mask, ..Default::default() };
        a.ptr[..ptrs.len()].copy_from_slice(ptrs);
        copy_params(&mut a.params, params);
        Ok(a)
    }
}

impl StridedArgs32 {
    /// Arguments for `plan` (at most [`MAX_DIMS`] dims, [`fits_i32`]); `ptrs[i]` pairs with
    /// `plan.strides[i]`.
    pub fn new(plan: &IterPlan, ptrs: &[u64], params: &[f32], bits: u64) -> Result<Self> {
        check_operands(plan, ptrs, params)?;
        if !fits_i32(plan) {
            return Err(Error::Cuda("strided launch does not fit 32-bit indexing".into()));
        }
        let mut a = StridedArgs32 { n: plan.numel() as u32, bits, ndim: plan.ndim() as i32, ..Default::default() };
        a.ptr[..ptrs.len()].copy_from_slice(ptrs);
        for (k, d) in (0..plan.ndim()).rev().enumerate() {
            let size = plan.shape[d] as u32;
            let (m, s) = magic32(size.max(1));
            a.size[k] = size;
            a.magic[k] = m;
            a.shift[k] = s;
            for (op, st) in plan.strides.iter().enumerate() {
                a.stride[op][k] = st[d] as i32;
            }
        }
        copy_params(&mut a.params, params);
        Ok(a)
    }
}

impl StridedArgs64 {
    /// Arguments for `plan` (at most [`MAX_DIMS`] dims); `ptrs[i]` pairs with `plan.strides[i]`.
    pub fn new(plan: &IterPlan, ptrs: &[u64], params: &[f32], bits: u64) -> Result<Self> {
        check_operands(plan, ptrs, params)?;
        let mut a = StridedArgs64 { n: plan.numel() as u64, bits, ndim: plan.ndim() as i32, ..Default::default() };
        a.ptr[..ptrs.len()].copy_from_slice(ptrs);
        for (k, d) in (0..plan.ndim()).rev().enumerate() {
            let size = plan.shape[d] as u64;
            let (m, s) = magic64(size.max(1));
            a.size[k] = size;
            a.magic[k] = m;
            a.shift[k] = s;
            for (op, st) in plan.strides.iter().enumerate() {
                a.stride[op][k] = st[d] as i64;
            }
        }
        copy_params(&mut a.params, params);
        Ok(a)
    }
}
