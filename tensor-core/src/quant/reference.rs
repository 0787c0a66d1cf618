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

#[cfg(test)]
mod tests {
    use crate::{quantize_per_channel, quantize_per_tensor, DType, Device, Quantizer, Tensor};

    #[test]
    fn the_reference_rows_quantize_requantize_and_dequantize_through_strides() {
        let x = Tensor::from_vec(vec![0.5f32, 1.5, -2.5, 300.0, f32::NAN, -0.26], &[2, 3]).unwrap();
        let q = quantize_per_tensor(&x.t().unwrap(), 0.5, 1, DType::QInt8).unwrap();
        let ints = q.int_repr().unwrap().to_vec::<i8>().unwrap();
        // x.t() = [0.5, 300, 1.5, NaN, -2.5, -0.26]; / 0.5 rounds half to even, + 1
        assert_eq!(ints, vec![2, 127, 4, 127, -4, 0]);
        let back = q.dequantize().unwrap().to_vec::<f32>().unwrap();
        assert_eq!(back, vec![0.5, 63.0, 1.5, 63.0, -2.5, -0.5]);
        let other =
            Tensor::empty_quantized(&[3, 2], &Quantizer::per_tensor(DType::QUInt8, 1.0, 10).unwrap(), Device::Cpu)
                .unwrap();
        other.copy_(&q).unwrap();
        assert_eq!(other.int_repr().unwrap().to_vec::<u8>().unwrap(), vec![10, 73, 12, 73, 8, 10]);
        let s = Tensor::from_vec(vec![1.0f64, 0.25], &[2]).unwrap();
        let z = Tensor::from_vec(vec![0i64, -1], &[2]).unwrap();
        let p = quantize_per_channel(&x, &s, &z, 0, DType::QInt8).unwrap();
        assert_eq!(p.int_repr().unwrap().to_vec::<i8>().unwrap(), vec![0, 2, -2, 127, 127, -2]);
        assert_eq!(
            p.t().unwrap().dequantize().unwrap().to_vec::<f32>().unwrap(),
            vec![0.0, 32.0, 2.0, 32.0, -2.0, -0.25]
        );
    }
}
