//! The core's reference CPU kernels for copy/cast and fill: one element at a time, in
//! logical order. They are registered like any backend's rows, at
//! [`REFERENCE_PRIORITY`], so a real CPU backend (`tensor-kernels-cpu`, which `tensor-ops`
//! links) replaces every one of them; `registry()` shows which kind serves each slot
//! (`"reference-copy"` / `"reference-fill"` here). They let the core run, and be tested
//! under Miri, on its own, and they are the oracle the fast engines are tested against.
//! Elementwise ops have no reference rows: without a backend they are `Error::NoKernel`.

use crate::iter::StridedOffsets;
use crate::registry::{CopyKernel, FillKernel, KernelRow, RawTensor, COPY_SPEC, FILL_SPEC, REFERENCE_PRIORITY};
use crate::{DType, DeviceKind, Element, Layout, Result, Scalar};

/// Reference strided cast-copy, one element at a time.
///
/// # Safety
/// As [`crate::registry::CopyFn`]: locked storages, in-bounds views, equal shapes.
pub unsafe fn naive_copy(dst: &RawTensor<'_>, src: &RawTensor<'_>) {
    crate::with_dtype!(dst.dtype, D => crate::with_dtype!(src.dtype, S => {
        let (d, s) = (dst.ptr as *mut D, src.ptr as *const S);
        let offs = StridedOffsets::new(dst.shape, dst.strides).zip(StridedOffsets::new(src.shape, src.strides));
        for (od, os) in offs {
            // SAFETY: offsets come from the views' own shape/strides (caller's contract).
            unsafe { d.offset(od).write(s.offset(os).read().cast::<D>()) };
        }
    }))
}

/// Reference strided fill.
///
/// # Safety
/// As [`crate::registry::FillFn`].
pub unsafe fn naive_fill(dst: &RawTensor<'_>, value: Scalar) {
    crate::with_dtype!(dst.dtype, D => {
        let v = D::from_scalar(value);
        for off in StridedOffsets::new(dst.shape, dst.strides) {
            // SAFETY: offsets come from the view's own shape/strides (caller's contract).
            unsafe { (dst.ptr as *mut D).offset(off).write(v) };
        }
    })
}

/// [`naive_copy`] as a [`crate::registry::CopyFn`].
///
/// # Safety
/// As [`naive_copy`].
unsafe fn reference_copy(dst: &RawTensor<'_>, src: &RawTensor<'_>) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { naive_copy(dst, src) };
    Ok(())
}

/// [`naive_fill`] as a [`crate::registry::FillFn`].
///
/// # Safety
/// As [`naive_fill`].
unsafe fn reference_fill(dst: &RawTensor<'_>, value: Scalar) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { naive_fill(dst, value) };
    Ok(())
}

/// The reference copy as a kernel, below every backend's.
static REFERENCE_COPY: CopyKernel =
    CopyKernel { kind: "reference-copy", func: reference_copy, priority: REFERENCE_PRIORITY };
/// The reference fill as a kernel, below every backend's.
static REFERENCE_FILL: FillKernel =
    FillKernel { kind: "reference-fill", func: reference_fill, priority: REFERENCE_PRIORITY };

macro_rules! reference_rows {
    ($($d:ident),*) => { $(
        inventory::submit! {
            KernelRow { op: &COPY_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::$d, kernel: &REFERENCE_COPY }
        }
        inventory::submit! {
            KernelRow { op: &FILL_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::$d, kernel: &REFERENCE_FILL }
        }
    )* };
}
crate::for_each_dtype!(reference_rows;);
