//! The strided elementwise driver: runs a generated block kernel ([`MapKernel`]) over
//! operands of any strides, broadcast and dtypes.
//!
//! 1. Canonicalise: [`IterPlan`] over (out, inputs...) — size-1 dims dropped, dims sorted by
//!    the output's strides, coalesced where every operand is contiguous across them.
//! 2. Classify each operand's inner run ([`RunKind`]): used in place when it is contiguous
//!    and already in the kernel's dtype; otherwise staged through a block buffer (gathered
//!    with a cast for inputs; scattered with a cast for the output), or splatted once per
//!    row when its inner stride is 0.
//! 3. Split the flattened element range across rayon above [`GRAIN`] elements; each task
//!    walks rows of the plan in blocks of [`BLOCK`] elements.

use rayon::prelude::*;
use tensor_core::iter::IterPlan;
use tensor_core::registry::{MapKernel, RawTensor};
use tensor_core::{with_dtype, DType, Element, Error, Result, Scalar};

/// Elements per block handed to the kernel (fits L1 with four operands of f64).
pub const BLOCK: usize = 1024;
/// Minimum elements per parallel task; smaller calls run on the calling thread.
pub const GRAIN: usize = 32 * 1024;

/// How an operand's inner run is accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Stride 1 in the kernel's dtype: the kernel reads/writes memory directly.
    Direct,
    /// Stride 0: one value per row, splatted into a block.
    Splat,
    /// Any other stride or a dtype conversion: staged through a block buffer.
    Staged,
}

#[derive(Clone, Copy)]
struct SendPtr(*mut u8);
// SAFETY: the pointer is only dereferenced inside `run_map`'s tasks, which write disjoint
// output element ranges and only read inputs; the caller holds the storage locks.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

struct Operand {
    base: SendPtr,
    dtype: DType,
    kind: RunKind,
}

/// Runs `kernel` with `out[i] = f(inputs[0][i], ...)` for every index of `out.shape`.
///
/// # Safety
/// `out` and every input are in-bounds views of locked storages (out exclusively); every
/// input has `out.shape` (broadcast dims with stride 0); `out` has no internal overlap and
/// does not partially overlap any input (exact aliasing is fine).
pub unsafe fn run_map(kernel: &MapKernel, out: &RawTensor<'_>, inputs: &[RawTensor<'_>], params: &[Scalar]) -> Result<()> {
    if inputs.iter().any(|i| i.shape != out.shape) {
        return Err(Error::invalid("run_map", "inputs must be broadcast to the output shape"));
    }
    let mut strides: Vec<&[isize]> = vec![out.strides];
    strides.extend(inputs.iter().map(|i| i.strides));
    let plan = IterPlan::new(out.shape, &strides);
    let total = plan.numel();
    if total == 0 {
        return Ok(());
    }
    let inner = plan.inner_strides();
    let classify = |stride: isize, dtype: DType, want: DType| match stride {
        1 if dtype == want => RunKind::Direct,
        0 if dtype == want => RunKind::Splat,
        _ => RunKind::Staged,
    };
    let out_op = Operand { base: SendPtr(out.ptr), dtype: out.dtype, kind: classify(inner[0], out.dtype, kernel.output) };
    let out_op = Operand { kind: if out_op.kind == RunKind::Splat { RunKind::Staged } else { out_op.kind }, ..out_op };
    let in_ops: Vec<Operand> = inputs
        .iter()
        .zip(&inner[1..])
        .map(|(i, &s)| Operand { base: SendPtr(i.ptr), dtype: i.dtype, kind: classify(s, i.dtype, kernel.compute) })
        .collect();
    let task = |range: std::ops::Range<usize>| {
        // SAFETY: forwarded from run_map's contract; ranges of different tasks are disjoint.
        unsafe { run_range(kernel, &plan, &out_op, &in_ops, params, range) }
    };
    let threads = rayon::current_num_threads().max(1);
    if total < 2 * GRAIN || threads == 1 {
        task(0..total);
    } else {
        let chunks = (total / GRAIN).min(threads * 4).max(1);
        let per = total.div_ceil(chunks);
        (0..chunks).into_par_iter().for_each(|c| task(c * per..((c + 1) * per).min(total)));
    }
    Ok(())
}

/// Block buffer, over-aligned so SIMD loads on it are aligned.
#[repr(C, align(64))]
struct Buf([u8; BLOCK * 8]);

/// # Safety
/// As [`run_map`]; `range` lies within the plan's elements.
unsafe fn run_range(
    kernel: &MapKernel,
    plan: &IterPlan,
    out: &Operand,
    ins: &[Operand],
    params: &[Scalar],
    range: std::ops::Range<usize>,
) {
    let nops = ins.len() + 1;
    let inner_len = plan.inner_len();
    let inner = plan.inner_strides();
    let mut bufs: Vec<Buf> = (0..nops).map(|_| Buf([0; BLOCK * 8])).collect();
    let mut row_base = vec![0isize; nops];
    let mut i = range.start;
    let mut in_ptrs: Vec<*const u8> = vec![std::ptr::null(); ins.len()];
    let (cs, os) = (kernel.compute.size(), kernel.output.size());
    while i < range.end {
        let (row, col) = (i / inner_len, i % inner_len);
        plan.row_offsets(row, &mut row_base);
        let n = (inner_len - col).min(range.end - i).min(BLOCK);
        for (k, op) in ins.iter().enumerate() {
            let start = row_base[k + 1] + col as isize * inner[k + 1];
            let src = op.base.0.wrapping_offset(start * op.dtype.size() as isize);
            in_ptrs[k] = match op.kind {
                RunKind::Direct => src,
                RunKind::Splat => {
                    let buf = bufs[k + 1].0.as_mut_ptr();
                    // SAFETY: buf holds BLOCK*8 bytes >= n*cs; src is an in-bounds element.
                    unsafe { splat_bytes(buf, src, cs, n) };
                    buf
                }
                RunKind::Staged => {
                    let buf = bufs[k + 1].0.as_mut_ptr();
                    // SAFETY: n elements from `start` with the inner stride are in bounds
                    // (they are elements of this row); buf holds n compute elements.
                    unsafe { gather_cast(buf, kernel.compute, src, op.dtype, inner[k + 1], n) };
                    buf
                }
            };
        }
        let ostart = row_base[0] + col as isize * inner[0];
        let dst = out.base.0.wrapping_offset(ostart * out.dtype.size() as isize);
        match out.kind {
            // SAFETY: dst..dst+n*os is this task's own run of the output; inputs valid for n.
            RunKind::Direct => unsafe { (kernel.func)(dst, &in_ptrs, n, params) },
            _ => {
                let buf = bufs[0].0.as_mut_ptr();
                debug_assert!(n * os <= BLOCK * 8);
                // SAFETY: buf holds n output elements; then scattered into this task's run.
                unsafe {
                    (kernel.func)(buf, &in_ptrs, n, params);
                    scatter_cast(dst, out.dtype, inner[0], buf, kernel.output, n);
                }
            }
        }
        i += n;
    }
}

/// Writes `n` copies of the `size`-byte element at `src` into `dst`.
///
/// # Safety
/// `src` valid for `size` bytes, `dst` for `n * size`.
unsafe fn splat_bytes(dst: *mut u8, src: *const u8, size: usize, n: usize) {
    for j in 0..n {
        // SAFETY: j < n, within dst; src valid for size bytes.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.add(j * size), size) };
    }
}

/// Reads `n` elements of `sdt` at `src` with element stride `stride`, casting into `dst`
/// (contiguous, `ddt`).
///
/// # Safety
/// Every read element is in bounds; `dst` is valid for `n` elements of `ddt`.
pub unsafe fn gather_cast(dst: *mut u8, ddt: DType, src: *const u8, sdt: DType, stride: isize, n: usize) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.add(j).write(s.offset(j as isize * stride).read_unaligned().cast::<D>()) };
        }
    }))
}

/// Writes `n` contiguous elements of `sdt` from `src` into `dst` (`ddt`, element stride
/// `stride`), casting.
///
/// # Safety
/// Every written element is in bounds and exclusively the caller's; `src` valid for `n`.
pub unsafe fn scatter_cast(dst: *mut u8, ddt: DType, stride: isize, src: *const u8, sdt: DType, n: usize) {
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.offset(j as isize * stride).write_unaligned(s.add(j).read().cast::<D>()) };
        }
    }))
}
