//! Same-dtype copies, generated once per element size (the element's bits are moved as
//! `u8`/`u16`/`u32`/`u64`, whatever the dtype).

use super::class::{classify, CopyClass};
use super::drive::{for_each_run, for_each_strip, grain_for, SharedPtr};
use super::fill::fill_run;
use super::gather::gather2;
use super::stream::{copy_bytes, copy_bytes_nt_unfenced, store_fence, NT_THRESHOLD};
use super::transpose::{Plane, TransposeBits};
use tensor_core::iter::IterPlan;

/// Copies every element of `plan` (operand 0 = `dst`, operand 1 = `src`).
///
/// # Safety
/// Every element the plan reaches lies in its operand; the destination elements are
/// distinct and do not overlap the source ones; `T` is the element's bit carrier.
pub(crate) unsafe fn copy_same<T: TransposeBits>(plan: &IterPlan, dst: *mut T, src: *const T) {
    let e = std::mem::size_of::<T>();
    let nt = plan.numel() * e >= NT_THRESHOLD;
    let (d, s) = (SharedPtr::new(dst), SharedPtr::new(src as *mut T));
    let inner = plan.inner_strides();
    let (di, si) = (inner[0], inner[1]);
    let g = grain_for(e);
    match classify(plan) {
        CopyClass::Empty => {}
        CopyClass::Contiguous | CopyClass::Rows => for_each_run(plan, g, |od, os, n| {
            // SAFETY: a run of n elements contiguous in both operands (class), inside them
            // (caller), disjoint from each other (caller).
            unsafe { copy_bytes(d.get().offset(od) as *mut u8, s.get().offset(os) as *const u8, n * e, nt) }
        }),
        CopyClass::Broadcast => for_each_run(plan, g, |od, os, n| {
            // SAFETY: the source element of this run and the n destination elements at
            // stride di lie in their operands (caller).
            unsafe { fill_run(d.get().offset(od), di, n, s.get().offset(os).read(), nt) }
        }),
        CopyClass::Transpose { k } => for_each_strip(plan, k, T::strip(nt), g, |od, os, drs, scs, rows, cols| {
            let p = Plane { dst: d.get().wrapping_offset(od), drs, src: s.get().wrapping_offset(os), scs, rows };
            // SAFETY: the strip's elements are elements of the plan (caller).
            unsafe { T::plane(p, cols, nt) }
        }),
        CopyClass::General if nt && di == 1 => for_each_run(plan, g, |od, os, n| {
            // SAFETY: a run of n elements, contiguous in the destination (di == 1) and at
            // stride si in the source, inside both operands and disjoint (caller).
            unsafe { gather_stream(d.get().wrapping_offset(od), s.get().wrapping_offset(os), si, n) }
        }),
        CopyClass::General if di == 1 && si == 2 => for_each_run(plan, g, |od, os, n| {
            // SAFETY: a run of n elements, contiguous in the destination and every other
            // element in the source, inside both operands and disjoint (caller).
            unsafe { gather2(d.get().wrapping_offset(od), s.get().wrapping_offset(os), n) }
        }),
        CopyClass::General => for_each_run(plan, g, |od, os, n| {
            let (dp, sp) = (d.get().wrapping_offset(od), s.get().wrapping_offset(os));
            for i in 0..n as isize {
                // SAFETY: element i of this run in both operands (caller).
                unsafe { dp.offset(i * di).write(sp.offset(i * si).read()) };
            }
        }),
    }
}

/// Elements gathered per piece of a streamed strided run (4 KiB of f32: stays in L1).
const GATHER: usize = 1024;

/// A 64-byte aligned gather buffer.
#[repr(C, align(64))]
struct GatherBuf([u64; GATHER]);

/// `dst[i] = src[i * si]` for `i < n` into a contiguous destination too large for the
/// cache: gathers `GATHER` elements at a time into an L1 buffer (a SIMD deinterleave for
/// the common stride 2), then writes them with streaming stores, so the
/// destination costs no read-for-ownership. One fence per run.
///
/// # Safety
/// `dst` writable for `n` contiguous elements, `src` readable at `i * si` for `i < n`,
/// the two disjoint; `T` a plain value of at most 8 bytes.
unsafe fn gather_stream<T: Copy>(dst: *mut T, src: *const T, si: isize, n: usize) {
    let e = std::mem::size_of::<T>();
    let mut buf = std::mem::MaybeUninit::<GatherBuf>::uninit();
    let bp = buf.as_mut_ptr() as *mut T;
    let mut i = 0;
    while i < n {
        let m = GATHER.min(n - i);
        // SAFETY: elements i..i+m of the run (caller).
        let s = unsafe { src.offset(i as isize * si) };
        if si == 2 {
            // SAFETY: m <= GATHER elements of T (at most 8 bytes) fit the buffer; source
            // elements 2j, j < m, of this piece (caller).
            unsafe { gather2(bp, s, m) };
        } else {
            for j in 0..m {
                // SAFETY: as above, at the source stride.
                unsafe { bp.add(j).write(s.offset(j as isize * si).read()) };
            }
        }
        // SAFETY: m elements written to the buffer above; dst elements i..i+m (caller).
        unsafe { copy_bytes_nt_unfenced(dst.add(i) as *mut u8, bp as *const u8, m * e) };
        i += m;
    }
    store_fence();
}
