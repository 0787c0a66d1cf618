//! The core's reference kernels of the quantized copies ([`QUANTIZED_COPY_SPEC`],
//! [`QUANTIZE_CHANNELS_SPEC`], [`DEQUANTIZE_CHANNELS_SPEC`]): one element at a time, at
//! [`REFERENCE_PRIORITY`], so the core quantizes and dequantizes on its own (and under
//! Miri); a CPU backend's rows replace them. They are also the oracle the backends' quantized
//! paths are tested against.

use super::Affine;
use crate::iter::StridedOffsets;
use crate::registry::{
    KernelImpl, KernelRow, PreparedCall, RawTensor, DEQUANTIZE_CHANNELS_SPEC, QUANTIZED_COPY_SPEC,
    QUANTIZE_CHANNELS_SPEC, REFERENCE_PRIORITY,
};
use crate::{DType, DeviceKind, Element, Error, Layout, Result, Scalar};

/// The f32 function of one element: the inputs' values (dequantized), the params.
type ElemFn = fn(&[f32], &[Scalar]) -> f32;

/// A reference map kernel over f32 values that honours `CallExtra::Quantized`.
#[derive(Debug)]
struct ReferenceQuantMap {
    f: ElemFn,
}

/// Reads element `off` of `t` as f32 (Rust `as`).
///
/// # Safety
/// `off` addresses an element of `t` inside its locked storage.
unsafe fn read(t: &RawTensor<'_>, off: isize) -> f32 {
    // SAFETY: caller's contract.
    crate::with_dtype!(t.dtype, T => unsafe { (t.ptr as *const T).offset(off).read_unaligned() }.cast::<f32>())
}

/// Writes `v` (Rust `as`) to element `off` of `t`.
///
/// # Safety
/// As [`read`], the storage locked for writing.
unsafe fn write(t: &RawTensor<'_>, off: isize, v: f32) {
    // SAFETY: caller's contract.
    crate::with_dtype!(t.dtype, T => unsafe { (t.ptr as *mut T).offset(off).write_unaligned(v.cast::<T>()) })
}

impl KernelImpl for ReferenceQuantMap {
    fn kind(&self) -> &'static str {
        "reference-quantized"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        let [out] = call.outputs else { return Err(Error::invalid(call.op.name, "one output")) };
        let affines = call.quantized().copied().unwrap_or_default();
        let affine = |k: usize| -> Option<Affine> { affines.get(k).copied().flatten() };
        let mut walks: Vec<StridedOffsets<'_>> =
            call.inputs.iter().map(|t| StridedOffsets::new(t.shape, t.strides)).collect();
        let mut vals = vec![0f32; call.inputs.len()];
        for o in StridedOffsets::new(out.shape, out.strides) {
            for (k, (t, w)) in call.inputs.iter().zip(&mut walks).enumerate() {
                let off = w.next().ok_or_else(|| Error::invalid(call.op.name, "operand shapes differ"))?;
                // SAFETY: the offsets come from each operand's own shape and strides on the
                // plan (the PreparedCall contract: in bounds, storages locked).
                let v = unsafe { read(t, off) };
                vals[k] = affine(k + 1).map_or(v, |a| a.dequantize(v));
            }
            let r = (self.f)(&vals, call.params);
            let r = affine(0).map_or(r, |a| a.quantize(r));
            // SAFETY: as above; the output is locked for writing and has no internal overlap,
            // and an input aliasing it exactly was read at this element just before.
            unsafe { write(out, o, r) };
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn priority(&self) -> i32 {
        REFERENCE_PRIORITY
    }
    fn takes_quantized(&self) -> bool {
        true
    }
}

fn identity(v: &[f32], _: &[Scalar]) -> f32 {
    v[0]
}

fn quantize_channels(v: &[f32], p: &[Scalar]) -> f32 {
    let [qmin, qmax, nan] = [0, 1, 2].map(|k| p.get(k).map_or(0.0, |s| s.to::<f32>()));
    Affine { scale: 1.0, inv_scale: v[1], zero_point: v[2], qmin, qmax, nan }.quantize(v[0])
}

fn dequantize_channels(v: &[f32], _: &[Scalar]) -> f32 {
    (v[0] - v[2]) * v[1]
}

static IDENTITY: ReferenceQuantMap = ReferenceQuantMap { f: identity };
static QUANTIZE: ReferenceQuantMap = ReferenceQuantMap { f: quantize_channels };
static DEQUANTIZE: ReferenceQuantMap = ReferenceQuantMap { f: dequantize_channels };

inventory::submit! {
    KernelRow { op: &QUANTIZED_COPY_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::F32, kernel: &IDENTITY }
}
inventory::submit! {
    KernelRow { op: &QUANTIZE_CHANNELS_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::F32, kernel: &QUANTIZE }
}
inventory::submit! {
    KernelRow { op: &DEQUANTIZE_CHANNELS_SPEC, device: DeviceKind::Cpu, layout: Layout::Strided, dtype: DType::F32, kernel: &DEQUANTIZE }
}
