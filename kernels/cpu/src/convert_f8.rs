//! Contiguous runs of the 8-bit floats to and from `f32`, branch-free so that they compile to
//! vector code (AVX2 / AVX-512 through [`crate::convert`]'s level dispatch), bit for bit
//! equal to `tensor_core::F8E4M3`/`F8E5M2`'s `from_f32`/`to_f32` (checked for every pattern
//! and every f32 class in `kernels/cpu/tests/value_convert.rs`).
//!
//! Encoding rounds to nearest even in integer arithmetic for results in the normal range
//! (add half an f8 ulp less one, plus the kept bit, and shift), and for the subnormal range
//! by adding the f32 whose ulp is the format's smallest subnormal (the hardware's
//! round-to-nearest-even does the rounding; the bits above it are the code). E4M3 then
//! saturates to 448, E5M2 overflows to infinity; NaN becomes `0x7f` with its sign.

/// The parameters of one format, as shifts and bit patterns of `f32`.
#[derive(Clone, Copy)]
pub(crate) struct F8Layout {
    /// f32 mantissa bits dropped: 23 − mantissa bits.
    pub(crate) shift: u32,
    /// (127 − bias) in the f8 code's exponent position: subtracted after the shift.
    pub(crate) rebias: u32,
    /// f32 bits of the smallest normal of the format: below it the subnormal path is taken.
    pub(crate) min_normal: u32,
    /// f32 bits of 2^k whose ulp is the format's smallest subnormal.
    pub(crate) denorm_magic: u32,
    /// The code finite overflow becomes (E4M3 0x7e: saturate; E5M2 0x7c: infinity).
    pub(crate) overflow: u32,
    /// Mantissa bits.
    pub(crate) mant: u32,
    /// True for E4M3 (`0x7f` is its only NaN; no infinities).
    pub(crate) finite_only: bool,
    /// The midpoint above the largest finite value (E4M3 464, which rounds to 448; E5M2
    /// 61440, which rounds to infinity): the vector encoders clamp magnitudes to it.
    pub(crate) clamp: f32,
}

/// The layout of E4M3 (`E4 = true`) or E5M2, as a constant for the generic code.
pub(crate) const fn layout<const E4: bool>() -> F8Layout {
    if E4 {
        E4M3
    } else {
        E5M2
    }
}

/// E4M3 ("fn").
pub(crate) const E4M3: F8Layout = F8Layout {
    shift: 20,
    rebias: 120 << 3,
    min_normal: 121 << 23,
    denorm_magic: 141 << 23,
    overflow: 0x7e,
    mant: 3,
    finite_only: true,
    clamp: 464.0,
};
/// E5M2.
pub(crate) const E5M2: F8Layout = F8Layout {
    shift: 21,
    rebias: 112 << 2,
    min_normal: 113 << 23,
    denorm_magic: 134 << 23,
    overflow: 0x7c,
    mant: 2,
    finite_only: false,
    clamp: 61440.0,
};

/// One f32 to its f8 bits, without branches.
#[inline(always)]
pub(crate) fn encode<const E4: bool>(x: f32) -> u8 {
    let f = const { layout::<E4>() };
    let b = x.to_bits();
    let sign = (b >> 24) & 0x80;
    let a = b & 0x7fff_ffff;
    let normal = (a.wrapping_add((1 << (f.shift - 1)) - 1 + ((a >> f.shift) & 1)) >> f.shift).wrapping_sub(f.rebias);
    let sub = (f32::from_bits(a) + f32::from_bits(f.denorm_magic)).to_bits().wrapping_sub(f.denorm_magic);
    let code = if a < f.min_normal { sub } else { normal };
    let code = if code > f.overflow { f.overflow } else { code };
    let code = if a > 0x7f80_0000 { 0x7f } else { code };
    (sign | code) as u8
}

/// Checks a vector decoder of runs (`decode(dst, src, n, stream)`) against [`decode`] for
/// every code of the format, in every position of a step and in the tail, with plain and
/// streaming stores (outputs starting 0, 4, 20 and 60 bytes past a 64-byte line: the
/// streamed head). Shared by the tests of `convert_f8_vbmi` and `convert_f8_avx2`.
#[cfg(test)]
pub(crate) fn check_run_decoder<const E4: bool>(decode_run_with: unsafe fn(*mut f32, *const u8, usize, bool)) {
    for (rot, stream) in [0usize, 1, 37, 64].into_iter().flat_map(|r| [(r, false), (r, true)]) {
        let src: Vec<u8> = (0..256 + 71).map(|i| ((i + rot) % 256) as u8).collect();
        let mut buf = vec![f32::from_bits(0xdead_beef); src.len() + 32];
        let skip = buf.as_ptr().align_offset(64) + [0, 1, 5, 15][rot % 4];
        let dst = &mut buf[skip..skip + src.len()];
        // SAFETY: the caller checked the decoder's instruction set; equal lengths.
        unsafe { decode_run_with(dst.as_mut_ptr(), src.as_ptr(), src.len(), stream) };
        for (c, v) in src.iter().zip(dst.iter()) {
            assert_eq!(v.to_bits(), decode::<E4>(*c).to_bits(), "E4 {E4} code {c:#04x} stream {stream}");
        }
    }
}

/// One f8 (bits) to its exact f32, without branches (a NaN to the quiet NaN of its sign).
#[inline(always)]
pub(crate) const fn decode<const E4: bool>(bits: u8) -> f32 {
    let f = const { layout::<E4>() };
    let b = bits as u32;
    let sign = (b & 0x80) << 24;
    let mag = b & 0x7f;
    let normal = (mag << (23 - f.mant)).wrapping_add(f.rebias << (23 - f.mant));
    // mag · 2^(emin − mant) for subnormals: the magic's ulp times mag, exact.
    let unit = f32::from_bits(f.denorm_magic - (23 << 23));
    let sub = (mag as f32 * unit).to_bits();
    let v = if mag < 1 << f.mant { sub } else { normal };
    let special = if f.finite_only { mag == 0x7f } else { mag >= 0x7c };
    let special_bits = if f.finite_only || mag > 0x7c { 0x7fc0_0000 } else { 0x7f80_0000 };
    f32::from_bits(sign | if special { special_bits } else { v })
}

/// Converts `n` contiguous f8 (bits) to f32, one element at a time (tails, other CPUs).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
#[inline(always)]
pub(crate) unsafe fn decode_run<const E4: bool>(dst: *mut f32, src: *const u8, n: usize) {
    for j in 0..n {
        // SAFETY: j < n (the caller's contract).
        unsafe { dst.add(j).write_unaligned(decode::<E4>(src.add(j).read())) };
    }
}

/// Converts `n` contiguous f32 to f8 (bits), one element at a time (tails, other CPUs).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes (any alignment).
#[inline(always)]
pub(crate) unsafe fn encode_run<const E4: bool>(dst: *mut u8, src: *const f32, n: usize) {
    for j in 0..n {
        // SAFETY: j < n (the caller's contract).
        unsafe { dst.add(j).write(encode::<E4>(src.add(j).read_unaligned())) };
    }
}

/// The encode eight lanes at a time with AVX2, rounding by one fused multiply-add
/// (`avx512::magnitude_codes`' rule): the sixteen-lane map codec's (`byte_map::f8_avx2`,
/// the ends of a run). The casts and the maps' 32-element steps run `convert_f8_avx2`.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    #[cfg(test)]
    use super::encode_run;
    use super::layout;
    use std::arch::x86_64::*;

    /// `avx512::magnitude_codes`' rounding on eight lanes, the step shared by [`encode8`]
    /// and the 32-lane encode (`convert_f8_avx2`): the clamp of `|x|` that keeps a NaN,
    /// `P = 2^e` at least the smallest normal, one fused multiply-add at the format's ulp.
    /// Each lane of the result holds the sum's bits: exponent field above, the rounded
    /// value in ulps in the low byte (a NaN's payload bits above `0x7f80_0000`).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the function is inlined into one compiled with them).
    #[inline(always)]
    pub(crate) unsafe fn rounded_sum<const E4: bool>(x: __m256) -> __m256i {
        let f = const { layout::<E4>() };
        // SAFETY: AVX2 and FMA per the caller.
        unsafe {
            let c = |x: u32| _mm256_set1_epi32(x as i32);
            let abs = _mm256_and_si256(_mm256_castps_si256(x), c(0x7fff_ffff));
            let a = _mm256_min_ps(_mm256_set1_ps(f.clamp), _mm256_castsi256_ps(abs));
            let p = _mm256_max_epu32(_mm256_and_si256(_mm256_castps_si256(a), c(0x7f80_0000)), c(f.min_normal));
            let unit = _mm256_castsi256_ps(c((127 + f.mant - 23) << 23));
            _mm256_castps_si256(_mm256_fmadd_ps(a, unit, _mm256_castsi256_ps(p)))
        }
    }

    /// Eight values to their codes (with their signs, `0..=255` in each 32-bit lane),
    /// rounding to nearest even (E4M3 saturates, E5M2 overflows to infinity, NaN is `0x7f`
    /// with its sign).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the function is inlined into one compiled with them).
    #[inline(always)]
    pub(crate) unsafe fn encode8<const E4: bool>(x: __m256) -> __m256i {
        let f = const { layout::<E4>() };
        // SAFETY: AVX2 and FMA per the caller.
        unsafe {
            let c = |x: u32| _mm256_set1_epi32(x as i32);
            let sign = _mm256_and_si256(_mm256_srli_epi32::<24>(_mm256_castps_si256(x)), c(0x80));
            // the sum's bits are the code: ulps in the low byte, the exponent above
            let sum = rounded_sum::<E4>(x);
            let ulps = _mm256_and_si256(sum, c(0xff));
            let scale = _mm256_srl_epi32(sum, _mm_cvtsi32_si128(f.shift as i32));
            let code = _mm256_add_epi32(ulps, _mm256_sub_epi32(scale, c(f.min_normal >> f.shift)));
            // a NaN's code (above 0x7f) down to 0x7f
            _mm256_or_si256(_mm256_min_epu32(code, c(0x7f)), sign)
        }
    }

    /// Converts `n` contiguous f32 to f8 (bits) (the tests' driver of [`encode8`]; the
    /// casts run `convert_f8_avx2`).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `src` valid for `n` reads, `dst` for `n` writes (any
    /// alignment).
    #[cfg(test)]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn encode<const E4: bool>(dst: *mut u8, src: *const f32, n: usize) {
        let body = n - n % 8;
        for k in (0..body).step_by(8) {
            // SAFETY: k + 8 <= n; AVX2 per the contract.
            let r = unsafe { encode8::<E4>(_mm256_loadu_ps(src.add(k))) };
            let words = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256::<1>(r));
            // SAFETY: k + 8 <= n.
            unsafe { _mm_storel_epi64(dst.add(k).cast(), _mm_packus_epi16(words, words)) };
        }
        // SAFETY: the tail's elements are the caller's.
        unsafe { encode_run::<E4>(dst.add(body), src.add(body), n - body) }
    }
}

/// The same conversions sixteen lanes at a time with AVX-512: the scalar functions' steps,
/// selects as mask blends, results narrowed to bytes with `vpmovdb`. The lane steps
/// ([`avx512::decode16`], [`avx512::encode16`]) also serve the one-pass maps
/// (`byte_map::f8_avx512`).
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use super::{decode_run, encode_run, layout};
    use std::arch::x86_64::*;

    /// `x` in every 32-bit lane.
    #[inline(always)]
    fn splat(x: u32) -> __m512i {
        // SAFETY: AVX-512 F is what every caller runs with (their contracts).
        unsafe { _mm512_set1_epi32(x as i32) }
    }

    /// Sixteen codes (bytes) to their exact values (a NaN to the quiet NaN of its sign).
    ///
    /// # Safety
    /// The CPU has AVX-512 F (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn decode16<const E4: bool>(codes: __m128i) -> __m512 {
        let f = const { layout::<E4>() };
        // SAFETY: AVX-512 F per the caller.
        unsafe {
            let b = _mm512_cvtepu8_epi32(codes);
            let sign = _mm512_slli_epi32::<24>(_mm512_and_si512(b, splat(0x80)));
            let mag = _mm512_and_si512(b, splat(0x7f));
            let mshift = _mm_cvtsi32_si128(23 - f.mant as i32);
            let normal = _mm512_add_epi32(_mm512_sll_epi32(mag, mshift), splat(f.rebias << (23 - f.mant)));
            // subnormals: mag times the smallest subnormal, exact
            let unit = _mm512_castsi512_ps(splat(f.denorm_magic - (23 << 23)));
            let sub = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(mag), unit));
            let mut v = _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(mag, splat(1 << f.mant)), normal, sub);
            if f.finite_only {
                v = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(mag, splat(0x7f)), v, splat(0x7fc0_0000));
            } else {
                v = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(mag, splat(0x7c)), v, splat(0x7f80_0000));
                v = _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(mag, splat(0x7c)), v, splat(0x7fc0_0000));
            }
            _mm512_castsi512_ps(_mm512_or_si512(v, sign))
        }
    }

    /// Sixteen values to their codes, rounding to nearest even (E4M3 saturates, E5M2
    /// overflows to infinity, NaN is `0x7f` with its sign).
    ///
    /// # Safety
    /// The CPU has AVX-512 F (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn encode16<const E4: bool>(x: __m512) -> __m128i {
        // SAFETY: AVX-512 F per the caller.
        unsafe {
            let sign = _mm512_and_si512(_mm512_srli_epi32::<24>(_mm512_castps_si512(x)), splat(0x80));
            // a code and its sign: 0..=255, exact in the truncating narrowing
            _mm512_cvtepi32_epi8(_mm512_or_si512(magnitude16::<E4>(x), sign))
        }
    }

    /// Sixteen values' codes without their signs (`0..=0x7f` in each 32-bit lane), rounding
    /// to nearest even (E4M3 saturates, E5M2 overflows to infinity, NaN is `0x7f`):
    /// [`magnitude_codes`] with a NaN's code brought down to `0x7f`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn magnitude16<const E4: bool>(x: __m512) -> __m512i {
        // SAFETY: AVX-512 F per the caller.
        unsafe { _mm512_min_epu32(magnitude_codes::<E4>(x), splat(0x7f)) }
    }

    /// Each lane's code without its sign, by one fused multiply-add that rounds every range
    /// at once: `0..=0x7e` (E5M2 `0..=0x7c`) for a number, more than `0x7f` for a NaN.
    ///
    /// The magnitude `a` is first clamped to the midpoint above the largest finite value
    /// (E4M3 464, which rounds to 448: saturation; E5M2 61440, which rounds to 2^16:
    /// infinity), so every exponent below stays small; a NaN passes the clamp (`minps`
    /// returns its second operand when either is NaN; `vrangeps` would return the clamp).
    /// With `P = 2^e`, `e` the exponent of `a` but at least the smallest normal's,
    /// `a · 2^(mant − 23) + P` is rounded once, at `P`'s ulp `2^(e − 23)`: `a`'s at
    /// `2^(e − mant)`, the format's ulp at `e` (its smallest subnormal below the normal
    /// range), so the hardware's round-to-nearest-even is the format's. The sum's bits are
    /// `bits(P) + ulps`: the mantissa field counts the rounded value in those ulps
    /// (`2^mant ..= 2^(mant+1)` for a normal, the code itself for a subnormal), and the
    /// exponent field shifted down to the code's exponent bits, less the smallest normal's,
    /// is the code's exponent part. Nine instructions per sixteen values (the scalar
    /// [`encode`](super::encode)'s separate normal and subnormal paths took thirteen as
    /// vector code); the same codes for every f32 (the tests compare them).
    ///
    /// # Safety
    /// The CPU has AVX-512 F (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn magnitude_codes<const E4: bool>(x: __m512) -> __m512i {
        let f = const { layout::<E4>() };
        // SAFETY: AVX-512 F per the caller.
        unsafe {
            let abs = _mm512_and_si512(_mm512_castps_si512(x), splat(0x7fff_ffff));
            let a = _mm512_min_ps(_mm512_set1_ps(f.clamp), _mm512_castsi512_ps(abs));
            // P = 2^e, at least the smallest normal (a NaN's: +inf, and the sum stays NaN)
            let p = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(a), splat(0x7f80_0000)), splat(f.min_normal));
            let unit = _mm512_castsi512_ps(splat((127 + f.mant - 23) << 23));
            let sum = _mm512_castps_si512(_mm512_fmadd_ps(a, unit, _mm512_castsi512_ps(p)));
            // ulps: at most 2^(mant+1), in the low byte; the exponent field, shifted down to
            // the code's exponent bits, less the smallest normal's: the code's exponent part
            let ulps = _mm512_and_si512(sum, splat(0xff));
            let scale = _mm512_srl_epi32(sum, _mm_cvtsi32_si128(f.shift as i32));
            _mm512_add_epi32(ulps, _mm512_sub_epi32(scale, splat(f.min_normal >> f.shift)))
        }
    }

    /// Converts `n` contiguous f32 to f8 (bits).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `src` valid for `n` reads, `dst` for `n` writes (any
    /// alignment).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    pub(crate) unsafe fn encode<const E4: bool>(dst: *mut u8, src: *const f32, n: usize) {
        let body = n - n % 16;
        for k in (0..body).step_by(16) {
            // SAFETY: k + 16 <= n; AVX-512 F per the contract.
            unsafe { _mm_storeu_si128(dst.add(k).cast(), encode16::<E4>(_mm512_loadu_ps(src.add(k)))) };
        }
        // SAFETY: the tail's elements are the caller's.
        unsafe { encode_run::<E4>(dst.add(body), src.add(body), n - body) }
    }

    /// Converts `n` contiguous f8 (bits) to f32.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `src` valid for `n` reads, `dst` for `n` writes (any
    /// alignment).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    pub(crate) unsafe fn decode<const E4: bool>(dst: *mut f32, src: *const u8, n: usize) {
        let body = n - n % 16;
        for k in (0..body).step_by(16) {
            // SAFETY: k + 16 <= n; AVX-512 F per the contract.
            unsafe { _mm512_storeu_ps(dst.add(k), decode16::<E4>(_mm_loadu_si128(src.add(k).cast()))) };
        }
        // SAFETY: the tail's elements are the caller's.
        unsafe { decode_run::<E4>(dst.add(body), src.add(body), n - body) }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The AVX2 and the sixteen-lane AVX-512 encoders against the scalar rule for f32 bit
    /// patterns `start, start + step, …`, both formats.
    fn vector_encoders_match_the_rule(start: u64, step: u64) {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2") && has!("fma");
        let avx512 = has!("avx512f") && has!("avx512bw") && has!("avx512vl");
        fn each<const E4: bool>(start: u64, step: u64, avx2: bool, avx512: bool) {
            const CHUNK: usize = 1 << 20;
            let mut xs = vec![0f32; CHUNK];
            let mut out = vec![0u8; CHUNK];
            let mut next = start;
            while next < 1 << 32 {
                let mut n = 0;
                while n < CHUNK && next < 1 << 32 {
                    xs[n] = f32::from_bits(next as u32);
                    n += 1;
                    next += step;
                }
                for level in [avx2, avx512].into_iter().enumerate().filter(|l| l.1).map(|l| l.0) {
                    // SAFETY: the level's features are checked; both hold n elements.
                    unsafe {
                        if level == 0 {
                            avx2::encode::<E4>(out.as_mut_ptr(), xs.as_ptr(), n);
                        } else {
                            avx512::encode::<E4>(out.as_mut_ptr(), xs.as_ptr(), n);
                        }
                    }
                    for (x, o) in xs[..n].iter().zip(&out) {
                        assert_eq!(*o, encode::<E4>(*x), "E4 {E4} level {level} {:#010x}", x.to_bits());
                    }
                }
            }
        }
        each::<true>(start, step, avx2, avx512);
        each::<false>(start, step, avx2, avx512);
    }

    /// Every 4099th f32 pattern (every exponent, both signs, mixed low bits) through the
    /// AVX2 and sixteen-lane AVX-512 encoders.
    #[test]
    fn vector_encoders_match_the_rule_over_a_sweep() {
        vector_encoders_match_the_rule(0, 4099);
        vector_encoders_match_the_rule(1, 65_537);
    }

    /// Every f32 pattern through the AVX2 and sixteen-lane AVX-512 encoders (`cargo test
    /// --release -p tensor-kernels-cpu --lib -- --ignored vector_encoders`).
    #[test]
    #[ignore = "exhaustive over 2^32 f32 values per format and level: run in release with --ignored"]
    fn vector_encoders_match_the_rule_for_every_pattern() {
        vector_encoders_match_the_rule(0, 1);
    }
}
