//! Contiguous byte movers: memcpy-like copies and pattern fills, with non-temporal
//! (cache-bypassing) stores for destinations too large to stay in cache. The widest store
//! the CPU has is picked at run time (AVX-512, else SSE2 on x86_64 for streaming stores;
//! AVX-512 or AVX2 for plain-store fills; plain loops elsewhere).

/// Total destination bytes of one call from which contiguous writes use non-temporal
/// stores. Below it the destination may still be in cache for the next op; above it plain
/// stores pay a read-for-ownership of every line (measured here: write-allocate costs
/// 35–55% at DRAM sizes) and evict useful data.
pub const NT_THRESHOLD: usize = 16 << 20;

/// Below this many bytes a single run is never streamed (the alignment head/tail and the
/// fence would dominate).
const NT_MIN_RUN: usize = 4096;

/// Copies `n` bytes from `src` to `dst`, streaming the stores when `nt`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the ranges do not overlap.
#[inline]
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize, nt: bool) {
    #[cfg(target_arch = "x86_64")]
    if nt && n >= NT_MIN_RUN {
        // SAFETY: forwarded caller contract.
        unsafe { x86::copy_nt(dst, src, n) };
        return;
    }
    let _ = nt;
    // SAFETY: caller contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
}

/// Copies `n` bytes with streaming stores where aligned, without the closing store fence:
/// for callers that stream many short pieces and call [`store_fence`] once at the end.
///
/// # Safety
/// As [`copy_bytes`]; the caller fences before the data is handed to another thread.
#[inline]
pub unsafe fn copy_bytes_nt_unfenced(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded caller contract.
        unsafe { x86::copy_nt_unfenced(dst, src, n) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: caller contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    };
}

/// Writes one 64-byte line with non-temporal stores, without a fence, the widest way one
/// SIMD level has: for kernels that compute their output a line at a time and stream it out
/// while they compute the next (the caller fences once, as for [`copy_bytes_nt_unfenced`]).
/// A kernel compiled for a level takes that level's type as a parameter (so the store
/// inlines into it: [`Sse2Lines`] everywhere, [`Avx2Lines`], [`Avx512Lines`]).
///
/// ```
/// use tensor_kernels_cpu::copy::stream::{store_fence, Sse2Lines, StreamLine};
/// #[repr(align(64))]
/// struct Line([u8; 64]);
/// let (src, mut dst) = (Line([7; 64]), Line([0; 64]));
/// // SAFETY: both lines are 64 bytes, `dst` is 64-byte aligned and fenced before reading.
/// unsafe { Sse2Lines::stream_line(dst.0.as_mut_ptr(), src.0.as_ptr()) };
/// store_fence();
/// assert_eq!(dst.0, [7; 64]);
/// ```
pub trait StreamLine {
    /// Streams the 64 bytes at `src` to `dst`.
    ///
    /// # Safety
    /// `src` valid for 64 reads and aligned to 64 bytes, `dst` for 64 writes and aligned to
    /// 64 bytes; no overlap; the CPU has the type's SIMD level.
    unsafe fn stream_line(dst: *mut u8, src: *const u8);
}

/// [`StreamLine`] with 16-byte stores (SSE2, part of x86_64; a plain copy elsewhere).
#[derive(Debug, Clone, Copy)]
pub struct Sse2Lines;

impl StreamLine for Sse2Lines {
    #[inline(always)]
    unsafe fn stream_line(dst: *mut u8, src: *const u8) {
        // SAFETY: the trait's contract: 64 bytes of both lines, `dst` 64-byte aligned.
        unsafe { stream_pieces(dst, src, 64) }
    }
}

/// Writes the `bytes` (a multiple of 16) bytes at `src` to `dst` with non-temporal stores,
/// 16 bytes at a time (SSE2, part of x86_64; a plain copy elsewhere and under Miri, which
/// runs no `movntdq`). Kernels call it on a vector they just computed, so LLVM stores it
/// straight from the registers.
///
/// # Safety
/// `src` valid for `bytes` reads, `dst` for `bytes` writes and 16-byte aligned; no overlap.
#[inline(always)]
pub unsafe fn stream_pieces(dst: *mut u8, src: *const u8, bytes: usize) {
    debug_assert!(bytes.is_multiple_of(16) && (dst as usize).is_multiple_of(16));
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let mut k = 0;
        while k < bytes {
            // SAFETY: `k + 16 <= bytes`: in bounds of both (caller's contract); `dst + k` is
            // 16-byte aligned as `dst` is and `k` is a multiple of 16; SSE2 is baseline.
            unsafe { _mm_stream_si128(dst.add(k).cast::<__m128i>(), _mm_loadu_si128(src.add(k).cast::<__m128i>())) };
            k += 16;
        }
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, bytes)
    };
}

/// [`StreamLine`] with 32-byte stores (AVX2 CPUs).
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub struct Avx2Lines;

#[cfg(target_arch = "x86_64")]
impl StreamLine for Avx2Lines {
    #[inline(always)]
    unsafe fn stream_line(dst: *mut u8, src: *const u8) {
        #[target_feature(enable = "avx2")]
        #[inline]
        unsafe fn store(dst: *mut u8, src: *const u8) {
            use std::arch::x86_64::{__m256i, _mm256_load_si256, _mm256_stream_si256};
            for k in 0..2 {
                // SAFETY: the trait's contract: 32 bytes `k` of both aligned lines.
                unsafe {
                    _mm256_stream_si256(dst.add(32 * k).cast::<__m256i>(), _mm256_load_si256(src.add(32 * k).cast()))
                };
            }
        }
        // SAFETY: the trait's contract (the CPU has AVX2).
        unsafe { store(dst, src) }
    }
}

/// [`StreamLine`] with one 64-byte store (AVX-512 CPUs).
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub struct Avx512Lines;

#[cfg(target_arch = "x86_64")]
impl StreamLine for Avx512Lines {
    #[inline(always)]
    unsafe fn stream_line(dst: *mut u8, src: *const u8) {
        #[target_feature(enable = "avx512f")]
        #[inline]
        unsafe fn store(dst: *mut u8, src: *const u8) {
            use std::arch::x86_64::{_mm512_load_si512, _mm512_stream_si512};
            // SAFETY: the trait's contract: both lines aligned, 64 bytes.
            unsafe { _mm512_stream_si512(dst.cast(), _mm512_load_si512(src.cast())) };
        }
        // SAFETY: the trait's contract (the CPU has AVX-512F).
        unsafe { store(dst, src) }
    }
}

/// Fills `n` bytes at `dst` with `pattern` repeated; `pattern` is one element of `size`
/// bytes (1, 2, 4 or 8) repeated over 64 bytes, streaming the stores when `nt`.
///
/// # Safety
/// `dst` valid for `n` writes and aligned to `size`; `n` is a multiple of `size`.
#[inline]
pub unsafe fn fill_bytes(dst: *mut u8, pattern: &[u8; 64], size: usize, n: usize, nt: bool) {
    #[cfg(target_arch = "x86_64")]
    if nt && n >= NT_MIN_RUN {
        // SAFETY: forwarded caller contract.
        unsafe { x86::fill_nt(dst, pattern, n) };
        return;
    }
    let _ = nt;
    #[cfg(target_arch = "x86_64")]
    if n >= 256 {
        // SAFETY: forwarded caller contract.
        if unsafe { x86::fill_wide(dst, pattern, n) } {
            return;
        }
    }
    // SAFETY: caller contract; the helper writes exactly n bytes.
    unsafe { fill_plain(dst, pattern, size, n) };
}

/// Plain-store pattern fill in whole elements (vectorised by the compiler per size).
///
/// # Safety
/// As [`fill_bytes`].
unsafe fn fill_plain(dst: *mut u8, pattern: &[u8; 64], size: usize, n: usize) {
    macro_rules! typed {
        ($t:ty) => {{
            let v = <$t>::from_ne_bytes(pattern[..size].try_into().unwrap_or_default());
            // SAFETY: dst aligned to size_of::<$t>() and valid for n bytes (caller).
            let s = unsafe { std::slice::from_raw_parts_mut(dst as *mut $t, n / size) };
            s.fill(v);
        }};
    }
    match size {
        1 => typed!(u8),
        2 => typed!(u16),
        4 => typed!(u32),
        _ => typed!(u64),
    }
}

/// A 64-byte line holding `bytes` (one element) repeated.
pub fn pattern_of(bytes: &[u8]) -> [u8; 64] {
    let mut p = [0u8; 64];
    for (i, b) in p.iter_mut().enumerate() {
        *b = bytes[i % bytes.len()];
    }
    p
}

/// Orders earlier non-temporal stores before later stores (no-op elsewhere; a sequentially
/// consistent fence under Miri, which has no `sfence` and no weakly ordered stores).
#[inline]
pub fn store_fence() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: sfence has no memory-safety preconditions; SSE is baseline on x86_64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(miri)]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Bytes to write before `dst` is 64-byte aligned (capped at n).
    fn head_len(dst: *mut u8, n: usize) -> usize {
        ((64 - (dst as usize & 63)) & 63).min(n)
    }

    /// Streaming copy; see `super::copy_bytes`.
    ///
    /// # Safety
    /// As `super::copy_bytes`.
    pub(super) unsafe fn copy_nt(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded caller contract.
        unsafe { copy_nt_unfenced(dst, src, n) };
        super::store_fence();
    }

    /// Streaming copy without the closing fence; see `super::copy_bytes_nt_unfenced`.
    ///
    /// # Safety
    /// As `super::copy_bytes`.
    #[inline]
    pub(super) unsafe fn copy_nt_unfenced(dst: *mut u8, src: *const u8, n: usize) {
        let head = head_len(dst, n);
        // SAFETY: head <= n; ranges valid and disjoint (caller).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
        let body = (n - head) & !63;
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: avx512f detected; dst + head is 64-aligned; body bytes in range.
            unsafe { copy_body_avx512(dst.add(head), src.add(head), body) };
        } else {
            // SAFETY: SSE2 is baseline; dst + head is 64-aligned; body bytes in range.
            unsafe { copy_body_sse2(dst.add(head), src.add(head), body) };
        }
        let done = head + body;
        // SAFETY: the tail lies inside both ranges.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done) };
    }

    /// Streaming pattern fill; see `super::fill_bytes`.
    ///
    /// # Safety
    /// As `super::fill_bytes`.
    pub(super) unsafe fn fill_nt(dst: *mut u8, pattern: &[u8; 64], n: usize) {
        let head = head_len(dst, n);
        // SAFETY: head <= n bytes of dst; the pattern phase is right because dst is
        // element-aligned and the head is a whole number of elements (64-alignment of an
        // element-aligned address differs from it by a multiple of the element size).
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst, head) };
        let body = (n - head) & !63;
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: avx512f detected; aligned body inside dst.
            unsafe { fill_body_avx512(dst.add(head), pattern, body) };
        } else {
            // SAFETY: SSE2 baseline; aligned body inside dst.
            unsafe { fill_body_sse2(dst.add(head), pattern, body) };
        }
        let done = head + body;
        // SAFETY: the tail (< 64 bytes) lies inside dst; it starts on an element boundary.
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst.add(done), n - done) };
        super::store_fence();
    }

    /// Plain-store pattern fill with the widest vectors of the run-time level
    /// (AVX-512 or AVX2); `false` (nothing written) below AVX2.
    ///
    /// # Safety
    /// As `super::fill_bytes`.
    pub(super) unsafe fn fill_wide(dst: *mut u8, pattern: &[u8; 64], n: usize) -> bool {
        use crate::simd_level::{simd_level, SimdLevel};
        let level = simd_level();
        if level < SimdLevel::Avx2 {
            return false;
        }
        let head = head_len(dst, n);
        // SAFETY: head <= n bytes of dst; the pattern phase is right (see `fill_nt`).
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst, head) };
        let body = (n - head) & !63;
        // SAFETY: the level's features were detected; aligned body inside dst.
        unsafe {
            if level == SimdLevel::Avx512 {
                fill_plain_avx512(dst.add(head), pattern, body)
            } else {
                fill_plain_avx2(dst.add(head), pattern, body)
            }
        }
        let done = head + body;
        // SAFETY: the tail (< 64 bytes) lies inside dst; it starts on an element boundary.
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst.add(done), n - done) };
        true
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn fill_plain_avx512(dst: *mut u8, pattern: &[u8; 64], n: usize) {
        // SAFETY: pattern is 64 readable bytes.
        let v = unsafe { _mm512_loadu_si512(pattern.as_ptr() as *const _) };
        let mut i = 0;
        while i < n {
            // SAFETY: i + 64 <= n (n a multiple of 64); dst + i is 64-aligned.
            unsafe { _mm512_store_si512(dst.add(i) as *mut _, v) };
            i += 64;
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn fill_plain_avx2(dst: *mut u8, pattern: &[u8; 64], n: usize) {
        // SAFETY: pattern is 64 readable bytes.
        let (a, b) = unsafe {
            let p = pattern.as_ptr() as *const __m256i;
            (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)))
        };
        let mut i = 0;
        while i < n {
            // SAFETY: i + 64 <= n (n a multiple of 64); dst + i is 64-aligned.
            unsafe {
                _mm256_store_si256(dst.add(i) as *mut __m256i, a);
                _mm256_store_si256(dst.add(i + 32) as *mut __m256i, b);
            }
            i += 64;
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn copy_body_avx512(dst: *mut u8, src: *const u8, n: usize) {
        let mut i = 0;
        while i + 256 <= n {
            // SAFETY: i + 256 <= n; dst + i is 64-aligned (n, i multiples of 64).
            unsafe {
                let a = _mm512_loadu_si512(src.add(i) as *const _);
                let b = _mm512_loadu_si512(src.add(i + 64) as *const _);
                let c = _mm512_loadu_si512(src.add(i + 128) as *const _);
                let d = _mm512_loadu_si512(src.add(i + 192) as *const _);
                _mm512_stream_si512(dst.add(i) as *mut _, a);
                _mm512_stream_si512(dst.add(i + 64) as *mut _, b);
                _mm512_stream_si512(dst.add(i + 128) as *mut _, c);
                _mm512_stream_si512(dst.add(i + 192) as *mut _, d);
            }
            i += 256;
        }
        while i < n {
            // SAFETY: as above, one line.
            unsafe { _mm512_stream_si512(dst.add(i) as *mut _, _mm512_loadu_si512(src.add(i) as *const _)) };
            i += 64;
        }
    }

    #[target_feature(enable = "sse2")]
    unsafe fn copy_body_sse2(dst: *mut u8, src: *const u8, n: usize) {
        let mut i = 0;
        while i < n {
            // SAFETY: i + 64 <= n (n multiple of 64); dst + i is 64-aligned.
            unsafe {
                let a = _mm_loadu_si128(src.add(i) as *const __m128i);
                let b = _mm_loadu_si128(src.add(i + 16) as *const __m128i);
                let c = _mm_loadu_si128(src.add(i + 32) as *const __m128i);
                let d = _mm_loadu_si128(src.add(i + 48) as *const __m128i);
                _mm_stream_si128(dst.add(i) as *mut __m128i, a);
                _mm_stream_si128(dst.add(i + 16) as *mut __m128i, b);
                _mm_stream_si128(dst.add(i + 32) as *mut __m128i, c);
                _mm_stream_si128(dst.add(i + 48) as *mut __m128i, d);
            }
            i += 64;
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn fill_body_avx512(dst: *mut u8, pattern: &[u8; 64], n: usize) {
        // SAFETY: pattern is 64 readable bytes.
        let v = unsafe { _mm512_loadu_si512(pattern.as_ptr() as *const _) };
        let mut i = 0;
        while i < n {
            // SAFETY: i + 64 <= n; dst + i is 64-aligned.
            unsafe { _mm512_stream_si512(dst.add(i) as *mut _, v) };
            i += 64;
        }
    }

    #[target_feature(enable = "sse2")]
    unsafe fn fill_body_sse2(dst: *mut u8, pattern: &[u8; 64], n: usize) {
        // SAFETY: pattern is 64 readable bytes; each load reads 16 of them.
        let v: [__m128i; 4] =
            std::array::from_fn(|k| unsafe { _mm_loadu_si128(pattern.as_ptr().add(16 * k) as *const __m128i) });
        let mut i = 0;
        while i < n {
            for (k, vk) in v.iter().enumerate() {
                // SAFETY: i + 64 <= n; dst + i + 16k is 16-aligned.
                unsafe { _mm_stream_si128(dst.add(i + 16 * k) as *mut __m128i, *vk) };
            }
            i += 64;
        }
    }
}
