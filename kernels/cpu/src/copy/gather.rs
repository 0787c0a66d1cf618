//! Gather-free strided reads: `dst[i] = src[2 * i]` (an every-other-element slice, e.g.
//! `x[:, ::2]`) as a SIMD deinterleave — load two vectors, keep the even lanes — instead of
//! one scalar load per element. AVX-512 keeps the even lanes with a two-source permute (or
//! a truncating move for bytes), AVX2 and SSE2 with shuffles and packs; the picked level is
//! [`simd_level`](crate::simd_level::simd_level). No load reaches past the run's last element
//! (`src[2 * (n - 1)]`): the AVX-512 tail uses masked loads, the others a scalar tail.

/// `dst[i] = src[2 * i]` for `i < n`.
///
/// # Safety
/// `dst` writable for `n` contiguous elements, `src` readable at `2 * i` for `i < n`, the
/// two disjoint; `T` a plain value of 1, 2, 4 or 8 bytes.
#[inline]
pub(crate) unsafe fn gather2<T: Copy>(dst: *mut T, src: *const T, n: usize) {
    // SAFETY: forwarded caller contract.
    #[cfg(target_arch = "x86_64")]
    let done = unsafe { x86::gather2(dst as *mut u8, src as *const u8, n, std::mem::size_of::<T>()) };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for i in done..n {
        // SAFETY: element i of the run (caller).
        unsafe { dst.add(i).write(src.add(2 * i).read()) };
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::simd_level::{simd_level, SimdLevel};
    use std::arch::x86_64::*;

    /// Runs the widest kernel for element size `e` and returns how many leading elements
    /// it wrote (the caller finishes the rest with scalar moves).
    ///
    /// # Safety
    /// As [`super::gather2`] with `dst`/`src` as bytes of elements of `e` bytes.
    pub(super) unsafe fn gather2(dst: *mut u8, src: *const u8, n: usize, e: usize) -> usize {
        // SAFETY (all arms): the level's features were detected; forwarded contract.
        unsafe {
            match simd_level() {
                SimdLevel::Avx512 => match e {
                    1 => even_u8_avx512(dst, src, n),
                    2 => even_avx512::<2>(dst, src, n),
                    4 => even_avx512::<4>(dst, src, n),
                    _ => even_avx512::<8>(dst, src, n),
                },
                SimdLevel::Avx2 => even_avx2(dst, src, n, e),
                SimdLevel::Baseline => even_sse2(dst, src, n, e),
            }
        }
    }

    /// Whole vectors of `v` outputs whose two source vectors (`2v` elements from `2i`)
    /// stay within the run, which ends at element `2(n - 1)`: those with `i + v < n`.
    #[inline(always)]
    fn whole(n: usize, v: usize) -> usize {
        if n > v {
            (n - 1) / v * v
        } else {
            0
        }
    }

    /// Even lanes of `a:b` (elements of `E` bytes) with a two-source permute.
    ///
    /// # Safety
    /// Needs AVX-512 F and BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn even_lanes<const E: usize>(a: __m512i, b: __m512i) -> __m512i {
        match E {
            2 => {
                let idx = _mm512_set_epi16(
                    62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14,
                    12, 10, 8, 6, 4, 2, 0,
                );
                _mm512_permutex2var_epi16(a, idx, b)
            }
            4 => {
                let idx = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
                _mm512_permutex2var_epi32(a, idx, b)
            }
            _ => _mm512_permutex2var_epi64(a, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), b),
        }
    }

    /// AVX-512 deinterleave of 2-, 4- or 8-byte elements, the tail with masked loads and a
    /// masked store. Returns `n`.
    ///
    /// # Safety
    /// As `gather2` for elements of `E` bytes.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn even_avx512<const E: usize>(dst: *mut u8, src: *const u8, n: usize) -> usize {
        let v = 64 / E;
        let mut i = 0;
        while i < whole(n, v) {
            // SAFETY: source bytes [2iE, 2iE + 128) hold elements 2i..2i+2v, all <= 2(n-1)
            // (i + v < n); dst elements i..i+v exist.
            unsafe {
                let s = src.add(2 * i * E);
                let a = _mm512_loadu_si512(s as *const _);
                let b = _mm512_loadu_si512(s.add(64) as *const _);
                _mm512_storeu_si512(dst.add(i * E) as *mut _, even_lanes::<E>(a, b));
            }
            i += v;
        }
        if i < n {
            // The last 1..=v outputs need source elements 2i ..= 2(n-1): 2(n-i) - 1 of them.
            let need = 2 * (n - i) - 1;
            let bytes_a = need.min(v) * E;
            let bytes_b = need.saturating_sub(v) * E;
            let m = |bytes: usize| if bytes >= 64 { u64::MAX } else { (1u64 << bytes) - 1 };
            // SAFETY: byte-masked loads touch only the source elements listed above (masked
            // lanes are not accessed); the byte-masked store writes dst elements i..n.
            unsafe {
                let s = src.add(2 * i * E);
                let a = _mm512_maskz_loadu_epi8(m(bytes_a), s as *const i8);
                let b = _mm512_maskz_loadu_epi8(m(bytes_b), s.add(64) as *const i8);
                _mm512_mask_storeu_epi8(dst.add(i * E) as *mut i8, m((n - i) * E), even_lanes::<E>(a, b));
            }
        }
        n
    }

    /// AVX-512 deinterleave of bytes: the even byte of each 16-bit pair by a truncating
    /// move (`vpmovwb`). Returns how many outputs it wrote.
    ///
    /// # Safety
    /// As `gather2` for 1-byte elements.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn even_u8_avx512(dst: *mut u8, src: *const u8, n: usize) -> usize {
        let mut i = 0;
        while i < whole(n, 64) {
            // SAFETY: source bytes [2i, 2i + 128) are elements <= 2(n-1) (i + 64 < n);
            // dst bytes i..i+64 exist.
            unsafe {
                let a = _mm512_cvtepi16_epi8(_mm512_loadu_si512(src.add(2 * i) as *const _));
                let b = _mm512_cvtepi16_epi8(_mm512_loadu_si512(src.add(2 * i + 64) as *const _));
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, a);
                _mm256_storeu_si256(dst.add(i + 32) as *mut __m256i, b);
            }
            i += 64;
        }
        i
    }

    /// AVX2 deinterleave (shuffles, or masks and packs, then a cross-lane fix-up). Returns
    /// how many outputs it wrote.
    ///
    /// # Safety
    /// As `gather2`.
    #[target_feature(enable = "avx2")]
    unsafe fn even_avx2(dst: *mut u8, src: *const u8, n: usize, e: usize) -> usize {
        let v = 32 / e;
        let mut i = 0;
        while i < whole(n, v) {
            // SAFETY: source bytes [2ie, 2ie + 64) are elements <= 2(n-1) (i + v < n); dst
            // elements i..i+v exist.
            unsafe {
                let s = src.add(2 * i * e);
                let a = _mm256_loadu_si256(s as *const __m256i);
                let b = _mm256_loadu_si256(s.add(32) as *const __m256i);
                // Per 128-bit lane: [a evens, b evens]; then lanes 0, 2, 1, 3 of 64 bits.
                let mixed = match e {
                    1 => {
                        let m = _mm256_set1_epi16(0xFF);
                        _mm256_packus_epi16(_mm256_and_si256(a, m), _mm256_and_si256(b, m))
                    }
                    2 => {
                        let m = _mm256_set1_epi32(0xFFFF);
                        _mm256_packus_epi32(_mm256_and_si256(a, m), _mm256_and_si256(b, m))
                    }
                    4 => _mm256_castps_si256(_mm256_shuffle_ps::<0x88>(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b))),
                    _ => _mm256_unpacklo_epi64(a, b),
                };
                let out = _mm256_permute4x64_epi64::<0xD8>(mixed);
                _mm256_storeu_si256(dst.add(i * e) as *mut __m256i, out);
            }
            i += v;
        }
        i
    }

    /// SSE2 deinterleave. Returns how many outputs it wrote.
    ///
    /// # Safety
    /// As `gather2`.
    #[target_feature(enable = "sse2")]
    unsafe fn even_sse2(dst: *mut u8, src: *const u8, n: usize, e: usize) -> usize {
        let v = 16 / e;
        let mut i = 0;
        while i < whole(n, v) {
            // SAFETY: source bytes [2ie, 2ie + 32) are elements <= 2(n-1) (i + v < n); dst
            // elements i..i+v exist.
            unsafe {
                let s = src.add(2 * i * e);
                let a = _mm_loadu_si128(s as *const __m128i);
                let b = _mm_loadu_si128(s.add(16) as *const __m128i);
                let out = match e {
                    1 => {
                        let m = _mm_set1_epi16(0xFF);
                        _mm_packus_epi16(_mm_and_si128(a, m), _mm_and_si128(b, m))
                    }
                    // Sign-extend the low halves so the signed saturating pack keeps them.
                    2 => _mm_packs_epi32(
                        _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(a)),
                        _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(b)),
                    ),
                    4 => _mm_castps_si128(_mm_shuffle_ps::<0x88>(_mm_castsi128_ps(a), _mm_castsi128_ps(b))),
                    _ => _mm_unpacklo_epi64(a, b),
                };
                _mm_storeu_si128(dst.add(i * e) as *mut __m128i, out);
            }
            i += v;
        }
        i
    }
}
