//! The CPU backend's row kernel kind: a function over whole rows of a dense operand (the
//! output has the input's shape), for ops that read a row more than once — softmax reads
//! each row for its maximum, again for Σ e^(x − max) and writes it once, all while the row
//! is in cache. The row length is the op's first param; the call path hands the kernel a
//! dense plan (the caller routes other layouts elsewhere).

use crate::parallel::{for_each_chunk, GRAIN};
use tensor_core::registry::{KernelImpl, PreparedCall};
use tensor_core::{DType, Error, Result};

/// Computes `count` consecutive output rows of `len` elements from as many input rows
/// (dense: row `r` starts `r · len` elements after the first), with two scratch rows
/// (`row.scratch`: `len` elements of the kernel's [`RowKernel::scratch`] dtype each,
/// cache-resident, reused for every call of a task) to build rows in, and
/// `row.stream`: the whole output is too large to stay in cache, so finished rows should
/// reach `out` through non-temporal stores ([`crate::copy::stream::StreamLine`]; the
/// driver fences once per task). Taking rows in batches lets a kernel overlap one row's
/// stores with the next row's compute.
///
/// # Safety
/// `input` is valid for `count · len` reads and `out` for `count · len` writes of the
/// kernel's dtype, and the two do not overlap (the driver copies a row first, and passes
/// one row at a time, when the call is in place); each `row.scratch` pointer is valid for
/// `len` elements of the kernel's scratch dtype and overlaps nothing else.
pub type RowFn = unsafe fn(out: *mut u8, input: *const u8, len: usize, count: usize, row: RowScratch);

/// What a [`RowFn`] gets besides its rows.
#[derive(Debug, Clone, Copy)]
pub struct RowScratch {
    /// Two buffers of at least `len` elements of the scratch dtype each, aligned to 64 bytes.
    pub scratch: [*mut u8; 2],
    /// True when the output is larger than the cache ([`crate::copy::stream::NT_THRESHOLD`]).
    pub stream: bool,
}

/// A row kernel for one dtype (input and output).
///
/// ```
/// use tensor_kernels_cpu::rows::RowKernel;
/// use tensor_core::{registry::KernelImpl, DType};
/// use tensor_kernels_cpu::rows::RowScratch;
/// unsafe fn copy_rows(o: *mut u8, i: *const u8, n: usize, rows: usize, _: RowScratch) {
///     unsafe { std::ptr::copy(i, o, rows * n * 4) }
/// }
/// assert_eq!(RowKernel { dtype: DType::F32, scratch: DType::F32, func: copy_rows }.kind(), "cpu-rows");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RowKernel {
    /// The dtype of input and output.
    pub dtype: DType,
    /// The element type of the two scratch rows (the dtype a kernel computes a row in:
    /// f32 for f16/bf16 rows).
    pub scratch: DType,
    /// The row function.
    pub func: RowFn,
}

/// A raw address shared by the row tasks (each writes its own rows).
#[derive(Clone, Copy)]
struct Addr(usize);

impl KernelImpl for RowKernel {
    fn kind(&self) -> &'static str {
        "cpu-rows"
    }

    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let op = call.op.name;
        let (Some(out), Some(input)) = (call.outputs.first(), call.inputs.first()) else {
            return Err(Error::invalid(op, "a row kernel takes one input and one output"));
        };
        if out.dtype != self.dtype || input.dtype != self.dtype {
            return Err(Error::invalid(
                op,
                format!("row kernel for {} given {} → {}", self.dtype, input.dtype, out.dtype),
            ));
        }
        let dense = |shape: &[usize], strides: &[isize]| shape.len() <= 1 && strides.iter().all(|&s| s == 1);
        if !dense(out.shape, out.strides) || !dense(input.shape, input.strides) {
            return Err(Error::invalid(op, "a row kernel needs a dense input and output"));
        }
        let numel: usize = out.shape.iter().product();
        let len = call.params.first().map_or(0, |p| p.to_f64() as usize);
        if len == 0 || !numel.is_multiple_of(len) {
            return Err(Error::invalid(op, format!("row length {len} does not divide {numel} elements")));
        }
        let size = self.dtype.size();
        let (o, i) = (Addr(out.ptr as usize), Addr(input.ptr as usize));
        let func = self.func;
        let in_place = o.0 == i.0;
        let stream = numel * size >= crate::copy::stream::NT_THRESHOLD;
        let words = (len * size.max(self.scratch.size())).div_ceil(64) * 8;
        for_each_chunk(numel / len, (GRAIN / len).max(1), |rows| {
            // The row function's two buffers, and in place a copy of each input row (u64
            // words in 64-byte steps: aligned for every dtype). The second buffer starts
            // half a page (mod 4 KiB) after the first, so that a kernel reading one while
            // writing the other at the same index does not stall on 4K aliasing.
            let skew = (2048 + 4096 - (words * 8) % 4096) % 4096 / 8;
            let mut work: Vec<u64> = vec![0; 2 * words + skew + 8];
            let offset = work.as_ptr().align_offset(64).min(8);
            let (first, second) = work[offset..].split_at_mut(words + skew);
            let scratch = RowScratch { scratch: [first.as_mut_ptr().cast(), second.as_mut_ptr().cast()], stream };
            if !in_place {
                let at = rows.start * len * size;
                // SAFETY: rows `rows` of the dense input and output (`numel / len` rows of
                // `len`), inside their storages, locked by the caller; they do not overlap
                // (the call path stages partial overlap; exact aliasing is the case below);
                // each scratch holds `len` elements from its 64-byte aligned start.
                unsafe { func((o.0 + at) as *mut u8, (i.0 + at) as *const u8, len, rows.len(), scratch) };
            } else {
                let mut copy: Vec<u64> = vec![0; words];
                for r in rows {
                    let at = r * len * size;
                    // SAFETY: row `r` of the input (in bounds, locked by the caller) into the
                    // copy row of at least `len * size` bytes; then that copy and row `r` of
                    // the output, one row, as above.
                    unsafe {
                        std::ptr::copy_nonoverlapping((i.0 + at) as *const u8, copy.as_mut_ptr().cast(), len * size);
                        func((o.0 + at) as *mut u8, copy.as_ptr().cast(), len, 1, scratch)
                    };
                }
            }
            if stream {
                // Streamed rows are visible to other threads once this task's stores are.
                crate::copy::stream::store_fence();
            }
        });
        Ok(())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
