//! The x86-64 SIMD micro-kernels of the tiled transpose: one register-resident transpose of
//! a small block (4×4 … 32×16 elements) per instruction set and element size, called by the
//! plane functions of [`super::x86`].

use std::arch::x86_64::*;

/// 8×8 transpose of 4-byte elements with AVX: `dst[r * drs + c] = src[r + c * scs]`.
///
/// # Safety
/// 8 source rows of 8 elements readable, 8 destination rows of 8 elements writable.
#[target_feature(enable = "avx")]
#[inline]
pub(super) unsafe fn micro_u32(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
    // SAFETY: 8 rows of 8 elements readable (caller).
    let (r0, r1, r2, r3, r4, r5, r6, r7) = unsafe {
        let l = |c: isize| _mm256_loadu_ps(src.offset(c * scs) as *const f32);
        (l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7))
    };
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
    let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
    let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
    let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
    let o = [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ];
    for (i, v) in o.into_iter().enumerate() {
        // SAFETY: 8 elements of dst row i writable (caller).
        unsafe { _mm256_storeu_ps(dst.offset(i as isize * drs) as *mut f32, v) };
    }
}

/// 4×4 transpose of 4-byte elements with SSE2.
///
/// # Safety
/// 4 source rows of 4 elements readable, 4 destination rows of 4 elements writable.
#[target_feature(enable = "sse2")]
#[inline]
pub(super) unsafe fn micro_u32_sse2(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
    // SAFETY: 4 rows of 4 elements readable (caller).
    let r: [__m128; 4] = std::array::from_fn(|c| unsafe { _mm_loadu_ps(src.offset(c as isize * scs) as *const f32) });
    let pd = |x: __m128| _mm_castps_pd(x);
    let (t0, t1) = (pd(_mm_unpacklo_ps(r[0], r[1])), pd(_mm_unpackhi_ps(r[0], r[1])));
    let (t2, t3) = (pd(_mm_unpacklo_ps(r[2], r[3])), pd(_mm_unpackhi_ps(r[2], r[3])));
    let o = [_mm_unpacklo_pd(t0, t2), _mm_unpackhi_pd(t0, t2), _mm_unpacklo_pd(t1, t3), _mm_unpackhi_pd(t1, t3)];
    for (i, v) in o.into_iter().enumerate() {
        // SAFETY: 4 elements of dst row i writable (caller).
        unsafe { _mm_storeu_pd(dst.offset(i as isize * drs) as *mut f64, v) };
    }
}

/// 2×2 transpose of 8-byte elements with SSE2.
///
/// # Safety
/// 2 source rows of 2 elements readable, 2 destination rows of 2 elements writable.
#[target_feature(enable = "sse2")]
#[inline]
pub(super) unsafe fn micro_u64_sse2(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
    // SAFETY: 2 rows of 2 elements readable, 2 rows of 2 writable (caller).
    unsafe {
        let a = _mm_loadu_si128(src as *const __m128i);
        let b = _mm_loadu_si128(src.offset(scs) as *const __m128i);
        _mm_storeu_si128(dst as *mut __m128i, _mm_unpacklo_epi64(a, b));
        _mm_storeu_si128(dst.offset(drs) as *mut __m128i, _mm_unpackhi_epi64(a, b));
    }
}

/// 16×16 transpose of 4-byte elements with AVX-512 (one cache line per row).
///
/// # Safety
/// 16 source rows of 16 elements readable, 16 destination rows of 16 elements writable.
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn micro_u32_avx512(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
    // SAFETY: 16 rows of 16 elements readable (caller).
    let r: [__m512; 16] =
        std::array::from_fn(|c| unsafe { _mm512_loadu_ps(src.offset(c as isize * scs) as *const f32) });
    // Pairs of rows interleaved: t[2i] / t[2i + 1] hold rows 2i, 2i+1 at columns
    // {4L, 4L+1} / {4L+2, 4L+3} of each 128-bit lane L.
    let mut t = [_mm512_setzero_ps(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // Groups of four rows: u[4i + k] holds rows 4i..4i+4 at column 4L + k of lane L.
    let mut u = [_mm512_setzero_ps(); 16];
    for i in 0..4 {
        let pd = |x: __m512| _mm512_castps_pd(x);
        let (a, b, c, d) = (pd(t[4 * i]), pd(t[4 * i + 1]), pd(t[4 * i + 2]), pd(t[4 * i + 3]));
        u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // A 4×4 transpose of 128-bit lanes per column k gives whole destination rows.
    let mut v = [_mm512_setzero_ps(); 16];
    for k in 0..4 {
        let (a, b, c, d) = (u[k], u[4 + k], u[8 + k], u[12 + k]);
        let ab_lo = _mm512_shuffle_f32x4::<0x44>(a, b);
        let ab_hi = _mm512_shuffle_f32x4::<0xEE>(a, b);
        let cd_lo = _mm512_shuffle_f32x4::<0x44>(c, d);
        let cd_hi = _mm512_shuffle_f32x4::<0xEE>(c, d);
        v[k] = _mm512_shuffle_f32x4::<0x88>(ab_lo, cd_lo);
        v[4 + k] = _mm512_shuffle_f32x4::<0xDD>(ab_lo, cd_lo);
        v[8 + k] = _mm512_shuffle_f32x4::<0x88>(ab_hi, cd_hi);
        v[12 + k] = _mm512_shuffle_f32x4::<0xDD>(ab_hi, cd_hi);
    }
    for (i, x) in v.into_iter().enumerate() {
        // SAFETY: 16 elements of dst row i writable (caller).
        unsafe { _mm512_storeu_ps(dst.offset(i as isize * drs) as *mut f32, x) };
    }
}

/// 4×4 transpose of 8-byte elements with AVX.
///
/// # Safety
/// 4 source rows of 4 elements readable, 4 destination rows of 4 elements writable.
#[target_feature(enable = "avx")]
#[inline]
pub(super) unsafe fn micro_u64(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
    // SAFETY: 4 rows of 4 elements readable (caller).
    let (r0, r1, r2, r3) = unsafe {
        let l = |c: isize| _mm256_loadu_pd(src.offset(c * scs) as *const f64);
        (l(0), l(1), l(2), l(3))
    };
    let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
    let o = [
        _mm256_permute2f128_pd::<0x20>(t0, t2),
        _mm256_permute2f128_pd::<0x20>(t1, t3),
        _mm256_permute2f128_pd::<0x31>(t0, t2),
        _mm256_permute2f128_pd::<0x31>(t1, t3),
    ];
    for (i, v) in o.into_iter().enumerate() {
        // SAFETY: 4 elements of dst row i writable (caller).
        unsafe { _mm256_storeu_pd(dst.offset(i as isize * drs) as *mut f64, v) };
    }
}

/// 8×8 transpose of 8-byte elements with AVX-512 (one cache line per row).
///
/// # Safety
/// 8 source rows of 8 elements readable, 8 destination rows of 8 elements writable.
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn micro_u64_avx512(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
    // SAFETY: 8 rows of 8 elements readable (caller).
    let r: [__m512i; 8] =
        std::array::from_fn(|c| unsafe { _mm512_loadu_si512(src.offset(c as isize * scs) as *const _) });
    // Row pairs: lane L of even[p] / odd[p] holds rows 2p, 2p+1 at column 2L / 2L+1.
    let even: [__m512i; 4] = std::array::from_fn(|p| _mm512_unpacklo_epi64(r[2 * p], r[2 * p + 1]));
    let odd: [__m512i; 4] = std::array::from_fn(|p| _mm512_unpackhi_epi64(r[2 * p], r[2 * p + 1]));
    // A 4×4 transpose of 128-bit lanes turns each group into four destination rows.
    let lanes = |a: [__m512i; 4]| {
        let x0 = _mm512_shuffle_i64x2::<0x44>(a[0], a[1]);
        let x1 = _mm512_shuffle_i64x2::<0xEE>(a[0], a[1]);
        let x2 = _mm512_shuffle_i64x2::<0x44>(a[2], a[3]);
        let x3 = _mm512_shuffle_i64x2::<0xEE>(a[2], a[3]);
        [
            _mm512_shuffle_i64x2::<0x88>(x0, x2),
            _mm512_shuffle_i64x2::<0xDD>(x0, x2),
            _mm512_shuffle_i64x2::<0x88>(x1, x3),
            _mm512_shuffle_i64x2::<0xDD>(x1, x3),
        ]
    };
    let (e, o) = (lanes(even), lanes(odd));
    for l in 0..4 {
        // SAFETY: 8 elements of dst rows 2l and 2l + 1 writable (caller).
        unsafe {
            _mm512_storeu_si512(dst.offset(2 * l as isize * drs) as *mut _, e[l]);
            _mm512_storeu_si512(dst.offset((2 * l + 1) as isize * drs) as *mut _, o[l]);
        }
    }
}

/// 8×8 transpose of 2-byte elements with SSE2.
///
/// # Safety
/// 8 source rows of 8 elements readable, 8 destination rows of 8 elements writable.
#[target_feature(enable = "sse2")]
#[inline]
pub(super) unsafe fn micro_u16(dst: *mut u16, drs: isize, src: *const u16, scs: isize) {
    // SAFETY: 8 rows of 8 elements readable (caller).
    let r: [__m128i; 8] = unsafe {
        let l = |c: isize| _mm_loadu_si128(src.offset(c * scs) as *const __m128i);
        [l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7)]
    };
    let a = [
        _mm_unpacklo_epi16(r[0], r[1]),
        _mm_unpackhi_epi16(r[0], r[1]),
        _mm_unpacklo_epi16(r[2], r[3]),
        _mm_unpackhi_epi16(r[2], r[3]),
        _mm_unpacklo_epi16(r[4], r[5]),
        _mm_unpackhi_epi16(r[4], r[5]),
        _mm_unpacklo_epi16(r[6], r[7]),
        _mm_unpackhi_epi16(r[6], r[7]),
    ];
    let b = [
        _mm_unpacklo_epi32(a[0], a[2]),
        _mm_unpackhi_epi32(a[0], a[2]),
        _mm_unpacklo_epi32(a[1], a[3]),
        _mm_unpackhi_epi32(a[1], a[3]),
        _mm_unpacklo_epi32(a[4], a[6]),
        _mm_unpackhi_epi32(a[4], a[6]),
        _mm_unpacklo_epi32(a[5], a[7]),
        _mm_unpackhi_epi32(a[5], a[7]),
    ];
    let o = [
        _mm_unpacklo_epi64(b[0], b[4]),
        _mm_unpackhi_epi64(b[0], b[4]),
        _mm_unpacklo_epi64(b[1], b[5]),
        _mm_unpackhi_epi64(b[1], b[5]),
        _mm_unpacklo_epi64(b[2], b[6]),
        _mm_unpackhi_epi64(b[2], b[6]),
        _mm_unpacklo_epi64(b[3], b[7]),
        _mm_unpackhi_epi64(b[3], b[7]),
    ];
    for (i, v) in o.into_iter().enumerate() {
        // SAFETY: 8 elements of dst row i writable (caller).
        unsafe { _mm_storeu_si128(dst.offset(i as isize * drs) as *mut __m128i, v) };
    }
}

/// Transpose of 2-byte elements with AVX-512: 16 source rows of 32 elements (one cache
/// line each) into 32 destination rows of 16 — two 16×16 transposes side by side in
/// the 256-bit halves.
///
/// # Safety
/// 16 source rows of 32 elements readable, 32 destination rows of 16 elements writable.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
pub(super) unsafe fn micro_u16_avx512(dst: *mut u16, drs: isize, src: *const u16, scs: isize) {
    // SAFETY: 16 rows of 32 elements readable (caller).
    let v: [__m512i; 16] =
        std::array::from_fn(|c| unsafe { _mm512_loadu_si512(src.offset(c as isize * scs) as *const _) });
    // lo[p] / hi[p]: 32-bit unit k of lane L = source rows 2p, 2p+1 at plane row
    // 8L + k / 8L + 4 + k.
    let lo: [__m512i; 8] = std::array::from_fn(|p| _mm512_unpacklo_epi16(v[2 * p], v[2 * p + 1]));
    let hi: [__m512i; 8] = std::array::from_fn(|p| _mm512_unpackhi_epi16(v[2 * p], v[2 * p + 1]));
    // b[q][s]: 64-bit unit k of lane L = source rows 4q..4q+4 at plane row 8L + 2s + k.
    let b: [[__m512i; 4]; 4] = std::array::from_fn(|q| {
        [
            _mm512_unpacklo_epi32(lo[2 * q], lo[2 * q + 1]),
            _mm512_unpackhi_epi32(lo[2 * q], lo[2 * q + 1]),
            _mm512_unpacklo_epi32(hi[2 * q], hi[2 * q + 1]),
            _mm512_unpackhi_epi32(hi[2 * q], hi[2 * q + 1]),
        ]
    });
    // c[g][k]: lane L = source rows 8g..8g+8 at plane row 8L + k.
    let c: [[__m512i; 8]; 2] = std::array::from_fn(|g| {
        std::array::from_fn(|k| {
            let (x, y) = (b[2 * g][k / 2], b[2 * g + 1][k / 2]);
            if k % 2 == 0 {
                _mm512_unpacklo_epi64(x, y)
            } else {
                _mm512_unpackhi_epi64(x, y)
            }
        })
    });
    let idx_lo = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    let idx_hi = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    for (k, (&c0, &c1)) in c[0].iter().zip(&c[1]).enumerate() {
        // Lanes [c0.L, c1.L, c0.L+1, c1.L+1]: plane rows 8L + k and 8(L+1) + k whole.
        let d01 = _mm512_permutex2var_epi64(c0, idx_lo, c1);
        let d23 = _mm512_permutex2var_epi64(c0, idx_hi, c1);
        let row = |r: usize| dst.wrapping_offset(r as isize * drs) as *mut __m256i;
        // SAFETY: 16 elements of dst rows k, 8 + k, 16 + k, 24 + k writable (caller).
        unsafe {
            _mm256_storeu_si256(row(k), _mm512_castsi512_si256(d01));
            _mm256_storeu_si256(row(8 + k), _mm512_extracti64x4_epi64::<1>(d01));
            _mm256_storeu_si256(row(16 + k), _mm512_castsi512_si256(d23));
            _mm256_storeu_si256(row(24 + k), _mm512_extracti64x4_epi64::<1>(d23));
        }
    }
}

/// 16×16 transpose of 1-byte elements with SSE2.
///
/// # Safety
/// 16 source rows of 16 elements readable, 16 destination rows of 16 elements writable.
#[target_feature(enable = "sse2")]
#[inline]
pub(super) unsafe fn micro_u8(dst: *mut u8, drs: isize, src: *const u8, scs: isize) {
    // SAFETY: 16 rows of 16 bytes readable (caller).
    let v: [__m128i; 16] =
        std::array::from_fn(|c| unsafe { _mm_loadu_si128(src.offset(c as isize * scs) as *const __m128i) });
    // a[p][h]: 16-bit unit k = source rows 2p, 2p+1 at plane row 8h + k.
    let a: [[__m128i; 2]; 8] =
        std::array::from_fn(|p| [_mm_unpacklo_epi8(v[2 * p], v[2 * p + 1]), _mm_unpackhi_epi8(v[2 * p], v[2 * p + 1])]);
    // b[q][m]: 32-bit unit k = source rows 4q..4q+4 at plane row 4m + k.
    let b: [[__m128i; 4]; 4] = std::array::from_fn(|q| {
        std::array::from_fn(|m| {
            let (x, y) = (a[2 * q][m / 2], a[2 * q + 1][m / 2]);
            if m % 2 == 0 {
                _mm_unpacklo_epi16(x, y)
            } else {
                _mm_unpackhi_epi16(x, y)
            }
        })
    });
    // c[g][s]: 64-bit unit k = source rows 8g..8g+8 at plane row 2s + k.
    let c: [[__m128i; 8]; 2] = std::array::from_fn(|g| {
        std::array::from_fn(|s| {
            let (x, y) = (b[2 * g][s / 2], b[2 * g + 1][s / 2]);
            if s % 2 == 0 {
                _mm_unpacklo_epi32(x, y)
            } else {
                _mm_unpackhi_epi32(x, y)
            }
        })
    });
    for (s, (&x, &y)) in c[0].iter().zip(&c[1]).enumerate() {
        // SAFETY: 16 bytes of dst rows 2s and 2s + 1 writable (caller).
        unsafe {
            _mm_storeu_si128(dst.offset(2 * s as isize * drs) as *mut __m128i, _mm_unpacklo_epi64(x, y));
            _mm_storeu_si128(dst.offset((2 * s + 1) as isize * drs) as *mut __m128i, _mm_unpackhi_epi64(x, y));
        }
    }
}
