//! Same-dtype copies, generated once per element size (the element's bits are moved as
//! `u8`/`u16`/`u32`/`u64`, whatever the dtype).

use super::class::{classify, CopyClass};
use super::drive::{for_each_run, for_each_strip, SharedPtr};
use super::stream::{copy_bytes, NT_THRESHOLD};
use super::transpose::{Plane, TransposeBits};
use crate::cpu::fill::fill_run;
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
    match classify(plan) {
        CopyClass::Empty => {}
        CopyClass::Contiguous | CopyClass::Rows => for_each_run(plan, |od, os, n| {
            // SAFETY: a run of n elements contiguous in both operands (class), inside them
            // (caller), disjoint from each other (caller).
            unsafe { copy_bytes(d.get().offset(od) as *mut u8, s.get().offset(os) as *const u8, n * e, nt) }
        }),
        CopyClass::Broadcast => for_each_run(plan, |od, os, n| {
            // SAFETY: the source element of this run and the n destination elements at
            // stride di lie in their operands (caller).
            unsafe { fill_run(d.get().offset(od), di, n, s.get().offset(os).read(), nt) }
        }),
        CopyClass::Transpose { k } => for_each_strip(plan, k, |od, os, drs, scs, rows, cols| {
            let p = Plane { dst: d.get().wrapping_offset(od), drs, src: s.get().wrapping_offset(os), scs, rows };
            // SAFETY: the strip's elements are elements of the plan (caller).
            unsafe { T::plane(p, cols, nt) }
        }),
        CopyClass::General => for_each_run(plan, |od, os, n| {
            let (dp, sp) = (d.get().wrapping_offset(od), s.get().wrapping_offset(os));
            for i in 0..n as isize {
                // SAFETY: element i of this run in both operands (caller).
                unsafe { dp.offset(i * di).write(sp.offset(i * si).read()) };
            }
        }),
    }
}
