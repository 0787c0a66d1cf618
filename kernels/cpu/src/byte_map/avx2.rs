//! The AVX2 [`Codec16`]: sixteen codes as two 8-lane halves; results packed through 16-bit
//! lanes.

use super::Codec16;
use crate::byte_codes::MAX_OPERANDS;
use std::arch::x86_64::*;
use tensor_core::quant::Affine;

/// qint8 (`S`) or quint8 with per-operand affines, their constants broadcast once.
pub(super) struct Quantized<const S: bool> {
    affines: [Affine; MAX_OPERANDS],
    zp: [__m256; MAX_OPERANDS],
    scale: [__m256; MAX_OPERANDS],
    /// The output's `1 / scale`, and its range less its zero point: `qmin − zp`, `qmax − zp`.
    out: [__m256; 3],
    /// The output's zero point, in each 16-bit lane.
    out_zp: __m256i,
}

impl<const S: bool> Quantized<S> {
    /// The constants of `affines` (output first).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn new(affines: &[Affine; MAX_OPERANDS]) -> Self {
        let o = &affines[0];
        Quantized {
            affines: *affines,
            zp: std::array::from_fn(|k| _mm256_set1_ps(affines[k].zero_point)),
            scale: std::array::from_fn(|k| _mm256_set1_ps(affines[k].scale)),
            out: super::quantize_bounds(o).map(|x| _mm256_set1_ps(x)),
            // |zp| ≤ 2^10 (`ByteCodes::of`): exact in 16 bits, as is every q − zp in range
            out_zp: _mm256_set1_epi16(o.zero_point as i16),
        }
    }
}

impl<const S: bool> Codec16 for Quantized<S> {
    #[inline(always)]
    unsafe fn decode16(&self, k: usize, src: *const u8) -> [f32; 16] {
        let mut v = [0.0f32; 16];
        for h in 0..2 {
            // SAFETY: src + 8h .. +8 within the caller's 16 bytes; AVX2 per the caller.
            unsafe {
                let bytes = _mm_loadl_epi64(src.add(8 * h).cast());
                let ints = if S { _mm256_cvtepi8_epi32(bytes) } else { _mm256_cvtepu8_epi32(bytes) };
                // (q − zp) · scale: Affine::dequantize's two steps
                let x = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(ints), self.zp[k]), self.scale[k]);
                _mm256_storeu_ps(v.as_mut_ptr().add(8 * h), x);
            }
        }
        v
    }

    #[inline(always)]
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
        let [inv, lo, hi] = self.out;
        // SAFETY: AVX2 per the caller; `v` holds 16 values; dst per the caller.
        unsafe {
            // Affine::quantize as `quantize_bounds` reorders it. NaN → qmax falls out of
            // min(v, qmax − zp), which returns its second operand on NaN (the byte dtypes'
            // NaN is qmax: `ByteCodes::of`). The conversion rounds half to even (the
            // default MXCSR).
            let q = |h: usize| {
                let x = _mm256_loadu_ps(v.as_ptr().add(8 * h));
                _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(_mm256_mul_ps(x, inv), hi), lo))
            };
            // q − zp fits 16 bits, and so does q: the packs are exact
            let words = _mm256_add_epi16(_mm256_packs_epi32(q(0), q(1)), self.out_zp);
            let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(words);
            let (a, b) = (_mm256_castsi256_si128(words), _mm256_extracti128_si256::<1>(words));
            let bytes = if S { _mm_packs_epi16(a, b) } else { _mm_packus_epi16(a, b) };
            super::store16(dst, bytes, stream);
        }
    }

    #[inline(always)]
    fn decode1(&self, k: usize, code: u8) -> f32 {
        self.affines[k].dequantize_byte(code, S)
    }

    #[inline(always)]
    fn encode1(&self, v: f32) -> u8 {
        self.affines[0].quantize_byte(v, S)
    }
}
