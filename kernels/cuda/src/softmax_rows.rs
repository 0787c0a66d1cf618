//! The CUDA kernel kind of the fused softmax rows: softmax / log_softmax of a dense f32 or
//! f64 tensor along its last dim in one kernel, a block per row
//! (`kernels/cuda/include/softmax_rows.cuh`), so each row is read from DRAM once (the
//! second read, for the output, hits the cache) and written once. The eager form — a
//! log-sum-exp reduction, then a map — reads the whole tensor from DRAM twice. Registered
//! for the core's `softmax_rows` / `log_softmax_rows` specs in `reduce_rows.rs`; a row says
//! how long a row it takes ([`KernelImpl::max_row_len`]: [`MAX_ROW`]).

use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Error, Result, Scalar};

use super::args::{ContigArgs, KernelParam};
use super::codegen::KernelSpec;
use super::launch::{run, same_device};
use super::plan::{Args, Launch, Step};
use super::reduce_codegen::REDUCE_BLOCK;
use super::runtime;

/// The longest row the fused kernel takes (elements): 64 KiB of f32, which the block's
/// second read still finds in L1/L2. A longer row goes to the log-sum-exp reduction, whose
/// planner splits a long extent over many blocks; one block a row would leave most of the
/// GPU idle when such rows are few (a `[1, 2^26]` softmax would run on one SM).
pub const MAX_ROW: usize = 16 * 1024;

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

/// The launch of the fused rows over `numel` elements in rows of `row_len`, from the
/// device address `input` to `out` (which may equal `input`): a block per row up to
/// `max_blocks` (grid-stride beyond), each of up to [`REDUCE_BLOCK`] threads (fewer, in
/// whole warps, for short rows).
///
/// ```
/// use tensor_kernels_cuda::softmax_rows::plan_softmax_rows;
/// use tensor_kernels_cuda::plan::Step;
/// use tensor_core::DType;
/// let steps = plan_softmax_rows(DType::F32, false, 0x1000, 0x2000, 6 * 40, 40, 1024).unwrap();
/// let Step::Kernel(l) = &steps[0] else { panic!() };
/// assert_eq!((l.grid, l.block), (6, (64, 1)));
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
    let rows = numel / row_len;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let threads = (row_len.div_ceil(32) * 32).min(REDUCE_BLOCK as usize) as u32;
    let grid = rows.min(max_blocks.max(1) as usize) as u32;
    let mut args = ContigArgs { n: numel as u64, ..ContigArgs::default() };
    args.ptr[0] = out;
    args.ptr[1] = input;
    args.params[0] = KernelParam::from(Scalar::Int(row_len as i64));
    let spec = KernelSpec::SoftmaxRows { dtype, log };
    Ok(vec![Step::Kernel(Launch { spec, grid, block: (threads, 1), args: Args::Contig(args) })])
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
