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
mod micro;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::stream::store_fence;
    use super::micro::*;
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
