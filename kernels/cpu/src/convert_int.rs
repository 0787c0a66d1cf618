//! Contiguous `f32` → `i8`/`u8`/`i32` with Rust `as` rules (truncate toward zero,
//! saturate, NaN → 0) in AVX2 registers: the store of every f32-computed result into an
//! integer (a cast copy, a quantized tensor's integers). The same bits as the scalar `as`.

use crate::simd_level::{simd_level, SimdLevel};
use tensor_core::DType;

/// `dst[i] = src[i] as T` for `n` elements, `T` the Rust type of `dtype` (I8, U8 or I32);
/// `false` (nothing written) for another dtype or below AVX2.
///
/// # Safety
/// `src` valid for `n` f32 reads, `dst` for `n` writes of `dtype`.
pub(crate) unsafe fn f32_to_int(dst: *mut u8, dtype: DType, src: *const f32, n: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 && matches!(dtype, DType::I8 | DType::U8 | DType::I32) {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        unsafe { avx2::f32_to_int(dst, dtype, src, n) };
        return true;
    }
    let _ = (dst, dtype, src, n);
    false
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;
    use tensor_core::DType;

    /// Eight f32 as i32 with `as` rules, clamped to `lo..=hi` (the target's range as f32,
    /// `hi` = 2^31 for i32: saturated to i32::MAX after the conversion).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn trunc8(x: __m256, lo: __m256, hi: __m256) -> __m256i {
        let t = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
        let c = _mm256_max_ps(_mm256_min_ps(t, hi), lo);
        let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
        let big = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(c, _mm256_set1_ps(2147483648.0)));
        let i = _mm256_blendv_epi8(_mm256_cvttps_epi32(c), _mm256_set1_epi32(i32::MAX), big);
        _mm256_andnot_si256(nan, i)
    }

    /// 32 i32 lanes (each within i8 or u8, as `signed` says) as 32 bytes, in order.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn pack_bytes(lanes: [__m256i; 4], signed: bool) -> __m256i {
        let (w0, w1) = (_mm256_packs_epi32(lanes[0], lanes[1]), _mm256_packs_epi32(lanes[2], lanes[3]));
        let b = if signed { _mm256_packs_epi16(w0, w1) } else { _mm256_packus_epi16(w0, w1) };
        // The packs work per 128-bit lane: restore the element order.
        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }

    /// Stores 32 i32 lanes (each within i8 or u8, as `signed` says) as 32 bytes at `dst`, in
    /// order.
    ///
    /// # Safety
    /// AVX2 is available; `dst` is valid for 32 byte writes.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn store_bytes(dst: *mut u8, lanes: [__m256i; 4], signed: bool) {
        // SAFETY: the caller's contract.
        unsafe { _mm256_storeu_si256(dst as *mut __m256i, pack_bytes(lanes, signed)) }
    }

    /// # Safety
    /// AVX2 is available; `src` valid for `n` f32 reads, `dst` for `n` writes of `dtype`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn f32_to_int(dst: *mut u8, dtype: DType, src: *const f32, n: usize) {
        let (lo, hi) = match dtype {
            DType::I8 => (-128.0, 127.0),
            DType::U8 => (0.0, 255.0),
            _ => (-2147483648.0, 2147483648.0),
        };
        let (vlo, vhi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
        // SAFETY (both closures): callers pass k + 8 <= n.
        let t = |k: usize| trunc8(unsafe { _mm256_loadu_ps(src.add(k)) }, vlo, vhi);
        let mut i = 0;
        if dtype == DType::I32 {
            while i + 8 <= n {
                // SAFETY: i + 8 <= n i32 slots.
                unsafe { _mm256_storeu_si256(dst.add(4 * i) as *mut __m256i, t(i)) };
                i += 8;
            }
        } else {
            while i + 32 <= n {
                // SAFETY: i + 32 <= n byte slots.
                unsafe { store_bytes(dst.add(i), [t(i), t(i + 8), t(i + 16), t(i + 24)], dtype == DType::I8) };
                i += 32;
            }
        }
        for j in i..n {
            // SAFETY: j < n.
            let v = unsafe { *src.add(j) };
            // SAFETY: j < n slots of dtype.
            unsafe {
                match dtype {
                    DType::I8 => (dst as *mut i8).add(j).write(v as i8),
                    DType::U8 => dst.add(j).write(v as u8),
                    _ => (dst as *mut i32).add(j).write_unaligned(v as i32),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_special_value_converts_as_rust_as() {
        let xs: Vec<f32> = [0.0f32, -0.0, 0.5, -0.5, 1.9, -1.9, 126.9, 127.5, 128.0, -128.9, -129.0, 255.9, 256.0]
            .into_iter()
            .chain([f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2147483520.0, 2147483648.0, -2147483904.0])
            .chain((-100..100).map(|i| i as f32 * 1.37e7))
            .chain((-100..100).map(|i| i as f32 * 1.3))
            .collect();
        for dtype in [DType::I8, DType::U8, DType::I32] {
            let mut out = vec![0u8; xs.len() * dtype.size()];
            // SAFETY: out holds xs.len() elements of dtype.
            if !unsafe { f32_to_int(out.as_mut_ptr(), dtype, xs.as_ptr(), xs.len()) } {
                continue; // no AVX2 here: the callers' scalar loop is `as` itself
            }
            for (i, &x) in xs.iter().enumerate() {
                let got = match dtype {
                    DType::I8 => out[i] as i8 as i64,
                    DType::U8 => out[i] as i64,
                    _ => i32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap()) as i64,
                };
                let want = match dtype {
                    DType::I8 => x as i8 as i64,
                    DType::U8 => x as u8 as i64,
                    _ => x as i32 as i64,
                };
                assert_eq!(got, want, "{dtype} of {x:e}");
            }
        }
    }
}
