//! The CPU rows of the core's quantizing copies ([`QUANTIZED_COPY_SPEC`] and
//! [`QUANTIZE_CHANNELS_SPEC`]): contiguous f32 runs quantized into qint8/quint8 (or
//! qint8/quint8 runs dequantized into f32) in one pass from registers to memory
//! (non-temporal stores at DRAM sizes), one affine per run: the tensor's for
//! `quantize_per_tensor` and `dequantize`, the run's channel for `quantize_per_channel` along
//! an outer axis, each element's channel when the axis is the innermost. Every other call
//! (strided runs, qint32, a requantizing copy) goes to the map driver with the same f32
//! body.
//!
//! The arithmetic is the core's rule ([`Affine::quantize`]) step for step, so both paths
//! store the same integers.
//!
//! [`QUANTIZED_COPY_SPEC`]: tensor_core::registry::QUANTIZED_COPY_SPEC
//! [`QUANTIZE_CHANNELS_SPEC`]: tensor_core::registry::QUANTIZE_CHANNELS_SPEC

use crate::copy::stream::{store_fence, NT_THRESHOLD};
use crate::kernel::MapKernel;
use crate::parallel::{for_each_chunk, GRAIN};
use crate::simd_level::{simd_level, SimdLevel};
use tensor_core::iter::IterPlan;
use tensor_core::quant::Affine;
use tensor_core::registry::{KernelImpl, PreparedCall, RawTensor};
use tensor_core::{DType, Result};

/// Where a run's affine comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AffineSource {
    /// The output's quantizer (`CallExtra::Quantized`): `QUANTIZED_COPY_SPEC`.
    Output,
    /// Inputs 1 and 2 (the inverse scales and the zero points, broadcast f32) and
    /// params `[qmin, qmax, nan]`: `QUANTIZE_CHANNELS_SPEC`.
    ChannelInputs,
}

/// A quantizing copy: the streaming pass where it applies, else the map driver.
#[derive(Debug)]
pub(crate) struct QuantizeKernel {
    /// The f32 map kernel serving every call the streaming pass does not take.
    pub(crate) map: MapKernel,
    /// Where the affine of a run comes from.
    pub(crate) source: AffineSource,
}

impl KernelImpl for QuantizeKernel {
    fn kind(&self) -> &'static str {
        "cpu-quantize"
    }
    fn takes_quantized(&self) -> bool {
        true
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        // SAFETY: the PreparedCall contract (in-bounds views of locked storages on one
        // canonical plan, the output exclusive) is what `stream_runs` needs.
        if unsafe { self.stream_runs(call) } {
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.map.run(call) }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl QuantizeKernel {
    /// Runs `call` with [`quantize_bytes`] (or [`dequantize_bytes`]) run by run when the
    /// output and the input (one f32, the other qint8/quint8 bytes) are both contiguous along
    /// the run and the affine is constant along it; `false` (nothing written) otherwise.
    ///
    /// # Safety
    /// The `PreparedCall` contract.
    unsafe fn stream_runs(&self, call: &PreparedCall<'_>) -> bool {
        let ([out], [x, rest @ ..]) = (call.outputs, call.inputs) else { return false };
        let affines = call.quantized();
        let byte = |t: &RawTensor<'_>| matches!(t.dtype, DType::I8 | DType::U8);
        let f32 = |t: &RawTensor<'_>| t.dtype == DType::F32;
        let (dequantize, fixed) = match self.source {
            AffineSource::Output => match (affines.and_then(|q| q[0]), affines.and_then(|q| q[1])) {
                (Some(a), None) if rest.is_empty() && byte(out) && f32(x) => (false, Some(a)),
                (None, Some(a)) if rest.is_empty() && f32(out) && byte(x) => (true, Some(a)),
                _ => return false,
            },
            AffineSource::ChannelInputs => {
                let fits = byte(out) && f32(x) && rest.len() == 2 && rest.iter().all(f32);
                if affines.is_some() || !fits || call.params.len() != 3 {
                    return false;
                }
                (false, None)
            }
        };
        let signed = if dequantize { x.dtype == DType::I8 } else { out.dtype == DType::I8 };
        let plan = IterPlan::from_canonical(out.shape, out.strides, call.inputs.iter().map(|t| t.strides));
        let inner = plan.inner_strides();
        // The output and x along the run; the channel's scale and zero point fixed on it,
        // or (the channel axis innermost) along it.
        let along = inner[2..].iter().all(|&s| s == 1) && !inner[2..].is_empty();
        if inner[0] != 1 || inner[1] != 1 || !(along || inner[2..].iter().all(|&s| s == 0)) {
            return false;
        }
        let total = plan.numel();
        let streaming = total * out.dtype.size() >= NT_THRESHOLD;
        let p = |k: usize| call.params.get(k).map_or(0.0, |v| v.to::<f32>());
        let (qmin, qmax, nan) = (p(0), p(1), p(2));
        // Addresses as integers, so the tasks can share them.
        let channel = rest.iter().map(|t: &RawTensor<'_>| t.ptr as usize).collect::<Vec<_>>();
        let channel_affine = |offsets: &[isize]| -> Affine {
            // SAFETY: the offsets address elements of the inputs' views (in bounds).
            let at = |k: usize| unsafe { *(channel[k] as *const f32).offset(offsets[2 + k]) };
            Affine { scale: 1.0, inv_scale: at(0), zero_point: at(1), qmin, qmax, nan }
        };
        let (inner_len, nops) = (plan.inner_len(), 1 + call.inputs.len());
        let (dst, src) = (out.ptr as usize, x.ptr as usize);
        for_each_chunk(total, GRAIN, |range| {
            let mut offsets = [0isize; 4];
            let mut i = range.start;
            while i < range.end {
                let (row, col) = (i / inner_len, i % inner_len);
                plan.row_offsets(row, &mut offsets[..nops]);
                let n = (inner_len - col).min(range.end - i);
                let a = fixed.unwrap_or_else(|| channel_affine(&offsets));
                let (d, s) = (offsets[0] + col as isize, offsets[1] + col as isize);
                // The scales and zero points of each element, when the channel is along the run.
                let lanes = along.then(|| {
                    let at = |k: usize| (channel[k] as *const f32).wrapping_offset(offsets[2 + k] + col as isize);
                    (at(0), at(1))
                });
                // SAFETY: elements col..col+n of this row are in bounds for the output and x
                // (one f32, the other i8/u8, both stride 1), and this task's alone.
                unsafe {
                    if dequantize {
                        let (d, s) = ((dst as *mut f32).offset(d), (src as *const u8).offset(s));
                        dequantize_bytes(d, signed, s, n, &a, streaming)
                    } else {
                        let (d, s) = ((dst as *mut u8).offset(d), (src as *const f32).offset(s));
                        quantize_bytes_with(d, signed, s, n, &a, lanes, streaming)
                    }
                };
                i += n;
            }
            if streaming {
                store_fence();
            }
        });
        true
    }
}

/// `dst[i] = quantize(src[i])` as i8 (`signed`) or u8 for `n` contiguous elements, in one
/// pass; with `streaming`, the 32-byte-aligned body is written with non-temporal stores (the
/// caller fences).
///
/// # Safety
/// `src` valid for `n` f32 reads, `dst` for `n` byte writes; no overlap.
pub(crate) unsafe fn quantize_bytes(
    dst: *mut u8,
    signed: bool,
    src: *const f32,
    n: usize,
    a: &Affine,
    streaming: bool,
) {
    // SAFETY: forwarded.
    unsafe { quantize_bytes_with(dst, signed, src, n, a, None, streaming) }
}

/// [`quantize_bytes`] where `lanes`, when given, holds each element's inverse scale and
/// zero point (`n` f32 each; `a` then gives only the range and the NaN result).
///
/// # Safety
/// As [`quantize_bytes`], and both `lanes` pointers valid for `n` f32 reads.
unsafe fn quantize_bytes_with(
    dst: *mut u8,
    signed: bool,
    src: *const f32,
    n: usize,
    a: &Affine,
    lanes: Option<(*const f32, *const f32)>,
    streaming: bool,
) {
    #[cfg(target_arch = "x86_64")]
    // NaN → qmax falls out of `min(v, qmax)` (it returns its second operand on NaN); the
    // rule's NaN is qmax for both byte dtypes, checked here.
    if simd_level() >= SimdLevel::Avx2 && a.nan == a.qmax {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::quantize_bytes(dst, signed, src, n, a, lanes, streaming) };
    }
    let _ = streaming;
    for j in 0..n {
        // SAFETY: j < n, per the caller.
        unsafe {
            let one = match lanes {
                Some((inv, zp)) => Affine { inv_scale: *inv.add(j), zero_point: *zp.add(j), ..*a },
                None => *a,
            };
            dst.add(j).write(one.quantize_byte(*src.add(j), signed));
        }
    }
}

/// `dst[i] = dequantize(src[i])` from i8 (`signed`) or u8 for `n` contiguous elements, in
/// one pass; with `streaming`, the 32-byte-aligned body is written with non-temporal stores
/// (the caller fences).
///
/// # Safety
/// `src` valid for `n` byte reads, `dst` for `n` f32 writes; no overlap.
pub(crate) unsafe fn dequantize_bytes(
    dst: *mut f32,
    signed: bool,
    src: *const u8,
    n: usize,
    a: &Affine,
    streaming: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::dequantize_bytes(dst, signed, src, n, a, streaming) };
    }
    let _ = streaming;
    for j in 0..n {
        // SAFETY: j < n, per the caller.
        unsafe {
            *dst.add(j) = a.dequantize_byte(*src.add(j), signed);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::convert_int::avx2::pack_bytes;
    use std::arch::x86_64::*;
    use tensor_core::quant::Affine;

    /// # Safety
    /// AVX2 is available; as [`super::quantize_bytes`], and `a.nan == a.qmax`.
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn quantize_bytes(
        dst: *mut u8,
        signed: bool,
        src: *const f32,
        n: usize,
        a: &Affine,
        lanes: Option<(*const f32, *const f32)>,
        streaming: bool,
    ) {
        let scalar = |j: usize| {
            // SAFETY: j < n (callers): in bounds of src, dst and the lanes.
            unsafe {
                let one = match lanes {
                    Some((inv, zp)) => Affine { inv_scale: *inv.add(j), zero_point: *zp.add(j), ..*a },
                    None => *a,
                };
                dst.add(j).write(one.quantize_byte(*src.add(j), signed));
            }
        };
        let (inv1, zp1) = (_mm256_set1_ps(a.inv_scale), _mm256_set1_ps(a.zero_point));
        let (lo, hi) = (_mm256_set1_ps(a.qmin), _mm256_set1_ps(a.qmax));
        let q8 = |k: usize| {
            // SAFETY: callers pass k + 8 <= n (for src and the lanes).
            let (x, inv, zp) = unsafe {
                match lanes {
                    Some((inv, zp)) => {
                        (_mm256_loadu_ps(src.add(k)), _mm256_loadu_ps(inv.add(k)), _mm256_loadu_ps(zp.add(k)))
                    }
                    None => (_mm256_loadu_ps(src.add(k)), inv1, zp1),
                }
            };
            let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(x, inv));
            // min(NaN, qmax) is qmax: the rule's NaN for the byte dtypes.
            _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(_mm256_add_ps(r, zp), hi), lo))
        };
        let head = if streaming { dst.align_offset(32).min(n) } else { 0 };
        (0..head).for_each(scalar);
        let mut i = head;
        while i + 32 <= n {
            let bytes = pack_bytes([q8(i), q8(i + 8), q8(i + 16), q8(i + 24)], signed);
            // SAFETY: i + 32 <= n byte slots; with streaming, dst + i is 32-byte aligned
            // (the head above).
            unsafe {
                if streaming {
                    _mm256_stream_si256(dst.add(i) as *mut __m256i, bytes)
                } else {
                    _mm256_storeu_si256(dst.add(i) as *mut __m256i, bytes)
                }
            }
            i += 32;
        }
        (i..n).for_each(scalar);
    }

    /// # Safety
    /// AVX2 is available; as [`super::dequantize_bytes`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dequantize_bytes(
        dst: *mut f32,
        signed: bool,
        src: *const u8,
        n: usize,
        a: &Affine,
        streaming: bool,
    ) {
        let scalar = |j: usize| {
            // SAFETY: j < n (callers).
            unsafe {
                *dst.add(j) = a.dequantize_byte(*src.add(j), signed);
            }
        };
        let (zp, scale) = (_mm256_set1_ps(a.zero_point), _mm256_set1_ps(a.scale));
        let head = if streaming { dst.align_offset(32).min(n) } else { 0 };
        (0..head).for_each(scalar);
        let mut i = head;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements of each; with streaming, dst + i is 32-byte
            // aligned (the head above, over an f32-aligned dst).
            unsafe {
                let raw = _mm_loadl_epi64(src.add(i) as *const __m128i);
                let ints = if signed { _mm256_cvtepi8_epi32(raw) } else { _mm256_cvtepu8_epi32(raw) };
                // (q - zp) * scale: the rule's two steps (q - zp is exact).
                let v = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(ints), zp), scale);
                if streaming {
                    _mm256_stream_ps(dst.add(i), v)
                } else {
                    _mm256_storeu_ps(dst.add(i), v)
                }
            }
            i += 8;
        }
        (i..n).for_each(scalar);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streaming_pass_gives_the_rule_at_every_alignment() {
        let xs: Vec<f32> = (-700..700)
            .map(|i| i as f32 * 0.173)
            .chain([0.5, 1.5, 2.5, -0.5, -2.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30, -0.0])
            .collect();
        for (dtype, scale, zp) in [(DType::QInt8, 0.1, 3), (DType::QUInt8, 0.5, 128), (DType::QInt8, 1.0, -128)] {
            let a = Affine::new(dtype, scale, zp);
            let signed = dtype == DType::QInt8;
            for start in 0..33 {
                for streaming in [false, true] {
                    let src = &xs[start..];
                    let mut got = vec![0xAAu8; src.len() + 1];
                    // SAFETY: got holds src.len() bytes from offset 1.
                    unsafe { quantize_bytes(got.as_mut_ptr().add(1), signed, src.as_ptr(), src.len(), &a, streaming) };
                    store_fence();
                    let want: Vec<u8> = src
                        .iter()
                        .map(|&x| if signed { a.quantize(x) as i8 as u8 } else { a.quantize(x) as u8 })
                        .collect();
                    assert_eq!(&got[1..], &want[..], "{dtype} start {start} streaming {streaming}");
                    assert_eq!(got[0], 0xAA);
                    let mut back = vec![f32::NAN; want.len()];
                    // SAFETY: back holds want.len() f32.
                    unsafe { dequantize_bytes(back.as_mut_ptr(), signed, want.as_ptr(), want.len(), &a, streaming) };
                    store_fence();
                    let model = |&b: &u8| a.dequantize(if signed { b as i8 as f32 } else { b as f32 }).to_bits();
                    let bits: Vec<u32> = back.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(bits, want.iter().map(model).collect::<Vec<_>>(), "{dtype} back");
                    // A scale and zero point per element (the channel axis innermost).
                    let inv: Vec<f32> = (0..src.len()).map(|i| 1.0 / (0.05 + (i % 7) as f32 * 0.1)).collect();
                    let zps: Vec<f32> = (0..src.len()).map(|i| a.qmin + (i % 5) as f32 * 3.0).collect();
                    let mut per = vec![0u8; src.len()];
                    let lanes = Some((inv.as_ptr(), zps.as_ptr()));
                    // SAFETY: per, inv and zps hold src.len() elements.
                    unsafe {
                        quantize_bytes_with(per.as_mut_ptr(), signed, src.as_ptr(), src.len(), &a, lanes, streaming)
                    };
                    store_fence();
                    let want: Vec<u8> = (0..src.len())
                        .map(|i| {
                            let v = Affine { inv_scale: inv[i], zero_point: zps[i], ..a }.quantize(src[i]);
                            if signed {
                                v as i8 as u8
                            } else {
                                v as u8
                            }
                        })
                        .collect();
                    assert_eq!(per, want, "{dtype} per element");
                }
            }
        }
    }
}
