//! The 8-bit floats thirty-two at a time with AVX2 (CPUs without AVX-512: Zen 2 and 3,
//! Intel before Ice Lake and its small cores).
//!
//! E4M3 decodes by byte arithmetic on the 32 codes of one register, building the two high
//! bytes of each value's f32 (the low two are zero for every value of both formats): for
//! a normal code, the exponent's upper bits looked up (`vpshufb`, rebiased) and the
//! exponent's lowest bit and the mantissa shifted within the byte; the zero, the
//! subnormals and the NaN take both bytes from two more lookups picked by one compare;
//! two rounds of unpacking with zeros widen the bytes to four registers of f32. About 21
//! instructions per 32 values and no f32 arithmetic (see [`decode32_bytes`] for why),
//! where the F16C route of `byte_map::f8_avx2` takes about 28. E5M2, an f16's high byte,
//! decodes through F16C in 8 ([`decode32_f16c`]).
//!
//! Encoding rounds each register by `convert_f8::avx512::magnitude_codes`' fused
//! multiply-add, and reads the code off the sum with one `vpmaddwd` (the exponent half
//! times `2^(mant+1)` plus the mantissa half times 256: the code times 256, less a
//! constant) instead of a mask, a shift and two adds; saturating packs narrow the codes
//! (a NaN's large value saturates to `0x7f`) and the input's signs. Eight instructions
//! per eight values, ten per 32 to narrow (the AVX2 encoder per eight lanes took thirteen,
//! four to narrow).
//!
//! Unpacks and packs work within 128-bit lanes: register `q` of the E4M3 decode holds
//! elements `4q ..+ 4` and `16 + 4q ..+ 4`, and [`encode32`]'s packs put those back in
//! memory order, so an E4M3 map (whose lanes are independent) needs no reordering; the
//! E5M2 decode gives memory order, and its maps and the casts (which load or store f32 in
//! memory order) reorder the codes with one `vpermd`. Results are `convert_f8`'s
//! ([`decode`](crate::convert_f8::decode), [`encode`](crate::convert_f8::encode)) bit for
//! bit (with `EXACT_NAN`; without it an E5M2 NaN code decodes to a NaN of its sign with
//! another payload); the tests compare every code and every f32.

use crate::convert_f8::{avx2, decode_run, encode_run, layout};
use crate::copy::stream::store_fence;
use std::arch::x86_64::*;

/// `x` in every byte.
#[inline(always)]
fn bytes(x: u8) -> __m256i {
    // SAFETY: AVX (a broadcast) is what every caller runs with (their contracts).
    unsafe { _mm256_set1_epi8(x as i8) }
}

/// `x` in every 32-bit lane.
#[inline(always)]
fn dwords(x: u32) -> __m256i {
    // SAFETY: as [`bytes`].
    unsafe { _mm256_set1_epi32(x as i32) }
}

/// The dword order that turns memory order into the unpacks' (for a decode) and the
/// packs' order into memory order (for an encode): dword `j` of the result is dword
/// `ORDER[j]` of the operand (`vpermd`).
const TO_UNPACK_ORDER: [i32; 8] = [0, 2, 4, 6, 1, 3, 5, 7];
/// The inverse of [`TO_UNPACK_ORDER`].
const FROM_PACK_ORDER: [i32; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// The three `vpshufb` tables of one format's decode, in registers (built once per run):
/// each 16 bytes, repeated in both 128-bit lanes.
#[derive(Clone, Copy)]
pub(crate) struct Tables {
    /// A normal code's f32 high byte (without the sign), indexed by the code's exponent
    /// bits above the lowest: `(e >> 1) + (127 − bias) / 2`.
    normal_high: __m256i,
    /// A zero, subnormal or special code's f32 high byte (without the sign), by the
    /// magnitude's low nibble.
    sub_high: __m256i,
    /// The same codes' f32 second byte.
    sub_low: __m256i,
}

/// One byte of the format's f32 values (`HIGH`: the high byte without the sign, else the
/// second byte; the low two bytes of every value are zero), each entry repeated in both
/// lanes: with `SUBNORMAL`, entry `i` is magnitude `i` below `2^mant` (the zero and the
/// subnormals) and `0x70 | i` above (the specials among them: E4M3's NaN `0x7f`, E5M2's
/// infinity `0x7c` and NaNs, with the scalar rule's exact bits); else entry `n` is the
/// high byte of the normal codes whose exponent's upper bits are `n` (exponents `2n` and
/// `2n + 1` share it, the bias being even; built from exponent `max(2n, 1)`).
const fn table<const E4: bool, const SUBNORMAL: bool, const HIGH: bool>() -> [u8; 32] {
    let f = layout::<E4>();
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 16 {
        let code = if SUBNORMAL {
            // the zero and the subnormals, then the specials' low nibbles
            (if i < 1 << f.mant { i } else { 0x70 | i }) as u8
        } else {
            // (entries past the format's exponents are never looked up; kept in range)
            let e = if i == 0 { 1 } else { 2 * i };
            ((e << f.mant) & 0x7f) as u8
        };
        let bits = crate::convert_f8::decode::<E4>(code).to_bits();
        let byte = if HIGH { ((bits >> 24) & 0x7f) as u8 } else { (bits >> 16) as u8 };
        t[i] = byte;
        t[i + 16] = byte;
        i += 1;
    }
    t
}

impl Tables {
    /// The tables of E4M3 (`E4`) or E5M2.
    ///
    /// # Safety
    /// The CPU has AVX2 (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn new<const E4: bool>() -> Tables {
        let normal_high = const { table::<E4, false, true>() };
        let sub_high = const { table::<E4, true, true>() };
        let sub_low = const { table::<E4, true, false>() };
        // SAFETY: AVX per the caller; each array is 32 bytes (unaligned loads).
        unsafe {
            Tables {
                normal_high: _mm256_loadu_si256(normal_high.as_ptr().cast()),
                sub_high: _mm256_loadu_si256(sub_high.as_ptr().cast()),
                sub_low: _mm256_loadu_si256(sub_low.as_ptr().cast()),
            }
        }
    }
}

/// Thirty-two codes to their exact values, eight per register: E4M3 in the unpacks' order
/// (register `q`: elements `4q ..+ 4`, then `16 + 4q ..+ 4`) by [`decode32_bytes`], E5M2
/// in memory order by [`decode32_f16c`] ([`decodes_in_memory_order`] says which). A NaN
/// code becomes a NaN of its sign: with `EXACT_NAN` the quiet NaN
/// [`decode`](crate::convert_f8::decode) gives (the casts), else one with another payload
/// (maps, whose NaN results all encode alike).
///
/// # Safety
/// The CPU has AVX2 and F16C (the function is inlined into one compiled with them).
#[inline(always)]
pub(crate) unsafe fn decode32<const E4: bool, const EXACT_NAN: bool>(t: &Tables, c: __m256i) -> [__m256; 4] {
    // SAFETY: AVX2 and F16C per the caller.
    unsafe {
        if E4 {
            decode32_bytes::<E4>(t, c)
        } else {
            decode32_f16c::<EXACT_NAN>(c)
        }
    }
}

/// Whether [`decode32`] gives registers in memory order for E4M3 (`e4`) or E5M2: then a
/// map's encode reorders ([`encode32`] with `ORDERED`), else it must not.
pub(crate) const fn decodes_in_memory_order(e4: bool) -> bool {
    !e4
}

/// Thirty-two E5M2 codes to their values through F16C, eight per register in memory
/// order: an E5M2 code is the high byte of an f16 of the same value, so one unpack with
/// zeros makes the f16s and `vcvtph2ps` the f32s (subnormals, infinities and NaNs
/// included; a NaN keeps its sign and the quiet bit, and without `EXACT_NAN` its payload).
/// Eight instructions per 32 codes.
///
/// # Safety
/// The CPU has AVX2 and F16C (the function is inlined into one compiled with them).
#[inline(always)]
unsafe fn decode32_f16c<const EXACT_NAN: bool>(c: __m256i) -> [__m256; 4] {
    // SAFETY: AVX2 and F16C per the caller.
    unsafe {
        let zero = _mm256_setzero_si256();
        // lane 0 of `low` holds codes 0..8, lane 1 codes 16..24; `high` 8..16 and 24..32
        let (low, high) = (_mm256_unpacklo_epi8(zero, c), _mm256_unpackhi_epi8(zero, c));
        let v = [
            _mm256_cvtph_ps(_mm256_castsi256_si128(low)),
            _mm256_cvtph_ps(_mm256_castsi256_si128(high)),
            _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(low)),
            _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(high)),
        ];
        if !EXACT_NAN {
            return v;
        }
        [quiet_nan(v[0]), quiet_nan(v[1]), quiet_nan(v[2]), quiet_nan(v[3])]
    }
}

/// `x` with each NaN lane made the scalar rule's NaN: its sign, an all-ones exponent and
/// the quiet bit only.
///
/// # Safety
/// The CPU has AVX (the function is inlined into one compiled with it).
#[inline(always)]
unsafe fn quiet_nan(x: __m256) -> __m256 {
    // SAFETY: AVX per the caller.
    unsafe {
        let quiet = _mm256_and_ps(x, _mm256_castsi256_ps(dwords(0xffc0_0000)));
        _mm256_blendv_ps(x, quiet, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }
}

/// [`decode32`] for E4M3 by byte arithmetic, in the unpacks' order.
///
/// A normal code's f32 is its exponent and mantissa bits moved into the f32's fields, the
/// exponent rebiased: the high byte (sign, exponent's top seven bits) by one `vpshufb` on
/// the exponent's upper bits, the second byte (exponent's lowest bit, mantissa) by a shift
/// within the byte. The zero, the subnormals (magnitude below `2^mant`) and the specials
/// take both bytes from two more `vpshufb` on the magnitude's low nibble (one compare picks
/// them). No arithmetic on f32 lanes: an earlier form
/// that multiplied a scaled f32 by `2^(127 − bias)` ran at half speed on data with
/// subnormal codes (Zen 3 multiplies f32 subnormals slowly; 19 cycles per 32 codes against
/// 10, all codes uniformly). Written for both formats (the tests run E5M2 through it too).
///
/// # Safety
/// The CPU has AVX2 (the function is inlined into one compiled with it).
#[inline(always)]
unsafe fn decode32_bytes<const E4: bool>(t: &Tables, c: __m256i) -> [__m256; 4] {
    let f = const { layout::<E4>() };
    // SAFETY: AVX2 per the caller.
    unsafe {
        let mag = _mm256_and_si256(c, bytes(0x7f));
        let sign = _mm256_and_si256(c, bytes(0x80));
        // the exponent's bits above its lowest (16-bit shift: the bits from the other byte
        // of the word are masked off)
        let upper =
            _mm256_and_si256(_mm256_srl_epi16(c, _mm_cvtsi32_si128(f.mant as i32 + 1)), bytes(0x7f >> (f.mant + 1)));
        let low =
            _mm256_and_si256(_mm256_sll_epi16(c, _mm_cvtsi32_si128(7 - f.mant as i32)), bytes(0xff << (7 - f.mant)));
        // the looked-up codes: the zero and the subnormals (below 2^mant) and the specials
        // (from E4M3 0x7f, E5M2 0x7c), in one signed compare once the specials are moved
        // past 0x7f
        let first_special = if E4 { 0x7f } else { 0x7c };
        let moved = _mm256_add_epi8(mag, bytes(0x80 - first_special));
        let looked_up = _mm256_cmpgt_epi8(bytes(0x80 - first_special + (1 << f.mant)), moved);
        let hi = _mm256_blendv_epi8(
            _mm256_shuffle_epi8(t.normal_high, upper),
            _mm256_shuffle_epi8(t.sub_high, mag),
            looked_up,
        );
        let hi = _mm256_or_si256(hi, sign);
        // (the specials get the scalar rule's exact bits, the casts' EXACT_NAN at no cost)
        let lo = _mm256_blendv_epi8(low, _mm256_shuffle_epi8(t.sub_low, mag), looked_up);
        let (words_lo, words_hi) = (_mm256_unpacklo_epi8(lo, hi), _mm256_unpackhi_epi8(lo, hi));
        let zero = _mm256_setzero_si256();
        [
            _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, words_lo)),
            _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, words_lo)),
            _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, words_hi)),
            _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, words_hi)),
        ]
    }
}

/// Eight values' codes without their signs, times 256, in each 32-bit lane (`0..=0x7e00`;
/// E5M2 `0..=0x7c00`); a NaN's is above `0x7fff`.
///
/// [`avx2::rounded_sum`] (`convert_f8::avx512::magnitude_codes`' rounding); the sum's
/// high 16 bits are its exponent field times 128, its low 16 the rounded value in ulps
/// (at most `2^(mant+1)`, below 256), so `vpmaddwd` with weights `2^(mant+1)` and 256
/// gives `(exponent << (mant + 8)) + ulps · 256`, and less the smallest normal's exponent
/// that is the code times 256. A NaN's payload is first capped at 255 ulps (its exponent
/// half alone then puts it above `0x7fff`).
///
/// # Safety
/// The CPU has AVX2 and FMA (the function is inlined into one compiled with them).
#[inline(always)]
unsafe fn codes_x256<const E4: bool>(x: __m256) -> __m256i {
    let f = const { layout::<E4>() };
    // SAFETY: AVX2 and FMA per the caller.
    unsafe {
        let sum = avx2::rounded_sum::<E4>(x);
        let capped = _mm256_min_epu16(sum, dwords(0xffff_00ff));
        let weighted = _mm256_madd_epi16(capped, dwords((1 << (f.mant + 1)) << 16 | 256));
        _mm256_sub_epi32(weighted, dwords((f.min_normal >> 23) << (f.mant + 8)))
    }
}

/// Thirty-two values (eight per register: in memory order when `ORDERED`, else in
/// [`decode32`]'s unpack order) to their codes in memory order, as
/// [`encode`](crate::convert_f8::encode) (nearest even; E4M3 saturates, E5M2 overflows
/// to infinity; NaN is `0x7f` with its sign).
///
/// # Safety
/// The CPU has AVX2 and FMA (the function is inlined into one compiled with them).
#[inline(always)]
pub(crate) unsafe fn encode32<const E4: bool, const ORDERED: bool>(v: [__m256; 4]) -> __m256i {
    // SAFETY: AVX2 and FMA per the caller.
    unsafe {
        // (no closures: they would not inherit the caller's target features)
        let r = [codes_x256::<E4>(v[0]), codes_x256::<E4>(v[1]), codes_x256::<E4>(v[2]), codes_x256::<E4>(v[3])];
        // numbers stay (at most 0x7e00), a NaN saturates to 0x7fff; the high bytes are
        // the codes
        let low = _mm256_srli_epi16::<8>(_mm256_packs_epi32(r[0], r[1]));
        let high = _mm256_srli_epi16::<8>(_mm256_packs_epi32(r[2], r[3]));
        let codes = _mm256_packus_epi16(low, high);
        // the signed packs keep each lane's sign bit
        let b = [
            _mm256_castps_si256(v[0]),
            _mm256_castps_si256(v[1]),
            _mm256_castps_si256(v[2]),
            _mm256_castps_si256(v[3]),
        ];
        let signs = _mm256_packs_epi16(_mm256_packs_epi32(b[0], b[1]), _mm256_packs_epi32(b[2], b[3]));
        let codes = _mm256_or_si256(codes, _mm256_and_si256(signs, bytes(0x80)));
        if ORDERED {
            _mm256_permutevar8x32_epi32(codes, _mm256_loadu_si256(FROM_PACK_ORDER.as_ptr().cast()))
        } else {
            codes
        }
    }
}

/// Converts `n` contiguous f8 (bits) to f32; with `stream`, the part from `dst`'s first
/// 32-byte boundary is written with non-temporal stores and fenced before returning (for
/// outputs larger than the cache: no read-for-ownership of the lines written).
///
/// # Safety
/// The CPU has AVX2 and F16C; `src` valid for `n` reads, `dst` for `n` writes (any
/// alignment).
#[target_feature(enable = "avx2,f16c")]
pub(crate) unsafe fn decode_f8<const E4: bool>(dst: *mut f32, src: *const u8, n: usize, stream: bool) {
    // (an f32 pointer that is not 4-byte aligned never reaches a boundary: all scalar)
    let head = if stream { dst.align_offset(32).min(n) } else { 0 };
    // SAFETY: the head's elements are the caller's.
    unsafe { decode_run::<E4>(dst, src, head) };
    let body = head + (n - head) / 32 * 32;
    // SAFETY: eight i32 (an unaligned load); AVX2 per the contract.
    let (order, t) = unsafe { (_mm256_loadu_si256(TO_UNPACK_ORDER.as_ptr().cast()), Tables::new::<E4>()) };
    for k in (head..body).step_by(32) {
        // SAFETY: k + 32 <= n; AVX2 and F16C per the contract; with `stream`, dst + k is
        // 32-byte aligned (k − head is a multiple of 32 elements).
        unsafe {
            let codes = _mm256_loadu_si256(src.add(k).cast());
            let codes = if decodes_in_memory_order(E4) { codes } else { _mm256_permutevar8x32_epi32(codes, order) };
            let v = decode32::<E4, true>(&t, codes);
            for (q, x) in v.into_iter().enumerate() {
                if stream {
                    _mm256_stream_ps(dst.add(k + 8 * q), x);
                } else {
                    _mm256_storeu_ps(dst.add(k + 8 * q), x);
                }
            }
        }
    }
    // SAFETY: the tail's elements are the caller's.
    unsafe { decode_run::<E4>(dst.add(body), src.add(body), n - body) };
    if stream {
        store_fence();
    }
}

/// Converts `n` contiguous f32 to f8 (bits); `stream` as for [`decode_f8`].
///
/// # Safety
/// The CPU has AVX2 and FMA; `src` valid for `n` reads, `dst` for `n` writes (any
/// alignment).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn encode_f8<const E4: bool>(dst: *mut u8, src: *const f32, n: usize, stream: bool) {
    let head = if stream { dst.align_offset(32).min(n) } else { 0 };
    // SAFETY: the head's elements are the caller's.
    unsafe { encode_run::<E4>(dst, src, head) };
    let body = head + (n - head) / 32 * 32;
    for k in (head..body).step_by(32) {
        // SAFETY: k + 32 <= n; AVX2 and FMA per the contract; with `stream`, dst + k is
        // 32-byte aligned.
        unsafe {
            let at = src.add(k);
            let v = [
                _mm256_loadu_ps(at),
                _mm256_loadu_ps(at.add(8)),
                _mm256_loadu_ps(at.add(16)),
                _mm256_loadu_ps(at.add(24)),
            ];
            let codes = encode32::<E4, true>(v);
            if stream {
                _mm256_stream_si256(dst.add(k).cast(), codes);
            } else {
                _mm256_storeu_si256(dst.add(k).cast(), codes);
            }
        }
    }
    // SAFETY: the tail's elements are the caller's.
    unsafe { encode_run::<E4>(dst.add(body), src.add(body), n - body) };
    if stream {
        store_fence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert_f8::{decode, encode};

    fn has_avx2_fma() -> bool {
        use std::arch::is_x86_feature_detected as has;
        has!("avx2") && has!("fma") && has!("f16c")
    }

    /// Every code of both formats decodes as the scalar rule, in every position of a
    /// 32- or 64-byte step and in the tail, plain and streamed (`check_run_decoder`).
    #[test]
    fn decode_equals_the_scalar_rule_for_every_code() {
        if !has_avx2_fma() {
            return;
        }
        crate::convert_f8::check_run_decoder::<true>(decode_f8::<true>);
        crate::convert_f8::check_run_decoder::<false>(decode_f8::<false>);
    }

    /// Without `EXACT_NAN` every number decodes to its exact value and every NaN code to a
    /// NaN of its sign: the byte route (both formats) in the unpacks' order, the F16C route
    /// (E5M2) in memory order.
    #[test]
    fn map_decode_keeps_values_and_nan_signs() {
        if !has_avx2_fma() || !std::arch::is_x86_feature_detected!("f16c") {
            return;
        }
        #[target_feature(enable = "avx2,f16c")]
        fn each<const E4: bool, const F16C: bool>() {
            for start in (0..256).step_by(32) {
                let codes: Vec<u8> = (start..start + 32).map(|c| c as u8).collect();
                // SAFETY: AVX2 and F16C checked; 32 bytes.
                let v = unsafe {
                    let c = _mm256_loadu_si256(codes.as_ptr().cast());
                    if F16C {
                        decode32_f16c::<false>(c)
                    } else {
                        decode32_bytes::<E4>(&Tables::new::<E4>(), c)
                    }
                };
                // SAFETY: four __m256 are 32 f32.
                let v: [f32; 32] = unsafe { std::mem::transmute(v) };
                for (p, x) in v.iter().enumerate() {
                    let (q, r) = (p / 8, p % 8);
                    let element = if F16C {
                        p
                    } else if r < 4 {
                        4 * q + r
                    } else {
                        16 + 4 * q + r - 4
                    };
                    let want = decode::<E4>(codes[element]);
                    if want.is_nan() {
                        assert!(x.is_nan() && x.is_sign_negative() == want.is_sign_negative(), "{element}");
                    } else {
                        assert_eq!(x.to_bits(), want.to_bits(), "E4 {E4} F16C {F16C} code {:#04x}", codes[element]);
                    }
                }
            }
        }
        // SAFETY: AVX2 and F16C checked.
        unsafe {
            each::<true, false>();
            each::<false, false>();
            each::<false, true>();
        }
    }

    /// The encoder against the scalar rule for f32 bit patterns `start, start + step, …`,
    /// both formats, plain and streamed (23 bytes past a 64-byte line).
    fn encoder_matches_the_rule(start: u64, step: u64) {
        fn each<const E4: bool>(start: u64, step: u64) {
            const CHUNK: usize = 1 << 20;
            let mut xs = vec![0f32; CHUNK];
            let mut buf = vec![0xa5u8; CHUNK + 128];
            let mut next = start;
            let mut round = 0;
            while next < 1 << 32 {
                let mut n = 0;
                while n < CHUNK && next < 1 << 32 {
                    xs[n] = f32::from_bits(next as u32);
                    n += 1;
                    next += step;
                }
                round += 1;
                let stream = round % 2 == 0;
                let at = buf.as_ptr().align_offset(64) + if stream { 23 } else { 0 };
                let out = &mut buf[at..at + n];
                // SAFETY: AVX2 and FMA checked; both hold n elements.
                unsafe { encode_f8::<E4>(out.as_mut_ptr(), xs.as_ptr(), n, stream) };
                for (x, o) in xs[..n].iter().zip(out.iter()) {
                    assert_eq!(*o, encode::<E4>(*x), "E4 {E4} {:#010x} stream {stream}", x.to_bits());
                }
            }
        }
        each::<true>(start, step);
        each::<false>(start, step);
    }

    /// Every 4099th and every 65537th f32 pattern (every exponent, both signs, mixed low
    /// bits), and the edges: ties, saturation, infinities, NaNs with payloads.
    #[test]
    fn encode_equals_the_scalar_rule_over_a_sweep() {
        if !has_avx2_fma() {
            return;
        }
        encoder_matches_the_rule(0, 4099);
        encoder_matches_the_rule(1, 65_537);
        let edges: Vec<f32> = [
            0.0f32,
            -0.0,
            448.0,
            463.9,
            464.0,
            464.1,
            480.0,
            57344.0,
            61439.0,
            61440.0,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_ffff),
            f32::from_bits(0xffc0_8000),
            f32::from_bits(0x7fff_ffff),
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            2f32.powi(-10),
            2f32.powi(-10) * 1.5,
            2f32.powi(-17),
            2f32.powi(-17) * 1.5,
        ]
        .into_iter()
        .flat_map(|x| [x, -x])
        .collect();
        let mut out = vec![0u8; edges.len()];
        for e4 in [true, false] {
            // SAFETY: AVX2 and FMA checked; equal lengths.
            unsafe {
                if e4 {
                    encode_f8::<true>(out.as_mut_ptr(), edges.as_ptr(), edges.len(), false)
                } else {
                    encode_f8::<false>(out.as_mut_ptr(), edges.as_ptr(), edges.len(), false)
                }
            }
            for (x, o) in edges.iter().zip(&out) {
                let want = if e4 { encode::<true>(*x) } else { encode::<false>(*x) };
                assert_eq!(*o, want, "E4 {e4} {:#010x}", x.to_bits());
            }
        }
    }

    /// Every f32 pattern through the encoder (`cargo test --release -p tensor-kernels-cpu
    /// --lib -- --include-ignored avx2_encode`).
    #[test]
    #[ignore = "exhaustive over 2^32 f32 values per format: run in release with --include-ignored"]
    fn avx2_encode_matches_the_rule_for_every_pattern() {
        if has_avx2_fma() {
            encoder_matches_the_rule(0, 1);
        }
    }

    /// The two orders are each other's inverse.
    #[test]
    fn orders_are_inverse() {
        for j in 0..8 {
            assert_eq!(TO_UNPACK_ORDER[FROM_PACK_ORDER[j] as usize] as usize, j);
        }
    }
}
