//! The core's reference CPU kernels for copy/cast and fill: one element at a time, in
//! logical order. They are registered like any backend's rows, at
//! [`REFERENCE_PRIORITY`], so a real CPU backend (`tensor-kernels-cpu`, which `tensor-ops`
//! links) replaces every one of them; `registry()` shows which kind serves each slot
//! (`"reference-copy"` / `"reference-fill"` here). They let the core run, and be tested
//! under Miri, on its own, and they are the oracle the fast engines are tested against.
//! Elementwise ops have no reference rows: without a backend they are `Error::NoKernel`.

use crate::iter::StridedOffsets;
use crate::registry::{KernelImpl, KernelRow, PreparedCall, RawTensor, COPY_SPEC, FILL_SPEC, REFERENCE_PRIORITY};
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

/// [`naive_copy`] as a registered kernel.
#[derive(Debug)]
pub struct ReferenceCopy;

/// [`naive_fill`] as a registered kernel.
#[derive(Debug)]
pub struct ReferenceFill;

impl KernelImpl for ReferenceCopy {
    fn kind(&self) -> &'static str {
        "reference-copy"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        if let ([dst], [src]) = (call.outputs, call.inputs) {
            // SAFETY: the PreparedCall contract is naive_copy's.
            unsafe { naive_copy(dst, src) };
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn priority(&self) -> i32 {
        REFERENCE_PRIORITY
    }
}

impl KernelImpl for ReferenceFill {
    fn kind(&self) -> &'static str {
        "reference-fill"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        if let ([dst], [value]) = (call.outputs, call.params) {
            // SAFETY: the PreparedCall contract is naive_fill's.
            unsafe { naive_fill(dst, *value) };
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn priority(&self) -> i32 {
        REFERENCE_PRIORITY
    }
}

macro_rules! reference_rows {
    ($($d:ident),*) => { $(
        inventory::submit! {
            KernelRow { op: &COPY_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::$d, kernel: &ReferenceCopy }
        }
        inventory::submit! {
            KernelRow { op: &FILL_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::$d, kernel: &ReferenceFill }
        }
    )* };
}
crate::for_each_dtype!(reference_rows;);
