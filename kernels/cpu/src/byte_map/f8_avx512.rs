//! The AVX-512 [`Codec16`] of the 8-bit floats: `convert_f8`'s branch-free rules (decode
//! exact, encode rounding to nearest even with E4M3's saturation and E5M2's infinities)
//! on sixteen lanes, selects as mask blends, results narrowed to bytes with `vpmovdb`.

use super::Codec16;
use crate::convert_f8::{decode, encode, layout};
use std::arch::x86_64::*;

/// E4M3 (`E4`) or E5M2 codes.
pub(super) struct F8<const E4: bool>;

/// `x` in every 32-bit lane.
#[inline(always)]
fn splat(x: u32) -> __m512i {
    // SAFETY: AVX-512 F is what every caller of the codec runs with (its contract).
    unsafe { _mm512_set1_epi32(x as i32) }
}

impl<const E4: bool> Codec16 for F8<E4> {
    #[inline(always)]
    unsafe fn decode16(&self, _k: usize, src: *const u8) -> [f32; 16] {
        let f = const { layout::<E4>() };
        // SAFETY: src .. +16 are the caller's; AVX-512 F per the caller.
        unsafe {
            let b = _mm512_cvtepu8_epi32(_mm_loadu_si128(src.cast()));
            let sign = _mm512_slli_epi32::<24>(_mm512_and_si512(b, splat(0x80)));
            let mag = _mm512_and_si512(b, splat(0x7f));
            let mshift = _mm_cvtsi32_si128(23 - f.mant as i32);
            let normal = _mm512_add_epi32(_mm512_sll_epi32(mag, mshift), splat(f.rebias << (23 - f.mant)));
            // subnormals: mag times the smallest subnormal, exact
            let unit = _mm512_castsi512_ps(splat(f.denorm_magic - (23 << 23)));
            let sub = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(mag), unit));
            let mut v = _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(mag, splat(1 << f.mant)), normal, sub);
            if f.finite_only {
                v = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(mag, splat(0x7f)), v, splat(0x7fc0_0000));
            } else {
                v = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(mag, splat(0x7c)), v, splat(0x7f80_0000));
                v = _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(mag, splat(0x7c)), v, splat(0x7fc0_0000));
            }
            std::mem::transmute::<__m512i, [f32; 16]>(_mm512_or_si512(v, sign))
        }
    }

    #[inline(always)]
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
        let f = const { layout::<E4>() };
        // SAFETY: AVX-512 F per the caller; `v` holds 16 values; dst per the caller.
        unsafe {
            let b = _mm512_castps_si512(_mm512_loadu_ps(v.as_ptr()));
            let shift = _mm_cvtsi32_si128(f.shift as i32);
            let sign = _mm512_and_si512(_mm512_srli_epi32::<24>(b), splat(0x80));
            let a = _mm512_and_si512(b, splat(0x7fff_ffff));
            // normal: round to nearest even at bit `shift`, rebias (logical shifts: a + bias
            // of an infinity or NaN passes 2^31 and stays a large positive code)
            let kept = _mm512_and_si512(_mm512_srl_epi32(a, shift), splat(1));
            let rounded = _mm512_add_epi32(_mm512_add_epi32(a, splat((1 << (f.shift - 1)) - 1)), kept);
            let normal = _mm512_sub_epi32(_mm512_srl_epi32(rounded, shift), splat(f.rebias));
            // subnormal: the float add rounds to the magic's ulp
            let magic = splat(f.denorm_magic);
            let sum = _mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(magic));
            let sub = _mm512_sub_epi32(_mm512_castps_si512(sum), magic);
            let code = _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(a, splat(f.min_normal)), normal, sub);
            let code = _mm512_min_epi32(code, splat(f.overflow));
            let code = _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(a, splat(0x7f80_0000)), code, splat(0x7f));
            // a code and its sign: 0..=255, exact in the truncating narrowing
            let bytes = _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign));
            if stream {
                _mm_stream_si128(dst.cast(), bytes);
            } else {
                _mm_storeu_si128(dst.cast(), bytes);
            }
        }
    }

    #[inline(always)]
    fn decode1(&self, _k: usize, code: u8) -> f32 {
        decode::<E4>(code)
    }

    #[inline(always)]
    fn encode1(&self, v: f32) -> u8 {
        encode::<E4>(v)
    }
}
