//! Strided gathers into and scatters out of contiguous block buffers, converting dtypes
//! on the way (Rust `as` rules). Used by the elementwise driver for staged operands.
//!
//! Contiguous `f16`/`bf16` ↔ `f32` runs take vectorized paths that match `half`'s
//! conversions bit for bit (round to nearest even; NaN quieted with its payload kept;
//! infinities and subnormals exact): `f16` through `vcvtph2ps`/`vcvtps2ph` (16 lanes with
//! masked tails at [`SimdLevel::Avx512`], 8 lanes with F16C at [`SimdLevel::Avx2`]),
//! `bf16` through integer shifts and adds compiled for the level's registers (not
//! `vcvtneps2bf16`, which flushes subnormals). The level is [`simd_level`]'s.

use super::convert_f8::{self, decode_run, encode_run};
use super::convert_int::f32_to_int;
use super::simd_level::{has_avx512_vbmi, simd_level, SimdLevel};
#[cfg(target_arch = "x86_64")]
use super::{convert_f8_avx2, convert_f8_vbmi};
use tensor_core::{with_dtype, DType, Element};

/// Reads `n` elements of `sdt` at `src` with element stride `stride`, casting into `dst`
/// (contiguous, `ddt`).
///
/// # Safety
/// Every read element is in bounds; `dst` is valid for `n` elements of `ddt`.
pub unsafe fn gather_cast(dst: *mut u8, ddt: DType, src: *const u8, sdt: DType, stride: isize, n: usize) {
    if stride == 1 && ddt == DType::F32 {
        match sdt {
            // SAFETY: src valid for n u16 reads, dst for n f32 writes (caller's contract).
            DType::F16 => return unsafe { f16_to_f32(dst as *mut f32, src as *const u16, n) },
            // SAFETY: as above.
            DType::BF16 => return unsafe { bf16_to_f32(dst as *mut f32, src as *const u16, n) },
            // SAFETY: src valid for n byte reads, dst for n f32 writes (caller's contract).
            DType::F8E4M3 => return unsafe { f8_to_f32::<true>(dst as *mut f32, src, n) },
            // SAFETY: as above.
            DType::F8E5M2 => return unsafe { f8_to_f32::<false>(dst as *mut f32, src, n) },
            _ => {}
        }
    }
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.add(j).write(s.offset(j as isize * stride).read_unaligned().cast::<D>()) };
        }
    }))
}

/// Writes `n` contiguous elements of `sdt` from `src` into `dst` (`ddt`, element stride
/// `stride`), casting.
///
/// # Safety
/// Every written element is in bounds and exclusively the caller's; `src` valid for `n`.
pub unsafe fn scatter_cast(dst: *mut u8, ddt: DType, stride: isize, src: *const u8, sdt: DType, n: usize) {
    if stride == 1 && sdt == DType::F32 {
        match ddt {
            // SAFETY: dst valid for n u16 writes, src for n f32 reads (caller's contract).
            DType::F16 => return unsafe { f32_to_f16(dst as *mut u16, src as *const f32, n) },
            // SAFETY: as above.
            DType::BF16 => return unsafe { f32_to_bf16(dst as *mut u16, src as *const f32, n) },
            // SAFETY: dst valid for n byte writes, src for n f32 reads (caller's contract).
            DType::F8E4M3 => return unsafe { f32_to_f8::<true>(dst, src as *const f32, n) },
            // SAFETY: as above.
            DType::F8E5M2 => return unsafe { f32_to_f8::<false>(dst, src as *const f32, n) },
            // SAFETY: dst valid for n elements of ddt, src for n f32 reads (caller's contract).
            DType::I8 | DType::U8 | DType::I32 if unsafe { f32_to_int(dst, ddt, src as *const f32, n) } => return,
            _ => {}
        }
    }
    with_dtype!(ddt, D => with_dtype!(sdt, S => {
        let (d, s) = (dst as *mut D, src as *const S);
        for j in 0..n {
            // SAFETY: caller's contract.
            unsafe { d.offset(j as isize * stride).write_unaligned(s.add(j).read().cast::<D>()) };
        }
    }))
}

/// Casts `n` contiguous elements between `f32` and an 8-bit float for an output larger
/// than the cache: as [`gather_cast`]/[`scatter_cast`], with non-temporal stores (no
/// read-for-ownership of the output's lines) and fenced. With AVX-512 VBMI or AVX2 the
/// conversion streams its own registers (`convert_f8_vbmi`, `convert_f8_avx2`); below
/// them it converts 4 KiB of output at a time into an L1 buffer and streams that out.
/// `false` (nothing written) for any other pair of dtypes.
///
/// # Safety
/// `src` valid for `n` reads of `sdt`, `dst` for `n` writes of `ddt`; no overlap.
pub(crate) unsafe fn f8_run_streamed(dst: *mut u8, ddt: DType, src: *const u8, sdt: DType, n: usize) -> bool {
    let f8_pair =
        matches!((sdt, ddt), (DType::F8E4M3 | DType::F8E5M2, DType::F32) | (DType::F32, DType::F8E4M3 | DType::F8E5M2));
    if !f8_pair {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        type Decode = unsafe fn(*mut f32, *const u8, usize, bool);
        type Encode = unsafe fn(*mut u8, *const f32, usize, bool);
        // (E4M3, E5M2) of the level's streaming conversions
        let level: Option<([Decode; 2], [Encode; 2])> = if simd_level() == SimdLevel::Avx512 && has_avx512_vbmi() {
            use convert_f8_vbmi::{decode_f8, encode_f8};
            Some(([decode_f8::<true>, decode_f8::<false>], [encode_f8::<true>, encode_f8::<false>]))
        } else if simd_level() == SimdLevel::Avx2 && std::arch::is_x86_feature_detected!("f16c") {
            use convert_f8_avx2::{decode_f8, encode_f8};
            Some(([decode_f8::<true>, decode_f8::<false>], [encode_f8::<true>, encode_f8::<false>]))
        } else {
            None
        };
        if let Some((decode, encode)) = level {
            let e5 = usize::from(sdt == DType::F8E5M2 || ddt == DType::F8E5M2);
            // SAFETY: AVX-512 F/BW/VL (the level) and VBMI (checked), or AVX2 and FMA (the
            // level) and F16C (checked); the pointers per the caller, of the pair's types.
            unsafe {
                if ddt == DType::F32 {
                    decode[e5](dst.cast(), src, n, true)
                } else {
                    encode[e5](dst, src.cast(), n, true)
                }
            }
            return true;
        }
    }
    // SAFETY: forwarded.
    unsafe { f8_run_staged(dst, ddt, src, sdt, n) };
    true
}

/// [`f8_run_streamed`] below AVX2: 4 KiB of output at a time converted into an L1 buffer
/// ([`gather_cast`]/[`scatter_cast`]) and streamed out, fenced.
///
/// # Safety
/// As [`f8_run_streamed`], for one of its pairs of dtypes.
unsafe fn f8_run_staged(dst: *mut u8, ddt: DType, src: *const u8, sdt: DType, n: usize) {
    #[repr(align(64))]
    struct Stage([u8; 4096]);
    let mut stage = Stage([0; 4096]);
    let (size_in, size_out) = (sdt.size(), ddt.size());
    let per = stage.0.len() / size_out;
    let mut i = 0;
    while i < n {
        let m = per.min(n - i);
        let buf = stage.0.as_mut_ptr();
        // SAFETY: elements i..i + m of both operands are the caller's; the stage holds
        // `per >= m` elements of `ddt`.
        unsafe {
            if ddt == DType::F32 {
                gather_cast(buf, ddt, src.add(i * size_in), sdt, 1, m);
            } else {
                scatter_cast(buf, ddt, 1, src.add(i * size_in), sdt, m);
            }
            crate::copy::stream::copy_bytes_nt_unfenced(dst.add(i * size_out), buf, m * size_out);
        }
        i += m;
    }
    crate::copy::stream::store_fence();
}

/// `bf16` bits → `f32`, as `half` (a NaN gets its quiet bit set).
#[inline(always)]
fn bf16_bits_to_f32(b: u16) -> f32 {
    let nan = b & 0x7fff > 0x7f80;
    f32::from_bits(((b | if nan { 0x0040 } else { 0 }) as u32) << 16)
}

/// `f32` → `bf16` bits, as `half`: round to nearest even, a NaN keeps its high payload
/// bits and gets its quiet bit set.
#[inline(always)]
fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let nan = b & 0x7fff_ffff > 0x7f80_0000;
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    if nan {
        ((b >> 16) | 0x0040) as u16
    } else {
        rounded
    }
}

/// Converts `n` contiguous `f16` (bits) to `f32`.
///
/// # Safety
/// `src` valid for `n` reads (any alignment), `dst` for `n` writes.
pub unsafe fn f16_to_f32(dst: *mut f32, src: *const u16, n: usize) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level never exceeds the CPU's: AVX-512 F/BW/VL are available;
        // pointers per the caller.
        SimdLevel::Avx512 => return unsafe { x86::f16_to_f32_avx512(dst, src, n) },
        SimdLevel::Avx2 if std::arch::is_x86_feature_detected!("f16c") => {
            // SAFETY: F16C (checked) and AVX2 (the level) are available; pointers per the
            // caller.
            return unsafe { x86::f16_to_f32(dst, src, n) };
        }
        _ => {}
    }
    for j in 0..n {
        // SAFETY: j < n (caller's contract).
        unsafe { dst.add(j).write(half::f16::from_bits(src.add(j).read_unaligned()).to_f32()) };
    }
}

/// Converts `n` contiguous `f32` to `f16` (bits), rounding to nearest even.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
pub unsafe fn f32_to_f16(dst: *mut u16, src: *const f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level never exceeds the CPU's: AVX-512 F/BW/VL are available;
        // pointers per the caller.
        SimdLevel::Avx512 => return unsafe { x86::f32_to_f16_avx512(dst, src, n) },
        SimdLevel::Avx2 if std::arch::is_x86_feature_detected!("f16c") => {
            // SAFETY: F16C (checked) and AVX2 (the level) are available; pointers per the
            // caller.
            return unsafe { x86::f32_to_f16(dst, src, n) };
        }
        _ => {}
    }
    for j in 0..n {
        // SAFETY: j < n (caller's contract).
        unsafe { dst.add(j).write_unaligned(half::f16::from_f32(src.add(j).read()).to_bits()) };
    }
}

/// Converts `n` contiguous `bf16` (bits) to `f32`.
///
/// # Safety
/// `src` valid for `n` reads (any alignment), `dst` for `n` writes.
pub unsafe fn bf16_to_f32(dst: *mut f32, src: *const u16, n: usize) {
    #[inline(always)]
    unsafe fn run(dst: *mut f32, src: *const u16, n: usize) {
        for j in 0..n {
            // SAFETY: j < n (caller's contract).
            unsafe { dst.add(j).write(bf16_bits_to_f32(src.add(j).read_unaligned())) };
        }
    }
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level never exceeds the CPU's: AVX-512 F/BW are available; pointers
        // per the caller.
        SimdLevel::Avx512 => return unsafe { x86::avx512(|| run(dst, src, n)) },
        // SAFETY: AVX2 is available (as above); pointers per the caller.
        SimdLevel::Avx2 => return unsafe { x86::avx2(|| run(dst, src, n)) },
        SimdLevel::Baseline => {}
    }
    // SAFETY: forwarded.
    unsafe { run(dst, src, n) }
}

/// Converts `n` contiguous `f32` to `bf16` (bits), rounding to nearest even.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
pub unsafe fn f32_to_bf16(dst: *mut u16, src: *const f32, n: usize) {
    #[inline(always)]
    unsafe fn run(dst: *mut u16, src: *const f32, n: usize) {
        for j in 0..n {
            // SAFETY: j < n (caller's contract).
            unsafe { dst.add(j).write_unaligned(f32_to_bf16_bits(src.add(j).read())) };
        }
    }
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level never exceeds the CPU's: AVX-512 F/BW are available; pointers
        // per the caller.
        SimdLevel::Avx512 => return unsafe { x86::avx512(|| run(dst, src, n)) },
        // SAFETY: AVX2 is available (as above); pointers per the caller.
        SimdLevel::Avx2 => return unsafe { x86::avx2(|| run(dst, src, n)) },
        SimdLevel::Baseline => {}
    }
    // SAFETY: forwarded.
    unsafe { run(dst, src, n) }
}

/// Converts `n` contiguous 8-bit floats (bits; E4M3 when `E4`, else E5M2) to `f32`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
pub(crate) unsafe fn f8_to_f32<const E4: bool>(dst: *mut f32, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level says AVX-512 F/BW/DQ/VL, and VBMI is checked; pointers per the
        // caller.
        SimdLevel::Avx512 if has_avx512_vbmi() => {
            return unsafe { convert_f8_vbmi::decode_f8::<E4>(dst, src, n, false) }
        }
        // SAFETY: the level says AVX-512 F/BW/DQ/VL; pointers per the caller.
        SimdLevel::Avx512 => return unsafe { convert_f8::avx512::decode::<E4>(dst, src, n) },
        SimdLevel::Avx2 if std::arch::is_x86_feature_detected!("f16c") => {
            // SAFETY: the level says AVX2 and FMA, F16C is checked; pointers per the caller.
            return unsafe { convert_f8_avx2::decode_f8::<E4>(dst, src, n, false) };
        }
        SimdLevel::Avx2 | SimdLevel::Baseline => {}
    }
    // SAFETY: forwarded.
    unsafe { decode_run::<E4>(dst, src, n) }
}

/// Converts `n` contiguous `f32` to 8-bit floats (bits; E4M3 when `E4`, else E5M2),
/// rounding to nearest even (`tensor_core::F8E4M3::from_f32`'s rule).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
pub(crate) unsafe fn f32_to_f8<const E4: bool>(dst: *mut u8, src: *const f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    match simd_level() {
        // SAFETY: the level says AVX-512 F/BW/DQ/VL, and VBMI is checked; pointers per the
        // caller.
        SimdLevel::Avx512 if has_avx512_vbmi() => {
            return unsafe { convert_f8_vbmi::encode_f8::<E4>(dst, src, n, false) }
        }
        // SAFETY: the level says AVX-512 F/BW/DQ/VL; pointers per the caller.
        SimdLevel::Avx512 => return unsafe { convert_f8::avx512::encode::<E4>(dst, src, n) },
        // SAFETY: the level says AVX2 and FMA; pointers per the caller.
        SimdLevel::Avx2 => return unsafe { convert_f8_avx2::encode_f8::<E4>(dst, src, n, false) },
        SimdLevel::Baseline => {}
    }
    // SAFETY: forwarded.
    unsafe { encode_run::<E4>(dst, src, n) }
}

/// The 8-bit float conversions by dtype, for tests: (`to_f32`, `from_f32`) over slices.
///
/// ```
/// use tensor_kernels_cpu::convert::f8_slices;
/// use tensor_core::DType;
/// let (to, from) = f8_slices(DType::F8E4M3).unwrap();
/// let mut x = [0f32; 2];
/// to(&mut x, &[0x38, 0xfe]);
/// assert_eq!(x, [1.0, -448.0]);
/// let mut b = [0u8; 2];
/// from(&mut b, &[1000.0, f32::NAN]);
/// assert_eq!(b, [0x7e, 0x7f]);
/// ```
#[allow(clippy::type_complexity)]
pub fn f8_slices(d: DType) -> Option<(fn(&mut [f32], &[u8]), fn(&mut [u8], &[f32]))> {
    fn to<const E4: bool>(dst: &mut [f32], src: &[u8]) {
        let n = dst.len().min(src.len());
        // SAFETY: both slices hold at least n elements.
        unsafe { f8_to_f32::<E4>(dst.as_mut_ptr(), src.as_ptr(), n) }
    }
    fn from<const E4: bool>(dst: &mut [u8], src: &[f32]) {
        let n = dst.len().min(src.len());
        // SAFETY: both slices hold at least n elements.
        unsafe { f32_to_f8::<E4>(dst.as_mut_ptr(), src.as_ptr(), n) }
    }
    match d {
        DType::F8E4M3 => Some((to::<true>, from::<true>)),
        DType::F8E5M2 => Some((to::<false>, from::<false>)),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Runs `f` (inlined) in a function compiled with AVX2.
    ///
    /// # Safety
    /// The CPU supports AVX2; `f`'s own requirements hold.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn avx2(f: impl FnOnce()) {
        f()
    }

    /// Runs `f` (inlined) in a function compiled with AVX-512 F/BW.
    ///
    /// # Safety
    /// The CPU supports AVX-512 F and BW; `f`'s own requirements hold.
    #[target_feature(enable = "avx512f,avx512bw,avx2")]
    #[inline]
    pub unsafe fn avx512(f: impl FnOnce()) {
        f()
    }

    /// `(1 << m) - 1`: the first `m` of 16 lanes, for `m < 16`.
    #[inline(always)]
    fn first_lanes(m: usize) -> __mmask16 {
        ((1u32 << m) - 1) as __mmask16
    }

    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `src` valid for `n` reads, `dst` for `n` writes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn f16_to_f32_avx512(dst: *mut f32, src: *const u16, n: usize) {
        let mut j = 0;
        while j + 16 <= n {
            // SAFETY: j + 16 <= n: 32 bytes readable at src + j, 64 writable at dst + j;
            // both intrinsics take unaligned pointers.
            unsafe {
                let h = _mm256_loadu_si256(src.add(j) as *const __m256i);
                _mm512_storeu_ps(dst.add(j), _mm512_cvtph_ps(h));
            }
            j += 16;
        }
        if j < n {
            let k = first_lanes(n - j);
            // SAFETY: the masked load and store touch only the first n - j < 16 elements
            // at src + j and dst + j (masked-off lanes are neither read nor written, and
            // cannot fault).
            unsafe {
                let h = _mm256_maskz_loadu_epi16(k, src.add(j) as *const i16);
                _mm512_mask_storeu_ps(dst.add(j), k, _mm512_cvtph_ps(h));
            }
        }
    }

    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `src` valid for `n` reads, `dst` for `n` writes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn f32_to_f16_avx512(dst: *mut u16, src: *const f32, n: usize) {
        let mut j = 0;
        while j + 16 <= n {
            // SAFETY: j + 16 <= n: 64 bytes readable at src + j, 32 writable at dst + j;
            // unaligned loads/stores.
            unsafe {
                let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_loadu_ps(src.add(j)));
                _mm256_storeu_si256(dst.add(j) as *mut __m256i, h);
            }
            j += 16;
        }
        if j < n {
            let k = first_lanes(n - j);
            // SAFETY: as in `f16_to_f32_avx512`: only the first n - j elements are touched.
            unsafe {
                let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_maskz_loadu_ps(k, src.add(j)));
                _mm256_mask_storeu_epi16(dst.add(j) as *mut i16, k, h);
            }
        }
    }

    /// # Safety
    /// The CPU has F16C and AVX; `src` valid for `n` reads, `dst` for `n` writes.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn f16_to_f32(dst: *mut f32, src: *const u16, n: usize) {
        let mut j = 0;
        while j + 8 <= n {
            // SAFETY: j + 8 <= n: 16 bytes readable at src + j, 32 writable at dst + j;
            // both intrinsics take unaligned pointers.
            unsafe {
                let h = _mm_loadu_si128(src.add(j) as *const __m128i);
                _mm256_storeu_ps(dst.add(j), _mm256_cvtph_ps(h));
            }
            j += 8;
        }
        while j < n {
            // SAFETY: j < n; one element, zero-extended into a vector register.
            unsafe {
                let h = _mm_cvtsi32_si128(src.add(j).read_unaligned() as i32);
                dst.add(j).write(_mm_cvtss_f32(_mm_cvtph_ps(h)));
            }
            j += 1;
        }
    }

    /// # Safety
    /// The CPU has F16C and AVX; `src` valid for `n` reads, `dst` for `n` writes.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn f32_to_f16(dst: *mut u16, src: *const f32, n: usize) {
        let mut j = 0;
        while j + 8 <= n {
            // SAFETY: j + 8 <= n: 32 bytes readable at src + j, 16 writable at dst + j;
            // unaligned loads/stores.
            unsafe {
                let v = _mm256_loadu_ps(src.add(j));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.add(j) as *mut __m128i, h);
            }
            j += 8;
        }
        while j < n {
            // SAFETY: j < n; one element.
            unsafe {
                let v = _mm_set_ss(src.add(j).read());
                let h = _mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                dst.add(j).write_unaligned(_mm_cvtsi128_si32(h) as u16);
            }
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert_f8::{decode, encode};

    /// A streamed run of `n` f8 codes to f32 and of `n` f32 values to f8, written `skip`
    /// elements past a 64-byte line by `run` (the streamed or the staged form), against the
    /// scalar rules.
    fn check<const E4: bool>(n: usize, skip: usize, staged: bool) {
        let run = |dst: *mut u8, ddt: DType, src: *const u8, sdt: DType| {
            if staged {
                // SAFETY: per `check`'s buffers below.
                unsafe { f8_run_staged(dst, ddt, src, sdt, n) };
                true
            } else {
                // SAFETY: as above.
                unsafe { f8_run_streamed(dst, ddt, src, sdt, n) }
            }
        };
        let (f8, level) = (if E4 { DType::F8E4M3 } else { DType::F8E5M2 }, simd_level());
        let codes: Vec<u8> = (0..n).map(|i| (i * 37 + i / 256) as u8).collect();
        let mut out = vec![f32::from_bits(0xdead_beef); n + 32];
        let at = out.as_ptr().align_offset(64) + skip;
        // `out[at..]` holds n f32, `codes` n bytes; disjoint.
        assert!(run(out[at..].as_mut_ptr().cast(), DType::F32, codes.as_ptr(), f8));
        for (c, x) in codes.iter().zip(&out[at..at + n]) {
            assert_eq!(x.to_bits(), decode::<E4>(*c).to_bits(), "{f8} → f32 {c:#04x}, n {n}, {level:?}");
        }
        assert!(out[..at].iter().chain(&out[at + n..]).all(|x| x.to_bits() == 0xdead_beef), "outside the run");
        let xs: Vec<f32> = (0..n as u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))).collect();
        let mut bytes = vec![0xa5u8; n + 128];
        let at = bytes.as_ptr().align_offset(64) + skip;
        // `bytes[at..]` holds n bytes, `xs` n f32; disjoint.
        assert!(run(bytes[at..].as_mut_ptr(), f8, xs.as_ptr().cast(), DType::F32));
        for (x, c) in xs.iter().zip(&bytes[at..at + n]) {
            assert_eq!(*c, encode::<E4>(*x), "f32 {:#010x} → {f8}, n {n}, {level:?}", x.to_bits());
        }
        assert!(bytes[..at].iter().chain(&bytes[at + n..]).all(|&b| b == 0xa5), "outside the run");
    }

    /// The streamed f8 ↔ f32 runs (large casts) equal the scalar rules, in this CPU's form
    /// and in the staged form of the levels below VBMI: around the 4 KiB stage and the
    /// 64-element steps, aligned and not. (The level is not switched here: tests run in
    /// parallel, and the byte maps' tests read it.)
    #[test]
    fn streamed_f8_runs_equal_the_scalar_rules() {
        for staged in [false, true] {
            for n in [0, 1, 63, 1024, 1025, 4096 + 77, 3 * 4096 + 5] {
                for skip in [0, 5] {
                    check::<true>(n, skip, staged);
                    check::<false>(n, skip, staged);
                }
            }
        }
        // SAFETY: nothing is read or written for a pair without an 8-bit float.
        assert!(!unsafe { f8_run_streamed(std::ptr::null_mut(), DType::F16, std::ptr::null(), DType::F32, 0) });
    }
}
