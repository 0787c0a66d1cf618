//! Casting copies: generic over (source, destination) element types, converting on load
//! and store with [`Element::cast`] (Rust `as` rules), with the same layout classes as the
//! same-dtype copy.

use super::class::{classify, CopyClass};
use super::drive::{for_each_run, for_each_strip, grain_for, SharedPtr};
use super::fill::fill_run;
use super::stream::NT_THRESHOLD;
use super::transpose::{plane_scalar, Plane};
use crate::convert::{f8_run_streamed, gather_cast, scatter_cast};
use tensor_core::iter::IterPlan;
use tensor_core::{DType, Element};

/// Copies every element of `plan` from `src` (type `S`) into `dst` (type `D`) with a cast.
///
/// # Safety
/// As [`super::same::copy_same`], with `S`/`D` the operands' element types.
pub(crate) unsafe fn copy_cast<S: Element, D: Element>(plan: &IterPlan, dst: *mut D, src: *const S) {
    let nt = plan.numel() * std::mem::size_of::<D>() >= NT_THRESHOLD;
    let (d, s) = (SharedPtr::new(dst), SharedPtr::new(src as *mut S));
    let inner = plan.inner_strides();
    let (di, si) = (inner[0], inner[1]);
    let g = grain_for(std::mem::size_of::<D>());
    match classify(plan) {
        CopyClass::Empty => {}
        CopyClass::Contiguous | CopyClass::Rows => for_each_run(plan, g, |od, os, n| {
            let (dp, sp) = (d.get().wrapping_offset(od), s.get().wrapping_offset(os));
            // An 8-bit float output or input of a large call: the conversions with
            // non-temporal stores (measured, 256 MiB, 3 paired runs: f8 → f32 28-31 →
            // 34-63 GB/s, f32 → f8 26-37 → 31-42 GB/s).
            // SAFETY: n contiguous elements in both operands (caller).
            if nt && unsafe { f8_run_streamed(dp.cast(), D::DTYPE, sp.cast(), S::DTYPE, n) } {
                return;
            }
            // Runs to or from f32 take the vector conversions of the narrow floats (f16,
            // bf16, f8: the same bits as `cast`); the rest convert element by element.
            if S::DTYPE == DType::F32 {
                // SAFETY: n contiguous elements in both operands (caller).
                return unsafe { scatter_cast(dp.cast(), D::DTYPE, 1, sp.cast(), S::DTYPE, n) };
            }
            if D::DTYPE == DType::F32 {
                // SAFETY: as above.
                return unsafe { gather_cast(dp.cast(), D::DTYPE, sp.cast(), S::DTYPE, 1, n) };
            }
            for i in 0..n {
                // SAFETY: element i of a contiguous run in both operands (caller).
                unsafe { dp.add(i).write(sp.add(i).read().cast::<D>()) };
            }
        }),
        CopyClass::Broadcast => for_each_run(plan, g, |od, os, n| {
            // SAFETY: the run's source element and n destination elements at stride di lie
            // in their operands (caller).
            unsafe { fill_run(d.get().offset(od), di, n, s.get().offset(os).read().cast::<D>(), nt) }
        }),
        CopyClass::Transpose { k } => {
            for_each_strip(plan, k, super::transpose::STRIP, g, |od, os, drs, scs, rows, cols| {
                let p = Plane { dst: d.get().wrapping_offset(od), drs, src: s.get().wrapping_offset(os), scs, rows };
                // SAFETY: the strip's elements are elements of the plan (caller).
                unsafe { plane_scalar(p, cols, |x: S| x.cast::<D>()) }
            })
        }
        CopyClass::General => for_each_run(plan, g, |od, os, n| {
            let (dp, sp) = (d.get().wrapping_offset(od), s.get().wrapping_offset(os));
            for i in 0..n as isize {
                // SAFETY: element i of this run in both operands (caller).
                unsafe { dp.offset(i * di).write(sp.offset(i * si).read().cast::<D>()) };
            }
        }),
    }
}
