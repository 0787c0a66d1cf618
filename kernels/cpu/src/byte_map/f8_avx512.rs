//! The AVX-512 [`Codec16`] of the 8-bit floats: `convert_f8::avx512`'s sixteen-lane steps
//! (`convert_f8`'s branch-free rules: decode exact, encode rounding to nearest even with
//! E4M3's saturation and E5M2's infinities).

use super::Codec16;
use crate::convert_f8::avx512;
use std::arch::x86_64::*;

/// E4M3 (`E4`) or E5M2 codes.
pub(super) struct F8<const E4: bool>;

impl<const E4: bool> Codec16 for F8<E4> {
    #[inline(always)]
    unsafe fn decode16(&self, _k: usize, src: *const u8) -> [f32; 16] {
        // SAFETY: src .. +16 are the caller's; AVX-512 F per the caller.
        unsafe { std::mem::transmute::<__m512, [f32; 16]>(avx512::decode16::<E4>(_mm_loadu_si128(src.cast()))) }
    }

    #[inline(always)]
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
        // SAFETY: AVX-512 F per the caller; `v` holds 16 values; dst per the caller.
        unsafe {
            let bytes = avx512::encode16::<E4>(_mm512_loadu_ps(v.as_ptr()));
            super::store16(dst, bytes, stream);
        }
    }

    f8_one_code_steps!(E4);
}
