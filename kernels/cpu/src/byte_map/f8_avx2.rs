//! The AVX2 [`Codec16`] of the 8-bit floats, with F16C (the ends of `wide32.rs`'s runs,
//! which takes 32 elements a step between them): decoding through the hardware's
//! f16 → f32 conversion (an E5M2 code is the top byte of an f16 of the same value; an
//! E4M3 code shifted into an f16's exponent and mantissa is its value times 2^-8, exact for
//! subnormals too, so one multiply by 256 follows), encoding with
//! `convert_f8::avx2::encode8`'s arithmetic on two 8-lane halves and 32 → 16 → 8-bit packs.
//!
//! A decoded NaN keeps its sign but not the scalar rule's payload (the conversion's quiet
//! NaN); every result is the same, since any NaN result encodes to `0x7f` with its sign.

use super::Codec16;
use crate::convert_f8::avx2;
use std::arch::x86_64::*;

/// E4M3 (`E4`) or E5M2 codes.
pub(super) struct F8Avx2<const E4: bool>;

impl<const E4: bool> Codec16 for F8Avx2<E4> {
    #[inline(always)]
    unsafe fn decode16(&self, _k: usize, src: *const u8) -> [f32; 16] {
        // SAFETY: src .. +16 are the caller's; AVX2 and F16C per the caller.
        unsafe {
            let w = _mm256_cvtepu8_epi16(_mm_loadu_si128(src.cast()));
            let h = if E4 {
                let mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7f));
                let sign = _mm256_slli_epi16::<8>(_mm256_and_si256(w, _mm256_set1_epi16(0x80)));
                let h = _mm256_or_si256(_mm256_slli_epi16::<7>(mag), sign);
                // the one NaN code: an f16 NaN of its sign
                let nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f));
                _mm256_or_si256(h, _mm256_and_si256(nan, _mm256_set1_epi16(0x7e00)))
            } else {
                _mm256_slli_epi16::<8>(w)
            };
            let lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
            let hi = _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(h));
            let (lo, hi) = if E4 {
                let k = _mm256_set1_ps(256.0);
                (_mm256_mul_ps(lo, k), _mm256_mul_ps(hi, k))
            } else {
                (lo, hi)
            };
            std::mem::transmute::<[__m256; 2], [f32; 16]>([lo, hi])
        }
    }

    #[inline(always)]
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
        // SAFETY: AVX2 per the caller; `v` holds 16 values; dst per the caller.
        unsafe {
            let a = avx2::encode8::<E4>(_mm256_loadu_ps(v.as_ptr()));
            let b = avx2::encode8::<E4>(_mm256_loadu_ps(v.as_ptr().add(8)));
            // codes are 0..=255: exact through the unsigned packs
            let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b));
            let bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256::<1>(words));
            super::store16(dst, bytes, stream);
        }
    }

    f8_one_code_steps!(E4);
}
