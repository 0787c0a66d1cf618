//! Kernel argument blocks, `#[repr(C)]` mirrors of `kernels/cuda/include/args.cuh`. They are passed
//! by value as the single kernel parameter: no per-launch device or host allocation.

use tensor_core::iter::IterPlan;
use tensor_core::{Error, Result, Scalar};

use super::divmod::{magic32, magic64};

/// Most dims of a strided launch (after coalescing); deeper plans are split on the host.
pub const MAX_DIMS: usize = 8;
/// Most operands: the output and up to [`tensor_core::MAX_INPUTS`] inputs.
pub const MAX_OPERANDS: usize = tensor_core::MAX_INPUTS + 1;
/// Most scalar parameters of an op: [`tensor_core::MAX_PARAMS`].
pub use tensor_core::MAX_PARAMS;

/// `tops_param`'s `kind` of a `bool` (bits 0 or 1).
pub const PARAM_BOOL: u32 = 0;
/// `tops_param`'s `kind` of an `i64` (its two's complement bits).
pub const PARAM_INT: u32 = 1;
/// `tops_param`'s `kind` of an `f64` (its IEEE bits).
pub const PARAM_FLOAT: u32 = 2;

/// `tops_param`: one op parameter, exactly the caller's [`Scalar`] (kind + 64 bits). On the
/// device it converts to the type the op's function declares for it, with Rust `as` rules,
/// so a param passed in its declared type arrives bit for bit (f32 params travel as the f64
/// of the same value, which converts back exactly).
///
/// ```
/// use tensor_core::Scalar;
/// use tensor_kernels_cuda::args::{KernelParam, PARAM_FLOAT, PARAM_INT};
/// assert_eq!(KernelParam::from(Scalar::Int(16_777_217)), KernelParam { bits: 16_777_217, kind: PARAM_INT, pad: 0 });
/// assert_eq!(KernelParam::from(Scalar::Float(0.1)).bits, 0.1f64.to_bits());
/// assert_eq!(KernelParam::from(Scalar::Float(0.1)).kind, PARAM_FLOAT);
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelParam {
    /// The value's bits: 0/1, an i64's or an f64's.
    pub bits: u64,
    /// [`PARAM_BOOL`], [`PARAM_INT`] or [`PARAM_FLOAT`].
    pub kind: u32,
    /// Padding (0), so that every byte is initialised.
    pub pad: u32,
}

impl From<Scalar> for KernelParam {
    fn from(s: Scalar) -> KernelParam {
        let (bits, kind) = match s {
            Scalar::Bool(b) => (b as u64, PARAM_BOOL),
            Scalar::Int(i) => (i as u64, PARAM_INT),
            Scalar::Float(f) => (f.to_bits(), PARAM_FLOAT),
        };
        KernelParam { bits, kind, pad: 0 }
    }
}

/// `tops_affine`: a quantized operand's arithmetic (all zero for a plain operand).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AffineArgs {
    /// Scale (f32).
    pub scale: f32,
    /// `1 / scale` rounded to f32.
    pub inv: f32,
    /// Zero point (f32).
    pub zp: f32,
    /// Padding.
    pub pad: f32,
}

impl AffineArgs {
    /// The arguments of `a`.
    pub fn of(a: &tensor_core::quant::Affine) -> AffineArgs {
        AffineArgs { scale: a.scale, inv: a.inv_scale, zp: a.zero_point, pad: 0.0 }
    }
}

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
    pub params: [KernelParam; MAX_PARAMS],
    /// Quantized operands' arithmetic (output first).
    pub q: [AffineArgs; MAX_OPERANDS],
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
    pub params: [KernelParam; MAX_PARAMS],
    /// Quantized operands' arithmetic (output first).
    pub q: [AffineArgs; MAX_OPERANDS],
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
    pub params: [KernelParam; MAX_PARAMS],
    /// Quantized operands' arithmetic (output first).
    pub q: [AffineArgs; MAX_OPERANDS],
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

fn check_operands(plan: &IterPlan, ptrs: &[u64], params: &[KernelParam]) -> Result<()> {
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

fn copy_params(dst: &mut [KernelParam; MAX_PARAMS], params: &[KernelParam]) {
    dst[..params.len()].copy_from_slice(params);
}

impl ContigArgs {
    /// Arguments for `n` dense elements.
    pub fn new(ptrs: &[u64], n: u64, scalar_mask: u32, params: &[KernelParam], bits: u64) -> Result<Self> {
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
    pub fn new(plan: &IterPlan, ptrs: &[u64], params: &[KernelParam], bits: u64) -> Result<Self> {
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
    pub fn new(plan: &IterPlan, ptrs: &[u64], params: &[KernelParam], bits: u64) -> Result<Self> {
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

/// `tops_reduce_args`: a reduction of `n_out` outputs over `n_red` elements each, cut into
/// `split` slices of `chunk` (partials in `work` when `split > 1`). Dims innermost first.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ReduceArgs {
    /// Output device address.
    pub out: u64,
    /// Input device address.
    pub input: u64,
    /// Workspace device address (`n_out * split` accumulator slots), 0 when unsplit.
    pub work: u64,
    /// Outputs (product of the kept sizes).
    pub n_out: i64,
    /// Reduced extent (product of the reduced sizes).
    pub n_red: i64,
    /// Slices of the reduced extent.
    pub split: i64,
    /// Elements per slice.
    pub chunk: i64,
    /// Kept dims used.
    pub kdim: i32,
    /// Reduced dims used.
    pub rdim: i32,
    /// Kept sizes.
    pub ksize: [i64; MAX_DIMS],
    /// Kept input strides.
    pub kin: [i64; MAX_DIMS],
    /// Kept output strides.
    pub kout: [i64; MAX_DIMS],
    /// Reduced sizes.
    pub rsize: [i64; MAX_DIMS],
    /// Reduced input strides.
    pub rin: [i64; MAX_DIMS],
    /// Logical-index steps of the reduced dims.
    pub ridx: [i64; MAX_DIMS],
    /// Op parameters.
    pub params: [KernelParam; MAX_PARAMS],
}

/// `tops_fused_reduce_args`: a fused chain's reduction — the reduction's args over the
/// chain's virtual dense result (`r.input` unused), and the leaves (`m.ptr[1..]`, `m.ptr[0]`
/// unused) on that result's map plan.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FusedReduceArgs {
    /// The reduction.
    pub r: ReduceArgs,
    /// The leaves.
    pub m: StridedArgs64,
}

/// Most operands of a sparse layout's kernel ([`SparseArgs`]).
pub const SPARSE_OPERANDS: usize = 8;
/// Most integer parameters of a sparse layout's kernel ([`SparseArgs`]).
pub const SPARSE_PARAMS: usize = 6;

/// `tops_sparse_args`: a kernel of the sparse layouts' steps (`super::sparse`): device
/// addresses (components, scratch, an error flag; null where unused), a count and integer
/// parameters, each kernel documenting its own.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SparseArgs {
    /// Device addresses.
    pub ptr: [u64; SPARSE_OPERANDS],
    /// The count the grid covers (entries, positions, ...).
    pub n: i64,
    /// Integer parameters.
    pub p: [i64; SPARSE_PARAMS],
}
