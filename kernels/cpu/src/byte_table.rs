//! Unary maps from a one-byte dtype to a one-byte dtype through a conversion (qint8/quint8
//! dequantized and requantized, the 8-bit floats decoded and encoded): an input byte has
//! only 256 values, so the call first runs the op's own pipeline — the same driver, block
//! function, quantizers and params — over those 256 values into a table, then maps every
//! element through the table. The results are the driver's by construction (a map's body
//! sees only its element), for every op a definition lists, built-in or a user's.
//!
//! The table is applied with AVX2: as `max`/`min` on bytes when it is a clamp in signed or
//! unsigned order (`relu` with the input's quantizer is `max(q, zero_point)`), else by
//! sixteen 16-byte shuffles; at DRAM sizes the output is written with non-temporal stores.

use crate::copy::stream::{store_fence, NT_THRESHOLD};
use crate::kernel::MapKernel;
use crate::parallel::{for_each_chunk, GRAIN};
use crate::simd_level::{simd_level, SimdLevel};
use tensor_core::iter::IterPlan;
use tensor_core::quant::OperandAffines;
use tensor_core::registry::RawTensor;
use tensor_core::{DType, Result};

/// Elements from which a call builds its table (below, the driver's own passes are cheaper
/// than the 256-value run and the classification).
const TABLE_MIN: usize = 1 << 16;

/// How a table maps a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `clamp(x, lo, hi)` comparing bytes as i8.
    ClampSigned(i8, i8),
    /// `clamp(x, lo, hi)` comparing bytes as u8.
    ClampUnsigned(u8, u8),
    /// Anything else.
    General,
}

/// The shape of `table`.
fn shape_of(table: &[u8; 256]) -> Shape {
    let (slo, shi) = (table[0x80] as i8, table[0x7f] as i8);
    if slo <= shi && (0..=255u8).all(|b| table[b as usize] as i8 == (b as i8).clamp(slo, shi)) {
        return Shape::ClampSigned(slo, shi);
    }
    let (ulo, uhi) = (table[0], table[255]);
    if ulo <= uhi && (0..=255u8).all(|b| table[b as usize] == b.clamp(ulo, uhi)) {
        return Shape::ClampUnsigned(ulo, uhi);
    }
    Shape::General
}

/// Runs the call through a table when it qualifies (one input; one-byte input and output
/// dtypes; a conversion on the way, which is what makes the driver's passes costly; at least
/// [`TABLE_MIN`] elements); `None` (nothing written) otherwise.
///
/// `run` is the driver with the call's kernel, params and quantizers, used to build the
/// table over a 256-element contiguous call.
///
/// # Safety
/// As the driver's `run_map_canonical` (operands on one canonical plan, in bounds, the
/// output exclusive and aliasing the input exactly or not at all).
pub(crate) unsafe fn try_run(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    quant: Option<&OperandAffines>,
    run: impl FnOnce(&RawTensor<'_>, &[RawTensor<'_>]) -> Result<()>,
) -> Option<Result<()>> {
    let [input] = inputs else { return None };
    let affine = |j: usize| quant.and_then(|q| q[j]);
    let converts =
        input.dtype != kernel.compute || out.dtype != kernel.output || affine(0).is_some() || affine(1).is_some();
    let numel: usize = out.shape.iter().product();
    if out.dtype.size() != 1 || input.dtype.size() != 1 || !converts || numel < TABLE_MIN {
        return None;
    }
    let values: [u8; 256] = std::array::from_fn(|b| b as u8);
    let mut table = [0u8; 256];
    let (shape, strides) = ([256usize], [1isize]);
    let raw =
        |ptr: *mut u8, dtype: DType| RawTensor { ptr, dtype, shape: &shape, strides: &strides, device: out.device };
    let table_out = raw(table.as_mut_ptr(), out.dtype);
    // The driver reads the values; it never writes an input.
    let table_in = raw(values.as_ptr() as *mut u8, input.dtype);
    if let Err(e) = run(&table_out, &[table_in]) {
        return Some(Err(e));
    }
    let plan = IterPlan::from_canonical(out.shape, out.strides, [input.strides].into_iter());
    let inner = plan.inner_strides();
    let (inner_len, total) = (plan.inner_len(), plan.numel());
    let contiguous = inner[0] == 1 && inner[1] == 1;
    let streaming = contiguous && total >= NT_THRESHOLD;
    let shape = shape_of(&table);
    let (dst, src) = (out.ptr as usize, input.ptr as usize);
    for_each_chunk(total, GRAIN, |range| {
        let mut offsets = [0isize; 2];
        let mut i = range.start;
        while i < range.end {
            let (row, col) = (i / inner_len, i % inner_len);
            plan.row_offsets(row, &mut offsets);
            let n = (inner_len - col).min(range.end - i);
            let d = (dst as *mut u8).wrapping_offset(offsets[0] + col as isize * inner[0]);
            let s = (src as *const u8).wrapping_offset(offsets[1] + col as isize * inner[1]);
            // SAFETY: elements col..col+n of this row are in bounds for both operands (the
            // plan's strides) and the output's are this task's alone.
            unsafe {
                if contiguous {
                    apply_run(d, s, n, &table, shape, streaming)
                } else {
                    for k in 0..n as isize {
                        *d.offset(k * inner[0]) = table[*s.offset(k * inner[1]) as usize];
                    }
                }
            }
            i += n;
        }
        if streaming {
            store_fence();
        }
    });
    Some(Ok(()))
}

/// `dst[i] = table[src[i]]` for `n` contiguous bytes (`shape` is the table's).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; they are equal or do not overlap.
unsafe fn apply_run(dst: *mut u8, src: *const u8, n: usize, table: &[u8; 256], shape: Shape, streaming: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::apply_run(dst, src, n, table, shape, streaming) };
    }
    let _ = (shape, streaming);
    for k in 0..n {
        // SAFETY: k < n, per the caller.
        unsafe { *dst.add(k) = table[*src.add(k) as usize] };
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Shape;
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX2 is available; as [`super::apply_run`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn apply_run(
        dst: *mut u8,
        src: *const u8,
        n: usize,
        table: &[u8; 256],
        shape: Shape,
        streaming: bool,
    ) {
        // Each sixteenth of the table in both 128-bit lanes (the shuffle's reach).
        let parts: [__m256i; 16] = std::array::from_fn(|k| {
            // SAFETY: 16 bytes from 16k, within the 256-byte table.
            let part = unsafe { _mm_loadu_si128(table.as_ptr().add(16 * k) as *const __m128i) };
            _mm256_broadcastsi128_si256(part)
        });
        let (sixteen, bias) = (_mm256_set1_epi8(16), _mm256_set1_epi8(0x70));
        let map32 = |x: __m256i| match shape {
            Shape::ClampSigned(lo, hi) => {
                _mm256_min_epi8(_mm256_max_epi8(x, _mm256_set1_epi8(lo)), _mm256_set1_epi8(hi))
            }
            Shape::ClampUnsigned(lo, hi) => {
                _mm256_min_epu8(_mm256_max_epu8(x, _mm256_set1_epi8(lo as i8)), _mm256_set1_epi8(hi as i8))
            }
            Shape::General => {
                // Part k answers where x - 16k (wrapping) is 0..15: + 0x70 (saturating)
                // keeps bit 7 clear exactly there, and the shuffle zeroes every other lane.
                let (mut r, mut t) = (_mm256_setzero_si256(), x);
                for part in &parts {
                    r = _mm256_or_si256(r, _mm256_shuffle_epi8(*part, _mm256_adds_epu8(t, bias)));
                    t = _mm256_sub_epi8(t, sixteen);
                }
                r
            }
        };
        let scalar = |k: usize| {
            // SAFETY: k < n (callers).
            unsafe { *dst.add(k) = table[*src.add(k) as usize] };
        };
        let head = if streaming { dst.align_offset(32).min(n) } else { 0 };
        (0..head).for_each(scalar);
        let mut i = head;
        while i + 32 <= n {
            // SAFETY: i + 32 <= n bytes of each; with streaming, dst + i is 32-byte aligned
            // (the head above). An exactly aliased output is read before it is written.
            unsafe {
                let r = map32(_mm256_loadu_si256(src.add(i) as *const __m256i));
                if streaming {
                    _mm256_stream_si256(dst.add(i) as *mut __m256i, r)
                } else {
                    _mm256_storeu_si256(dst.add(i) as *mut __m256i, r)
                }
            }
            i += 32;
        }
        (i..n).for_each(scalar);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_maps_every_byte_as_the_table_says() {
        let clamp_signed: [u8; 256] = std::array::from_fn(|b| (b as u8 as i8).clamp(-3, 90) as u8);
        let clamp_unsigned: [u8; 256] = std::array::from_fn(|b| (b as u8).clamp(7, 200));
        let general: [u8; 256] = std::array::from_fn(|b| (b as u8).wrapping_mul(37).rotate_left(3) ^ 0x5a);
        assert_eq!(shape_of(&clamp_signed), Shape::ClampSigned(-3, 90));
        assert_eq!(shape_of(&clamp_unsigned), Shape::ClampUnsigned(7, 200));
        assert_eq!(shape_of(&general), Shape::General);
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 256) as u8).collect();
        for table in [&clamp_signed, &clamp_unsigned, &general] {
            for start in [0, 1, 13, 31] {
                for streaming in [false, true] {
                    let s = &src[start..];
                    let mut got = vec![0u8; s.len()];
                    // SAFETY: both hold s.len() bytes.
                    unsafe { apply_run(got.as_mut_ptr(), s.as_ptr(), s.len(), table, shape_of(table), streaming) };
                    store_fence();
                    assert!(got.iter().zip(s).all(|(&g, &x)| g == table[x as usize]), "start {start}");
                }
            }
        }
    }
}
