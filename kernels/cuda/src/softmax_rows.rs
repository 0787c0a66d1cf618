//! The CUDA kernel kind of the fused softmax rows: softmax / log_softmax of a dense float
//! tensor along its last dim in one kernel (`kernels/cuda/include/softmax_rows.cuh`), so each
//! row is read from DRAM once and written once, where the eager form — a log-sum-exp
//! reduction, then a map — reads the tensor twice. Rows of up to 32 Ki elements (8 Ki f64)
//! are held in registers by a group of threads (a few lanes for short rows, a warp, up to a
//! block of 1024), loaded and stored 16 bytes at a time; longer rows, up to [`MAX_ROW`],
//! take a block each and read the row three times, the last two from L2. Registered for the
//! core's `softmax_rows` / `log_softmax_rows` specs in `reduce_rows.rs`; a row says how long
//! a row it takes ([`KernelImpl::max_row_len`]).

use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Error, Result, Scalar};

use super::args::{ContigArgs, KernelParam};
use super::codegen::KernelSpec;
use super::launch::{run, same_device};
use super::plan::{Args, Launch, Step};
use super::reduce_codegen::{softmax_register_elems, SoftmaxForm};
use super::runtime;

/// The longest row the fused kernels take (elements): 256 KiB of f32, which the streaming
/// form's second and third reads still find in L2 with a row in flight on every
/// multiprocessor. A longer row goes to the log-sum-exp reduction, whose planner splits a
/// long extent over many blocks.
pub const MAX_ROW: usize = 64 * 1024;

/// Most threads a row of the register form (one block).
const MAX_LANES: usize = 1024;

/// The form of the fused rows for rows of `row_len` elements of `dtype`, loaded 16 bytes at
/// a time when `aligned` (both addresses and the row length a multiple of 16 bytes), else
/// one element at a time: in registers while the row fits 1024 threads' registers (a power
/// of two of lanes, as few as hold it with at most [`softmax_register_elems`] a thread),
/// else streamed by a block.
///
/// ```
/// use tensor_kernels_cuda::softmax_rows::softmax_form;
/// use tensor_kernels_cuda::reduce_codegen::SoftmaxForm::{Registers, Streaming};
/// use tensor_core::DType;
/// assert_eq!(softmax_form(DType::F32, 32, true), Registers { vec: 4, nv: 1, lanes: 8 });
/// assert_eq!(softmax_form(DType::F32, 128, true), Registers { vec: 4, nv: 1, lanes: 32 });
/// assert_eq!(softmax_form(DType::F32, 1024, true), Registers { vec: 4, nv: 8, lanes: 32 });
/// assert_eq!(softmax_form(DType::F32, 16384, true), Registers { vec: 4, nv: 8, lanes: 512 });
/// assert_eq!(softmax_form(DType::F32, 1000, false), Registers { vec: 1, nv: 32, lanes: 32 });
/// assert_eq!(softmax_form(DType::F16, 4096, true), Registers { vec: 8, nv: 4, lanes: 128 });
/// assert_eq!(softmax_form(DType::F32, 65536, true), Streaming { vec: 4 });
/// assert_eq!(softmax_form(DType::F64, 8192, true), Registers { vec: 2, nv: 4, lanes: 1024 });
/// assert_eq!(softmax_form(DType::F64, 8194, true), Streaming { vec: 2 });
/// ```
pub fn softmax_form(dtype: DType, row_len: usize, aligned: bool) -> SoftmaxForm {
    let vec = if aligned { 16 / dtype.size().max(1) } else { 1 };
    let nv_max = (softmax_register_elems(dtype) / vec).max(1);
    let nvec = row_len.div_ceil(vec);
    if nvec > MAX_LANES * nv_max {
        return SoftmaxForm::Streaming { vec: vec as u8 };
    }
    // Rows of up to a warp's vectors: a vector a lane, so that a warp's load covers whole
    // adjacent rows (several vectors a lane of short rows read strided, measured 2-10 %
    // slower on an H200); longer: as many vectors a lane as registers allow.
    let lanes = if nvec <= 32 {
        nvec.max(1).next_power_of_two()
    } else {
        nvec.div_ceil(nv_max).next_power_of_two().clamp(32, MAX_LANES)
    };
    SoftmaxForm::Registers { vec: vec as u8, nv: nvec.div_ceil(lanes).max(1) as u8, lanes: lanes as u16 }
}

/// The forms NVRTC checks for a dtype (tests): the widest register form (most registers),
/// a scalar one, a short-row one and the streaming forms.
pub fn forms_to_check(dtype: DType) -> Vec<SoftmaxForm> {
    let widest = |aligned: bool| {
        let vec = if aligned { 16 / dtype.size().max(1) } else { 1 };
        let nv = (softmax_register_elems(dtype) / vec).max(1);
        softmax_form(dtype, MAX_LANES * nv * vec, aligned)
    };
    vec![
        widest(true),
        widest(false),
        softmax_form(dtype, 3, true),
        SoftmaxForm::Streaming { vec: (16 / dtype.size().max(1)) as u8 },
        SoftmaxForm::Streaming { vec: 1 },
    ]
}

/// The fused softmax (`log`: log_softmax) rows of one dtype on CUDA.
///
/// ```
/// use tensor_kernels_cuda::softmax_rows::CudaSoftmaxRows;
/// use tensor_core::{registry::KernelImpl, DType};
/// assert_eq!(CudaSoftmaxRows { dtype: DType::F32, log: false }.kind(), "cuda-softmax-rows");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CudaSoftmaxRows {
    /// Input and output dtype: f16, bf16 (computed in f32), f32 or f64.
    pub dtype: DType,
    /// log_softmax instead of softmax.
    pub log: bool,
}

/// Whether a (coalesced) operand is dense: at most one dim, unit stride.
fn dense(t: &RawTensor<'_>) -> bool {
    t.shape.len() <= 1 && t.strides.iter().all(|&s| s == 1)
}

/// The launch of the fused rows over `numel` elements in rows of `row_len` (at most
/// [`MAX_ROW`]), from the device address `input` to `out` (which may equal `input`), in the
/// form [`softmax_form`] picks: a group of threads a row (several rows a block for short
/// rows), grid-strided beyond `max_blocks` blocks.
///
/// ```
/// use tensor_kernels_cuda::softmax_rows::plan_softmax_rows;
/// use tensor_kernels_cuda::plan::Step;
/// use tensor_core::DType;
/// // 6 rows of 40: 10 vectors of 4 over 16 lanes, 8 rows a 128-thread block
/// let steps = plan_softmax_rows(DType::F32, false, 0x1000, 0x2000, 6 * 40, 40, 1024).unwrap();
/// let Step::Kernel(l) = &steps[0] else { panic!() };
/// assert_eq!((l.grid, l.block), (1, (128, 1)));
/// assert!(plan_softmax_rows(DType::F32, false, 0x1000, 0x2000, 10, 3, 1024).is_err());
/// ```
pub fn plan_softmax_rows(
    dtype: DType,
    log: bool,
    out: u64,
    input: u64,
    numel: usize,
    row_len: usize,
    max_blocks: u32,
) -> Result<Vec<Step>> {
    let op = if log { "log_softmax" } else { "softmax" };
    if !dtype.is_float() {
        return Err(Error::invalid(op, format!("the fused CUDA rows take float dtypes, not {dtype}")));
    }
    if row_len == 0 || !numel.is_multiple_of(row_len) {
        return Err(Error::invalid(op, format!("row length {row_len} does not divide {numel} elements")));
    }
    if row_len > MAX_ROW {
        return Err(Error::invalid(op, format!("the fused CUDA rows take rows of at most {MAX_ROW}, not {row_len}")));
    }
    let rows = numel / row_len;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let aligned = out.is_multiple_of(16) && input.is_multiple_of(16) && (row_len * dtype.size()).is_multiple_of(16);
    let form = softmax_form(dtype, row_len, aligned);
    let grid = rows.div_ceil(form.rows_per_block() as usize).min(max_blocks.max(1) as usize) as u32;
    let mut args = ContigArgs { n: numel as u64, ..ContigArgs::default() };
    args.ptr[0] = out;
    args.ptr[1] = input;
    args.params[0] = KernelParam::from(Scalar::Int(row_len as i64));
    let spec = KernelSpec::SoftmaxRows { dtype, log, form };
    Ok(vec![Step::Kernel(Launch { spec, grid, block: (form.block_threads(), 1), args: Args::Contig(args) })])
}

impl KernelImpl for CudaSoftmaxRows {
    fn kind(&self) -> &'static str {
        "cuda-softmax-rows"
    }

    fn max_row_len(&self) -> usize {
        MAX_ROW
    }

    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let op = call.op.name;
        let ([out], [input]) = (call.outputs, call.inputs) else {
            return Err(Error::invalid(op, "the fused softmax rows take one input and one output"));
        };
        if out.dtype != self.dtype || input.dtype != self.dtype {
            return Err(Error::invalid(
                op,
                format!("the {} rows kernel was given {} → {}", self.dtype, input.dtype, out.dtype),
            ));
        }
        if !dense(out) || !dense(input) {
            return Err(Error::invalid(op, "the fused softmax rows need a dense input and output"));
        }
        same_device(op, out, std::slice::from_ref(input))?;
        let numel: usize = out.shape.iter().product();
        let row_len = match call.params.first() {
            Some(Scalar::Int(n)) if *n > 0 => *n as usize,
            other => {
                return Err(Error::invalid(op, format!("the row length must be a positive integer, got {other:?}")))
            }
        };
        let dev = runtime::device_of(out.device)?;
        let (o, i) = (out.ptr as usize as u64, input.ptr as usize as u64);
        let steps = plan_softmax_rows(self.dtype, self.log, o, i, numel, row_len, dev.max_blocks())?;
        // SAFETY: the PreparedCall contract: both operands are dense, `numel` elements of
        // `dtype` on this device, locked for the call (exact aliasing is allowed: each
        // element is read, then written, by one thread).
        unsafe { run(&dev, &steps) }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
