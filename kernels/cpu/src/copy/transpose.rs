//! Cache-blocked transposed copies: the destination's inner dim is contiguous while the
//! source is contiguous along another dim. A plane is cut into strips of source rows
//! (destination columns), walked along the source so each strip reads sequential streams
//! the hardware prefetcher follows; each strip is cut into tiles. On x86-64 every tile is
//! transposed by SIMD micro-blocks (in registers) into an L1 buffer and then written out
//! one destination row segment at a time, and edges run a scalar loop:
//!
//! - cached destinations (below the streaming threshold): strips of 128–256 destination
//!   bytes per row and tiles of 32–128 rows (`cached_shape`). Writing whole multi-line row
//!   segments from the buffer keeps the destination's lines in few L1 sets at a time,
//!   which matters for power-of-two row pitches (every row of a 4 KiB-pitch matrix maps to
//!   the same set: 16×16 micro-blocks storing straight into the destination ran at 0.55 of
//!   memcpy from L3 here, the buffered tiles at 0.8; with a 4160-byte pitch both ran at
//!   0.8). Micro-blocks read one cache line per source row with AVX-512 (16×16 for 4-byte
//!   elements, 8×8 for 8-byte, 32 rows × 16 for 2-byte); AVX2 uses 8×8 (4-byte) and 4×4
//!   (8-byte), SSE2 4×4, 2×2, 8×8 (2-byte) and 16×16 (1-byte).
//! - streaming destinations: strips of 128 bytes per row and tiles sized for 256-byte
//!   source bursts, rows flushed with non-temporal stores, so each write-combining buffer
//!   fills at once and the scattered order costs no read-for-ownership.
//!
//! Casting transposes use the scalar tile loop with a conversion.

use std::ops::Range;

/// Tile edge along the destination rows (source contiguous dim), in elements.
pub(crate) const TILE: usize = 64;
/// Strip width: destination columns (source rows) handled together.
pub(crate) const STRIP: usize = 32;

/// One 2-D plane of a transposed copy: `dst[r * drs + c] = src[r + c * scs]` for
/// `r < rows` and the caller's column range (offsets in elements).
#[derive(Debug)]
pub(crate) struct Plane<S, D> {
    pub dst: *mut D,
    pub drs: isize,
    pub src: *const S,
    pub scs: isize,
    pub rows: usize,
}

impl<S, D> Clone for Plane<S, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, D> Copy for Plane<S, D> {}

/// Scalar copy of the block `rows × cols` of a plane through `conv`, walking the source
/// contiguously.
///
/// # Safety
/// Every addressed element lies in its operand (caller's plan).
#[inline(always)]
unsafe fn block_scalar<S: Copy, D: Copy>(
    p: Plane<S, D>,
    rows: Range<usize>,
    cols: Range<usize>,
    conv: &impl Fn(S) -> D,
) {
    for c in cols {
        // SAFETY: caller contract.
        let s = unsafe { p.src.offset(c as isize * p.scs) };
        for r in rows.clone() {
            // SAFETY: caller contract.
            unsafe { p.dst.offset(r as isize * p.drs + c as isize).write(conv(s.add(r).read())) };
        }
    }
}

/// Tiled scalar transpose of plane columns `cols` (all rows) through `conv`.
///
/// # Safety
/// Every element of rows `0..p.rows` × `cols` lies in its operand.
pub(crate) unsafe fn plane_scalar<S: Copy, D: Copy>(p: Plane<S, D>, cols: Range<usize>, conv: impl Fn(S) -> D) {
    for rt in (0..p.rows).step_by(TILE) {
        let re = (rt + TILE).min(p.rows);
        // SAFETY: a sub-block of the caller's rows × cols.
        unsafe { block_scalar(p, rt..re, cols.clone(), &conv) };
    }
}

/// Element bit carriers (one per element size) with the best transposed-copy kernel.
pub(crate) trait TransposeBits: Copy + Send + Sync + 'static {
    /// Strip width (plane columns per call) for this element size, for streaming (`nt`)
    /// or cached destinations.
    fn strip(nt: bool) -> usize {
        let _ = nt;
        STRIP
    }

    /// Transposes plane columns `cols`; `nt` asks for streaming stores where aligned.
    ///
    /// # Safety
    /// As [`plane_scalar`].
    unsafe fn plane(p: Plane<Self, Self>, cols: Range<usize>, nt: bool) {
        let _ = nt;
        // SAFETY: forwarded.
        unsafe { plane_scalar(p, cols, |x| x) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u8 {}
#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u16 {}
#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u32 {}
#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u64 {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::stream::store_fence;
    use super::{Plane, TransposeBits};
    use crate::simd_level::{simd_level, SimdLevel};
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;
    use std::ops::Range;

    /// Bytes of destination row per strip on the streaming path: two whole cache lines, so
    /// every flushed row segment fills its write-combining buffers at once.
    const NT_STRIP_BYTES: usize = 128;
    /// Bytes of each source row read per tile on the streaming path: long enough bursts
    /// per source row that DRAM and the prefetcher keep up (measured: 128-byte bursts for
    /// f16 ran at 0.56 of memcpy, 256-byte ones at 0.67).
    const NT_BURST_BYTES: usize = 256;
    /// Most rows of a streaming tile.
    const NT_ROWS: usize = 128;
    /// Bytes of the tile buffer (L1-resident).
    const BUF_BYTES: usize = NT_ROWS * NT_STRIP_BYTES;

    /// A 64-byte aligned tile buffer.
    #[repr(C, align(64))]
    struct TileBuf([u8; BUF_BYTES]);

    /// Copies `n` elements of a buffer row to `dst`: with 16-byte streaming stores when
    /// `nt`, else in whole 64-byte lines by `line` (the level's widest moves; a plain loop
    /// would be turned into a `memcpy` call per row) and a tail.
    ///
    /// # Safety
    /// `src` 16-aligned and readable for `n` elements, `dst` writable for `n` elements, the
    /// two disjoint; `nt` only when `dst` is 16-aligned and `n * size_of::<T>()` is a
    /// multiple of 16; `line` copies 64 bytes and is supported by the CPU.
    #[inline(always)]
    unsafe fn flush_row<T>(dst: *mut T, src: *const T, n: usize, nt: bool, line: unsafe fn(*mut u8, *const u8)) {
        let bytes = n * std::mem::size_of::<T>();
        if nt {
            let (d, s) = (dst as *mut __m128i, src as *const __m128i);
            for i in 0..bytes / 16 {
                // SAFETY: caller contract (alignment and extent).
                unsafe { _mm_stream_si128(d.add(i), _mm_load_si128(s.add(i))) };
            }
        } else {
            let (d, s) = (dst as *mut u8, src as *const u8);
            let mut i = 0;
            while i + 64 <= bytes {
                // SAFETY: i + 64 <= bytes inside both rows (caller); disjoint.
                unsafe { line(d.add(i), s.add(i)) };
                i += 64;
            }
            if i < bytes {
                // SAFETY: the tail lies inside both rows (caller).
                unsafe { std::ptr::copy_nonoverlapping(s.add(i), d.add(i), bytes - i) };
            }
        }
    }

    /// Copies 64 bytes with SSE2 moves.
    ///
    /// # Safety
    /// Both ranges valid for 64 bytes and disjoint.
    #[target_feature(enable = "sse2")]
    #[inline]
    unsafe fn line_sse2(d: *mut u8, s: *const u8) {
        for k in 0..4 {
            // SAFETY: caller contract.
            unsafe {
                _mm_storeu_si128(d.add(16 * k) as *mut __m128i, _mm_loadu_si128(s.add(16 * k) as *const __m128i))
            };
        }
    }

    /// Copies 64 bytes with AVX moves.
    ///
    /// # Safety
    /// As [`line_sse2`].
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn line_avx(d: *mut u8, s: *const u8) {
        // SAFETY: caller contract.
        unsafe {
            let (a, b) = (_mm256_loadu_si256(s as *const __m256i), _mm256_loadu_si256(s.add(32) as *const __m256i));
            _mm256_storeu_si256(d as *mut __m256i, a);
            _mm256_storeu_si256(d.add(32) as *mut __m256i, b);
        }
    }

    /// Copies 64 bytes with one AVX-512 move.
    ///
    /// # Safety
    /// As [`line_sse2`].
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn line_avx512(d: *mut u8, s: *const u8) {
        // SAFETY: caller contract.
        unsafe { _mm512_storeu_si512(d as *mut _, _mm512_loadu_si512(s as *const _)) };
    }

    /// The buffered tile loop. Each tile of up to `$tile` plane rows × the strip's columns
    /// is transposed into an L1 buffer (rows `$w` elements apart) by the micro kernel
    /// `$micro(dst, drs, src, scs)`, which moves `$br` plane rows × `$bc` plane columns,
    /// with a scalar loop for the edges; then every destination row segment is written
    /// whole, in order, by `flush_row` (streaming when `$nt` and aligned, else with the line
    /// mover `$line`). Expanded inside a
    /// `#[target_feature]` function so the micro kernel inlines.
    macro_rules! tiled_buffered {
        ($p:expr, $cols:expr, $t:ty, $micro:ident, $br:expr, $bc:expr, $w:expr, $tile:expr, $nt:expr, $line:ident) => {{
            let (p, cols): (Plane<$t, $t>, Range<usize>) = ($p, $cols);
            let (br, bc, w, tile): (usize, usize, usize, usize) = ($br, $bc, $w, $tile);
            let e = std::mem::size_of::<$t>();
            let n = cols.len();
            debug_assert!(n <= w && tile >= br && tile * w * e <= BUF_BYTES);
            let cfull = n / bc * bc;
            let nt = $nt
                && ((p.dst as usize) + cols.start * e) % 16 == 0
                && (p.drs * e as isize) % 16 == 0
                && (n * e) % 16 == 0;
            let mut buf = MaybeUninit::<TileBuf>::uninit();
            let bp = buf.as_mut_ptr() as *mut $t;
            let c0 = cols.start as isize;
            for rt in (0..p.rows).step_by(tile) {
                let h = tile.min(p.rows - rt);
                let hfull = h / br * br;
                // The micro block at plane rows rt+rb..+br × columns c0+cb..+bc.
                let block = |rb: usize, cb: usize| {
                    // SAFETY: the block lies in the caller's plane (rt + rb + br <= rows,
                    // cb + bc <= n); the buffer block rb..+br × cb..+bc lies in the buffer
                    // (rb + br <= h <= tile, cb + bc <= n <= w).
                    unsafe {
                        $micro(
                            bp.add(rb * w + cb),
                            w as isize,
                            p.src.offset((rt + rb) as isize + (c0 + cb as isize) * p.scs),
                            p.scs,
                        )
                    }
                };
                if nt {
                    // Rows outer: every source row of the strip is read at once, many
                    // parallel DRAM streams.
                    for rb in (0..hfull).step_by(br) {
                        for cb in (0..cfull).step_by(bc) {
                            block(rb, cb);
                        }
                    }
                } else {
                    // Source rows outer: consecutive micro blocks read the next lines of
                    // the same source rows (few L1 sets in flight for power-of-two pitches).
                    for cb in (0..cfull).step_by(bc) {
                        for rb in (0..hfull).step_by(br) {
                            block(rb, cb);
                        }
                    }
                }
                for c in 0..n {
                    let r0 = if c < cfull { hfull } else { 0 };
                    // SAFETY: source column c0 + c of the caller's plane.
                    let s = unsafe { p.src.offset(rt as isize + (c0 + c as isize) * p.scs) };
                    for r in r0..h {
                        // SAFETY: r < h rows of the plane tile and of the buffer, c < n <= w.
                        unsafe { bp.add(r * w + c).write(s.add(r).read()) };
                    }
                }
                for r in 0..h {
                    // SAFETY: destination row rt + r, columns cols, lies in the plane; buffer
                    // rows are w elements apart from a 64-aligned start (w * e is a multiple
                    // of 16); every element of row r was written above.
                    unsafe { flush_row(p.dst.offset((rt + r) as isize * p.drs + c0), bp.add(r * w), n, nt, $line) };
                }
            }
        }};
    }

    /// 8×8 transpose of 4-byte elements with AVX: `dst[r * drs + c] = src[r + c * scs]`.
    ///
    /// # Safety
    /// 8 source rows of 8 elements readable, 8 destination rows of 8 elements writable.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn micro_u32(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
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
    unsafe fn micro_u32_sse2(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
        // SAFETY: 4 rows of 4 elements readable (caller).
        let r: [__m128; 4] =
            std::array::from_fn(|c| unsafe { _mm_loadu_ps(src.offset(c as isize * scs) as *const f32) });
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
    unsafe fn micro_u64_sse2(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
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
    unsafe fn micro_u32_avx512(dst: *mut u32, drs: isize, src: *const u32, scs: isize) {
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
    unsafe fn micro_u64(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
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
    unsafe fn micro_u64_avx512(dst: *mut u64, drs: isize, src: *const u64, scs: isize) {
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
    unsafe fn micro_u16(dst: *mut u16, drs: isize, src: *const u16, scs: isize) {
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
    unsafe fn micro_u16_avx512(dst: *mut u16, drs: isize, src: *const u16, scs: isize) {
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
    unsafe fn micro_u8(dst: *mut u8, drs: isize, src: *const u8, scs: isize) {
        // SAFETY: 16 rows of 16 bytes readable (caller).
        let v: [__m128i; 16] =
            std::array::from_fn(|c| unsafe { _mm_loadu_si128(src.offset(c as isize * scs) as *const __m128i) });
        // a[p][h]: 16-bit unit k = source rows 2p, 2p+1 at plane row 8h + k.
        let a: [[__m128i; 2]; 8] = std::array::from_fn(|p| {
            [_mm_unpacklo_epi8(v[2 * p], v[2 * p + 1]), _mm_unpackhi_epi8(v[2 * p], v[2 * p + 1])]
        });
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

    /// The cached (non-streaming) tile shape of each element size: (destination bytes per
    /// row of a strip, rows of a tile). Measured on L3-resident 4 MiB planes with
    /// power-of-two pitches (strips of 64/128/256/512 bytes × 16–128 rows): the best keep
    /// each source row's run per tile near 256 bytes and the buffer within 16 KiB.
    const fn cached_shape(e: usize) -> (usize, usize) {
        match e {
            1 | 2 => (128, 128),
            4 => (128, 64),
            _ => (256, 32),
        }
    }

    /// Strip width in elements of size `e`: streaming or cached.
    fn strip_for(e: usize, nt: bool) -> usize {
        if nt {
            NT_STRIP_BYTES / e
        } else {
            cached_shape(e).0 / e
        }
    }

    /// Defines a plane function around micro kernels `(kernel, rows, cols)` for the cached
    /// (`nt == false`) and the streaming tile shapes (the second defaults to the first).
    macro_rules! plane_fn {
        ($name:ident, $feat:literal, $t:ty, $line:ident, ($micro:ident, $br:expr, $bc:expr)) => {
            plane_fn!($name, $feat, $t, $line, ($micro, $br, $bc), ($micro, $br, $bc));
        };
        ($name:ident, $feat:literal, $t:ty, $line:ident, ($micro:ident, $br:expr, $bc:expr),
         ($nt_micro:ident, $nt_br:expr, $nt_bc:expr)) => {
            #[target_feature(enable = $feat)]
            unsafe fn $name(p: Plane<$t, $t>, cols: Range<usize>, nt: bool) {
                const E: usize = std::mem::size_of::<$t>();
                const NT_TILE: usize = if NT_BURST_BYTES / E < $nt_br {
                    $nt_br
                } else if NT_BURST_BYTES / E > NT_ROWS {
                    NT_ROWS
                } else {
                    NT_BURST_BYTES / E
                };
                const CACHED: (usize, usize) = cached_shape(E);
                // Both tile shapes fit the buffer and hold whole micro blocks.
                const _: () = assert!(NT_TILE * NT_STRIP_BYTES <= BUF_BYTES && NT_TILE >= $nt_br);
                const _: () = assert!(CACHED.0 * CACHED.1 <= BUF_BYTES && CACHED.1 >= $br);
                const _: () = assert!(NT_STRIP_BYTES / E >= $nt_bc && CACHED.0 / E >= $bc);
                if nt {
                    tiled_buffered!(p, cols, $t, $nt_micro, $nt_br, $nt_bc, NT_STRIP_BYTES / E, NT_TILE, true, $line)
                } else {
                    tiled_buffered!(p, cols, $t, $micro, $br, $bc, CACHED.0 / E, CACHED.1, false, $line)
                }
            }
        };
    }

    plane_fn!(plane_u8_sse2, "sse2", u8, line_sse2, (micro_u8, 16, 16));
    plane_fn!(plane_u8_avx2, "avx2", u8, line_avx, (micro_u8, 16, 16));
    plane_fn!(plane_u16_sse2, "sse2", u16, line_sse2, (micro_u16, 8, 8));
    plane_fn!(plane_u16_avx2, "avx2", u16, line_avx, (micro_u16, 8, 8));
    // Streaming 2- and 8-byte transposes keep the SSE2 8×8 / AVX 4×4 kernels of the AVX2
    // level: the AVX-512 ones measured ~10% slower (2-byte) or no faster (8-byte) at DRAM
    // sizes here.
    plane_fn!(
        plane_u16_avx512,
        "avx512f,avx512bw,avx2",
        u16,
        line_avx512,
        (micro_u16_avx512, 32, 16),
        (micro_u16, 8, 8)
    );
    plane_fn!(plane_u32_sse2, "sse2", u32, line_sse2, (micro_u32_sse2, 4, 4));
    plane_fn!(plane_u32_avx, "avx2", u32, line_avx, (micro_u32, 8, 8));
    plane_fn!(plane_u32_avx512, "avx512f,avx2", u32, line_avx512, (micro_u32_avx512, 16, 16));
    plane_fn!(plane_u64_sse2, "sse2", u64, line_sse2, (micro_u64_sse2, 2, 2));
    plane_fn!(plane_u64_avx, "avx2", u64, line_avx, (micro_u64, 4, 4));
    plane_fn!(plane_u64_avx512, "avx512f,avx2", u64, line_avx512, (micro_u64_avx512, 8, 8), (micro_u64, 4, 4));

    /// Picks the plane function for the level in use (SSE2 is baseline on x86-64) and
    /// fences streaming stores.
    macro_rules! impl_bits {
        ($t:ty, $sse2:ident, $avx2:ident, $avx512:ident) => {
            impl TransposeBits for $t {
                fn strip(nt: bool) -> usize {
                    strip_for(std::mem::size_of::<$t>(), nt)
                }
                unsafe fn plane(p: Plane<$t, $t>, cols: Range<usize>, nt: bool) {
                    // SAFETY (all arms): the level's features were detected (SSE2 is
                    // baseline); forwarded contract.
                    unsafe {
                        match simd_level() {
                            SimdLevel::Avx512 => $avx512(p, cols, nt),
                            SimdLevel::Avx2 => $avx2(p, cols, nt),
                            SimdLevel::Baseline => $sse2(p, cols, nt),
                        }
                    }
                    if nt {
                        store_fence();
                    }
                }
            }
        };
    }

    impl_bits!(u8, plane_u8_sse2, plane_u8_avx2, plane_u8_avx2);
    impl_bits!(u16, plane_u16_sse2, plane_u16_avx2, plane_u16_avx512);
    impl_bits!(u32, plane_u32_sse2, plane_u32_avx, plane_u32_avx512);
    impl_bits!(u64, plane_u64_sse2, plane_u64_avx, plane_u64_avx512);
}
