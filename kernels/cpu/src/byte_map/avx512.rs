//! The AVX-512 [`Codec16`]: sixteen codes in one 16-lane register; results narrowed to
//! bytes with one move (`vpmovdb`).

use super::Codec16;
use crate::byte_codes::MAX_OPERANDS;
use std::arch::x86_64::*;
use tensor_core::quant::Affine;

/// qint8 (`S`) or quint8 with per-operand affines, their constants broadcast once.
pub(super) struct Quantized<const S: bool> {
    affines: [Affine; MAX_OPERANDS],
    zp: [__m512; MAX_OPERANDS],
    scale: [__m512; MAX_OPERANDS],
    /// The output's `1 / scale`, and its range less its zero point: `qmin − zp`, `qmax − zp`.
    out: [__m512; 3],
    /// The output's zero point, in each 32-bit lane.
    out_zp: __m512i,
}

impl<const S: bool> Quantized<S> {
    /// The constants of `affines` (output first).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn new(affines: &[Affine; MAX_OPERANDS]) -> Self {
        let o = &affines[0];
        Quantized {
            affines: *affines,
            zp: std::array::from_fn(|k| _mm512_set1_ps(affines[k].zero_point)),
            scale: std::array::from_fn(|k| _mm512_set1_ps(affines[k].scale)),
            out: super::quantize_bounds(o).map(|x| _mm512_set1_ps(x)),
            out_zp: _mm512_set1_epi32(o.zero_point as i32),
        }
    }
}

impl<const S: bool> Quantized<S> {
    /// Operand `k`'s sixteen codes at `src` as values: (q − zp) · scale,
    /// `Affine::dequantize`'s two steps.
    ///
    /// # Safety
    /// AVX-512 F (inlined into a function compiled with it); `src` valid for 16 reads.
    #[inline(always)]
    pub(super) unsafe fn decode_register(&self, k: usize, src: *const u8) -> __m512 {
        // SAFETY: src .. +16 are the caller's; AVX-512 F per the caller.
        unsafe {
            let bytes = _mm_loadu_si128(src.cast());
            let ints = if S { _mm512_cvtepi8_epi32(bytes) } else { _mm512_cvtepu8_epi32(bytes) };
            _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(ints), self.zp[k]), self.scale[k])
        }
    }

    /// Sixteen values as the output's codes, each in its 32-bit lane (in the output's
    /// range: `-128..=127` or `0..=255`).
    ///
    /// # Safety
    /// AVX-512 F (inlined into a function compiled with it).
    #[inline(always)]
    pub(super) unsafe fn codes_register(&self, x: __m512) -> __m512i {
        let [inv, lo, hi] = self.out;
        // SAFETY: AVX-512 F per the caller.
        unsafe {
            // As the AVX2 codec: round(clamp(x · inv, qmin − zp, qmax − zp)) + zp, NaN →
            // qmax through min's second operand, rounding half to even (the default MXCSR).
            let q = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(x, inv), hi), lo));
            _mm512_add_epi32(q, self.out_zp)
        }
    }
}

impl<const S: bool> Codec16 for Quantized<S> {
    #[inline(always)]
    unsafe fn decode16(&self, k: usize, src: *const u8) -> [f32; 16] {
        // SAFETY: as decode_register.
        unsafe { std::mem::transmute::<__m512, [f32; 16]>(self.decode_register(k, src)) }
    }

    #[inline(always)]
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
        // SAFETY: AVX-512 F per the caller; `v` holds 16 values; dst per the caller.
        unsafe {
            let q = self.codes_register(_mm512_loadu_ps(v.as_ptr()));
            // in the output's range: the truncating narrowing is exact (i8 or u8 bits)
            let bytes = _mm512_cvtepi32_epi8(q);
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
