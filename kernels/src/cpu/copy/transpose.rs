//! Cache-blocked transposed copies: the destination's inner dim is contiguous while the
//! source is contiguous along another dim. A plane is cut into strips of `STRIP` source
//! rows (destination columns), walked along the source so each strip reads `STRIP`
//! sequential streams the hardware prefetcher follows; each strip is cut into
//! `TILE`×`STRIP` tiles that fit in L1. Inside a tile, SIMD micro-blocks transpose in
//! registers (8×8 for 2- and 4-byte elements, 4×4 for 8-byte ones, AVX/SSE2 picked at run
//! time) and edges run a scalar loop. With streaming stores the destination lines are
//! written whole, so its scattered order costs no read-for-ownership. Casting transposes
//! use the scalar tile loop with a conversion.

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

impl TransposeBits for u8 {}

#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u16 {}
#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u32 {}
#[cfg(not(target_arch = "x86_64"))]
impl TransposeBits for u64 {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{block_scalar, Plane, TransposeBits, TILE};
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;
    use std::ops::Range;

    /// Bytes of destination row per strip on the streaming (buffered) path: two whole
    /// cache lines, so every flushed row segment fills its write-combining buffers at once.
    const NT_STRIP_BYTES: usize = 128;
    /// Bytes of destination row per strip on the cached (direct) path (one line: measured
    /// faster than two for cache-resident planes here).
    const DIRECT_STRIP_BYTES: usize = 64;
    /// Bytes of each source row read per tile on the buffered path: long enough bursts
    /// per source row that DRAM and the prefetcher keep up (measured: 128-byte bursts
    /// for f16 ran at 0.56 of memcpy, 256-byte ones at 0.67).
    const NT_BURST_BYTES: usize = 256;
    /// Most rows of a buffered tile.
    const BUF_ROWS: usize = 128;

    /// A 64-byte aligned tile buffer of `BUF_ROWS` rows of `NT_STRIP_BYTES` bytes.
    #[repr(C, align(64))]
    struct TileBuf([u8; BUF_ROWS * NT_STRIP_BYTES]);

    /// Strip width in elements of size `e`: streaming or direct.
    pub(super) fn strip_for(e: usize, nt: bool) -> usize {
        if nt {
            NT_STRIP_BYTES / e
        } else {
            (DIRECT_STRIP_BYTES / e).max(16)
        }
    }

    /// Copies `n` elements of a buffer row to `dst`, with 16-byte streaming stores when `nt`.
    ///
    /// # Safety
    /// `src` 16-aligned and readable for `n` elements, `dst` writable for `n` elements;
    /// `nt` only when `dst` is 16-aligned and `n * size_of::<T>()` is a multiple of 16.
    #[inline(always)]
    unsafe fn flush_row<T>(dst: *mut T, src: *const T, n: usize, nt: bool) {
        if nt {
            let bytes = n * std::mem::size_of::<T>();
            let (d, s) = (dst as *mut __m128i, src as *const __m128i);
            for i in 0..bytes / 16 {
                // SAFETY: caller contract (alignment and extent).
                unsafe { _mm_stream_si128(d.add(i), _mm_load_si128(s.add(i))) };
            }
        } else {
            // SAFETY: caller contract; the buffer and dst do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        }
    }

    /// The buffered tile loop for streaming destinations: each tile of up to
    /// `BUF_ROWS` plane rows × the strip is transposed by `$micro` into an L1 buffer, then
    /// every destination row segment is written whole, in order, with streaming stores, so
    /// each write-combining buffer fills at once instead of waiting on several micro blocks.
    macro_rules! tiled_buffered {
        ($p:expr, $cols:expr, $b:expr, $micro:ident, $t:ty) => {{
            let (p, cols, b): (Plane<$t, $t>, Range<usize>, usize) = ($p, $cols, $b);
            let e = std::mem::size_of::<$t>();
            let w = NT_STRIP_BYTES / e;
            let tile = (NT_BURST_BYTES / e).clamp(b, BUF_ROWS);
            let n = cols.len();
            debug_assert!(n <= w);
            let cfull = n / b * b;
            let nt =
                ((p.dst as usize) + cols.start * e) % 16 == 0 && (p.drs * e as isize) % 16 == 0 && (n * e) % 16 == 0;
            let mut buf = MaybeUninit::<TileBuf>::uninit();
            let bp = buf.as_mut_ptr() as *mut $t;
            let c0 = cols.start as isize;
            for rt in (0..p.rows).step_by(tile) {
                let h = tile.min(p.rows - rt);
                let hfull = h / b * b;
                let mut rb = 0;
                while rb < hfull {
                    let mut cb = 0;
                    while cb < cfull {
                        // SAFETY: the micro block rows rt+rb.. × cols c0+cb.. lies in the
                        // caller's plane; the buffer block rb.. × cb.. lies in the buffer
                        // (rb + b <= BUF_ROWS, cb + b <= n <= w).
                        unsafe {
                            $micro(
                                bp.add(rb * w + cb),
                                w as isize,
                                p.src.offset((rt + rb) as isize + (c0 + cb as isize) * p.scs),
                                p.scs,
                                false,
                            )
                        };
                        cb += b;
                    }
                    rb += b;
                }
                for c in 0..n {
                    let r0 = if c < cfull { hfull } else { 0 };
                    // SAFETY: source column c0 + c of the caller's plane.
                    let s = unsafe { p.src.offset(rt as isize + (c0 + c as isize) * p.scs) };
                    for r in r0..h {
                        // SAFETY: r < h rows of the plane tile and of the buffer.
                        unsafe { bp.add(r * w + c).write(s.add(r).read()) };
                    }
                }
                for r in 0..h {
                    // SAFETY: destination row rt + r, columns cols, lies in the plane; buffer
                    // rows are NT_STRIP_BYTES apart from a 64-aligned start; every element
                    // of row r was written above.
                    unsafe { flush_row(p.dst.offset((rt + r) as isize * p.drs + c0), bp.add(r * w), n, nt) };
                }
            }
        }};
    }

    /// The tile loop around a `$b`×`$b` micro kernel `$micro(dst, drs, src, scs, nt)`,
    /// with scalar edges. Expanded inside a `#[target_feature]` function so the micro
    /// kernel inlines.
    macro_rules! tiled {
        ($p:expr, $cols:expr, $nt:expr, $b:expr, $micro:ident) => {{
            let (p, cols, nt, b): (Plane<_, _>, Range<usize>, bool, usize) = ($p, $cols, $nt, $b);
            let cfull = cols.start + (cols.end - cols.start) / b * b;
            for rt in (0..p.rows).step_by(TILE) {
                let re = (rt + TILE).min(p.rows);
                let rfull = rt + (re - rt) / b * b;
                let mut rb = rt;
                while rb < rfull {
                    let mut cb = cols.start;
                    while cb < cfull {
                        // SAFETY: the micro block rb..rb+b × cb..cb+b lies in the caller's
                        // rows × cols; nt only when every micro block's rows are aligned.
                        unsafe {
                            $micro(
                                p.dst.offset(rb as isize * p.drs + cb as isize),
                                p.drs,
                                p.src.offset(rb as isize + cb as isize * p.scs),
                                p.scs,
                                nt,
                            )
                        };
                        cb += b;
                    }
                    rb += b;
                }
                // SAFETY: edge blocks inside the caller's rows × cols.
                unsafe {
                    block_scalar(p, rt..re, cfull..cols.end, &|x| x);
                    block_scalar(p, rfull..re, cols.start..cfull, &|x| x);
                }
            }
        }};
    }

    /// Whether streaming stores of `b` elements are aligned for every micro block of the
    /// plane's columns `cols` (micro blocks start at `cols.start + k * b`).
    fn nt_aligned<T>(p: &Plane<T, T>, cols: &Range<usize>, b: usize) -> bool {
        let e = std::mem::size_of::<T>();
        let w = (b * e) as isize;
        // b * e is a power of two (16 or 32 bytes).
        ((p.dst as usize) + cols.start * e) & (b * e - 1) == 0 && (p.drs * e as isize) & (w - 1) == 0
    }

    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn micro_u32(dst: *mut u32, drs: isize, src: *const u32, scs: isize, nt: bool) {
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
            // SAFETY: 8 elements of dst row i writable (caller); nt implies 32-alignment.
            unsafe {
                let d = dst.offset(i as isize * drs) as *mut f32;
                if nt {
                    _mm256_stream_ps(d, v)
                } else {
                    _mm256_storeu_ps(d, v)
                }
            }
        }
    }

    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn micro_u64(dst: *mut u64, drs: isize, src: *const u64, scs: isize, nt: bool) {
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
            // SAFETY: 4 elements of dst row i writable (caller); nt implies 32-alignment.
            unsafe {
                let d = dst.offset(i as isize * drs) as *mut f64;
                if nt {
                    _mm256_stream_pd(d, v)
                } else {
                    _mm256_storeu_pd(d, v)
                }
            }
        }
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    unsafe fn micro_u16(dst: *mut u16, drs: isize, src: *const u16, scs: isize, nt: bool) {
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
            // SAFETY: 8 elements of dst row i writable (caller); nt implies 16-alignment.
            unsafe {
                let d = dst.offset(i as isize * drs) as *mut __m128i;
                if nt {
                    _mm_stream_si128(d, v)
                } else {
                    _mm_storeu_si128(d, v)
                }
            }
        }
    }

    #[target_feature(enable = "avx")]
    unsafe fn plane_u32_avx(p: Plane<u32, u32>, cols: Range<usize>, nt: bool) {
        tiled!(p, cols, nt, 8, micro_u32)
    }
    #[target_feature(enable = "avx")]
    unsafe fn plane_u64_avx(p: Plane<u64, u64>, cols: Range<usize>, nt: bool) {
        tiled!(p, cols, nt, 4, micro_u64)
    }
    #[target_feature(enable = "sse2")]
    unsafe fn plane_u16_sse2(p: Plane<u16, u16>, cols: Range<usize>, nt: bool) {
        tiled!(p, cols, nt, 8, micro_u16)
    }
    #[target_feature(enable = "avx")]
    unsafe fn plane_u32_avx_buf(p: Plane<u32, u32>, cols: Range<usize>) {
        tiled_buffered!(p, cols, 8, micro_u32, u32)
    }
    #[target_feature(enable = "avx")]
    unsafe fn plane_u64_avx_buf(p: Plane<u64, u64>, cols: Range<usize>) {
        tiled_buffered!(p, cols, 4, micro_u64, u64)
    }
    #[target_feature(enable = "sse2")]
    unsafe fn plane_u16_sse2_buf(p: Plane<u16, u16>, cols: Range<usize>) {
        tiled_buffered!(p, cols, 8, micro_u16, u16)
    }

    impl TransposeBits for u16 {
        fn strip(nt: bool) -> usize {
            strip_for(2, nt)
        }
        unsafe fn plane(p: Plane<u16, u16>, cols: Range<usize>, nt: bool) {
            if nt {
                // SAFETY: SSE2 is baseline on x86_64; forwarded contract.
                unsafe { plane_u16_sse2_buf(p, cols) };
                super::super::stream::store_fence();
                return;
            }
            let nt = nt && nt_aligned(&p, &cols, 8);
            // SAFETY: SSE2 is baseline on x86_64; forwarded contract.
            unsafe { plane_u16_sse2(p, cols, nt) };
            super::super::stream::store_fence();
        }
    }
    impl TransposeBits for u32 {
        fn strip(nt: bool) -> usize {
            strip_for(4, nt)
        }
        unsafe fn plane(p: Plane<u32, u32>, cols: Range<usize>, nt: bool) {
            if nt && is_x86_feature_detected!("avx") {
                // SAFETY: AVX detected; forwarded contract.
                unsafe { plane_u32_avx_buf(p, cols) };
                super::super::stream::store_fence();
                return;
            }
            if is_x86_feature_detected!("avx") {
                let nt = nt && nt_aligned(&p, &cols, 8);
                // SAFETY: AVX detected; forwarded contract.
                unsafe { plane_u32_avx(p, cols, nt) };
                super::super::stream::store_fence();
            } else {
                // SAFETY: forwarded.
                unsafe { super::plane_scalar(p, cols, |x| x) }
            }
        }
    }
    impl TransposeBits for u64 {
        fn strip(nt: bool) -> usize {
            strip_for(8, nt)
        }
        unsafe fn plane(p: Plane<u64, u64>, cols: Range<usize>, nt: bool) {
            if nt && is_x86_feature_detected!("avx") {
                // SAFETY: AVX detected; forwarded contract.
                unsafe { plane_u64_avx_buf(p, cols) };
                super::super::stream::store_fence();
                return;
            }
            if is_x86_feature_detected!("avx") {
                let nt = nt && nt_aligned(&p, &cols, 4);
                // SAFETY: AVX detected; forwarded contract.
                unsafe { plane_u64_avx(p, cols, nt) };
                super::super::stream::store_fence();
            } else {
                // SAFETY: forwarded.
                unsafe { super::plane_scalar(p, cols, |x| x) }
            }
        }
    }
}
