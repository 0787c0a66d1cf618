//! The 8-bit floats sixty-four at a time with AVX-512 VBMI (Zen 4, Ice Lake and later).
//!
//! Decoding is a table lookup: every E4M3 or E5M2 value is exact in bfloat16 (its f32
//! bits end in sixteen zeros), so two `vpermi2b` lookups on the seven magnitude bits give
//! the high and the low byte of the bfloat16, the sign bit is merged in, and two rounds of
//! unpacking with zeros widen the 64 bfloat16s to four registers of f32: about 2.5
//! instructions per 16 values where [`crate::convert_f8::avx512::decode16`]'s arithmetic
//! takes twelve. Encoding rounds each register with one fused multiply-add whose addend's
//! ulp is the format's ulp at the value's exponent ([`magnitude_codes`]: the normal and
//! the subnormal range in one path, nine instructions per 16 values) and narrows with
//! saturating packs, which also carry the signs (a signed pack keeps a 32-bit lane's sign)
//! and turn a NaN's large code into `0x7f`, instead of four `vpmovdb` and a sign
//! extraction per register.
//!
//! Unpacks and packs work within 128-bit lanes; one `vpermb` by [`LANE_ORDER`] on the
//! codes puts the values in memory order both ways (the casts, which store f32). A map's
//! lanes are independent, so the map loop skips both (`ORDERED = false`): the packs undo
//! the unpacks' order. The results are `convert_f8`'s ([`decode`], [`encode`]) bit for bit:
//! the tables are built from `decode` and the tests compare every code and every f32.

use crate::convert_f8::avx512::magnitude_codes;
use crate::convert_f8::{decode, decode_run, encode_run};
use crate::copy::stream::store_fence;
use std::arch::x86_64::*;

/// One byte of each code's bfloat16 (`HIGH`: sign-less high byte, else the low byte), for
/// the 128 magnitudes.
const fn bf16_byte_table<const E4: bool, const HIGH: bool>() -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut m = 0;
    while m < 128 {
        let bits = decode::<E4>(m as u8).to_bits();
        // every value of both formats is exact in bfloat16
        assert!(bits & 0xffff == 0);
        t[m] = if HIGH { (bits >> 24) as u8 } else { (bits >> 16) as u8 };
        m += 1;
    }
    t
}

/// The byte order that turns the 128-bit-lane order of the unpacks and packs into memory
/// order: position `16j + 4q + r` holds element `16q + 4j + r` (its own inverse).
const LANE_ORDER: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut p = 0;
    while p < 64 {
        let (j, q, r) = (p / 16, p / 4 % 4, p % 4);
        t[p] = (16 * q + 4 * j + r) as u8;
        p += 1;
    }
    t
};

/// The four lookup tables of one format, in registers (loaded once per run).
#[derive(Clone, Copy)]
pub(crate) struct Tables {
    high: [__m512i; 2],
    low: [__m512i; 2],
    order: __m512i,
}

impl Tables {
    /// The tables of E4M3 (`E4`) or E5M2.
    ///
    /// # Safety
    /// The CPU has AVX-512 F (the function is inlined into one compiled with it).
    #[inline(always)]
    pub(crate) unsafe fn new<const E4: bool>() -> Tables {
        const fn halves(t: [u8; 128]) -> [[u8; 64]; 2] {
            let mut h = [[0u8; 64]; 2];
            let mut i = 0;
            while i < 128 {
                h[i / 64][i % 64] = t[i];
                i += 1;
            }
            h
        }
        let high = const { halves(bf16_byte_table::<E4, true>()) };
        let low = const { halves(bf16_byte_table::<E4, false>()) };
        // SAFETY: AVX-512 F per the caller; each array is 64 bytes (unaligned loads). No
        // closures: they would not inherit the caller's target features.
        unsafe {
            Tables {
                high: [_mm512_loadu_si512(high[0].as_ptr().cast()), _mm512_loadu_si512(high[1].as_ptr().cast())],
                low: [_mm512_loadu_si512(low[0].as_ptr().cast()), _mm512_loadu_si512(low[1].as_ptr().cast())],
                order: _mm512_loadu_si512(LANE_ORDER.as_ptr().cast()),
            }
        }
    }
}

/// 64 bytes of `x` in every byte lane.
#[inline(always)]
fn bytes(x: u8) -> __m512i {
    // SAFETY: AVX-512 F is what every caller runs with (their contracts).
    unsafe { _mm512_set1_epi8(x as i8) }
}

/// `a | (b & c)`, one `vpternlogd`.
const OR_AND: i32 = 0xf8;

/// Sixty-four codes (memory order) to their exact values, sixteen per register (a NaN to the
/// quiet NaN of its sign, as [`decode`]): in memory order when `ORDERED`, else in the
/// unpacks' order (register `q` holds elements `16j + 4q ..+ 4` for `j` in `0..4`), which
/// [`encode64`] without `ORDERED` turns back into memory order: a map, whose lanes are
/// independent, skips both reorderings (three `vpermb` per 64 elements of a two-input map).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI (the function is inlined into one compiled with them).
#[inline(always)]
pub(crate) unsafe fn decode64<const ORDERED: bool>(t: &Tables, codes: __m512i) -> [__m512; 4] {
    // SAFETY: AVX-512 F/BW/VBMI per the caller.
    unsafe {
        let x = if ORDERED { _mm512_permutexvar_epi8(t.order, codes) } else { codes };
        // bit 6 picks the table half, bits 0..6 the byte; bit 7 (the sign) is ignored
        let high = _mm512_permutex2var_epi8(t.high[0], x, t.high[1]);
        let high = _mm512_ternarylogic_epi32::<OR_AND>(high, x, bytes(0x80));
        let low = _mm512_permutex2var_epi8(t.low[0], x, t.low[1]);
        let (words_lo, words_hi) = (_mm512_unpacklo_epi8(low, high), _mm512_unpackhi_epi8(low, high));
        let zero = _mm512_setzero_si512();
        [
            _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, words_lo)),
            _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, words_lo)),
            _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, words_hi)),
            _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, words_hi)),
        ]
    }
}

/// Sixty-four values (sixteen per register: in memory order when `ORDERED`, else in
/// [`decode64`]'s unpack order) to their codes in memory order, as [`encode`] (nearest
/// even; E4M3 saturates, E5M2 overflows to infinity; NaN is `0x7f` with its sign).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI (the function is inlined into one compiled with them).
#[inline(always)]
pub(crate) unsafe fn encode64<const E4: bool, const ORDERED: bool>(t: &Tables, v: [__m512; 4]) -> __m512i {
    // SAFETY: AVX-512 F/BW/VBMI per the caller.
    unsafe {
        // (no closures: they would not inherit the caller's target features)
        let m = [
            magnitude_codes::<E4>(v[0]),
            magnitude_codes::<E4>(v[1]),
            magnitude_codes::<E4>(v[2]),
            magnitude_codes::<E4>(v[3]),
        ];
        // numbers' codes are 0..=0x7e and stay; a NaN's (above 0x7f, below 2^15)
        // saturates to 0x7f in the second pack
        let codes = _mm512_packs_epi16(_mm512_packs_epi32(m[0], m[1]), _mm512_packs_epi32(m[2], m[3]));
        // the signed packs keep each lane's sign bit (a negative lane saturates negative)
        let b = [
            _mm512_castps_si512(v[0]),
            _mm512_castps_si512(v[1]),
            _mm512_castps_si512(v[2]),
            _mm512_castps_si512(v[3]),
        ];
        let signs = _mm512_packs_epi16(_mm512_packs_epi32(b[0], b[1]), _mm512_packs_epi32(b[2], b[3]));
        let codes = _mm512_ternarylogic_epi32::<OR_AND>(codes, signs, bytes(0x80));
        if ORDERED {
            _mm512_permutexvar_epi8(t.order, codes)
        } else {
            codes
        }
    }
}

/// Converts `n` contiguous f8 (bits) to f32; with `stream`, the part from `dst`'s first
/// 64-byte boundary is written with non-temporal stores and fenced before returning (for
/// outputs larger than the cache: no read-for-ownership of the lines written).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/VBMI; `src` valid for `n` reads, `dst` for `n` writes (any
/// alignment).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
pub(crate) unsafe fn decode_f8<const E4: bool>(dst: *mut f32, src: *const u8, n: usize, stream: bool) {
    // SAFETY: AVX-512 F/BW/VBMI per the contract.
    let t = unsafe { Tables::new::<E4>() };
    // (an f32 pointer that is not 4-byte aligned never reaches a boundary: all scalar)
    let head = if stream { dst.align_offset(64).min(n) } else { 0 };
    // SAFETY: the head's elements are the caller's.
    unsafe { decode_run::<E4>(dst, src, head) };
    let body = head + (n - head) / 64 * 64;
    for k in (head..body).step_by(64) {
        // SAFETY: k + 64 <= n; AVX-512 F/BW/VBMI per the contract; with `stream`, dst + k
        // is 64-byte aligned (k - head is a multiple of 64 elements).
        unsafe {
            let v = decode64::<true>(&t, _mm512_loadu_si512(src.add(k).cast()));
            for (q, x) in v.into_iter().enumerate() {
                if stream {
                    _mm512_stream_ps(dst.add(k + 16 * q), x);
                } else {
                    _mm512_storeu_ps(dst.add(k + 16 * q), x);
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
/// The CPU has AVX-512 F/BW/VL/VBMI; `src` valid for `n` reads, `dst` for `n` writes (any
/// alignment).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
pub(crate) unsafe fn encode_f8<const E4: bool>(dst: *mut u8, src: *const f32, n: usize, stream: bool) {
    // SAFETY: AVX-512 F/BW/VBMI per the contract.
    let t = unsafe { Tables::new::<E4>() };
    let head = if stream { dst.align_offset(64).min(n) } else { 0 };
    // SAFETY: the head's elements are the caller's.
    unsafe { encode_run::<E4>(dst, src, head) };
    let body = head + (n - head) / 64 * 64;
    for k in (head..body).step_by(64) {
        // SAFETY: k + 64 <= n; AVX-512 F/BW/VBMI per the contract; with `stream`, dst + k
        // is 64-byte aligned.
        unsafe {
            let at = |q: usize| src.add(k + 16 * q);
            let v = [_mm512_loadu_ps(at(0)), _mm512_loadu_ps(at(1)), _mm512_loadu_ps(at(2)), _mm512_loadu_ps(at(3))];
            let codes = encode64::<E4, true>(&t, v);
            if stream {
                _mm512_stream_si512(dst.add(k).cast(), codes);
            } else {
                _mm512_storeu_si512(dst.add(k).cast(), codes);
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
    use crate::convert_f8::encode;

    fn has_vbmi() -> bool {
        crate::simd_level::has_avx512_vbmi()
    }

    /// Every code of both formats decodes as the scalar rule, in every position of a
    /// 32- or 64-byte step and in the tail, plain and streamed (`check_run_decoder`).
    #[test]
    fn decode_equals_the_scalar_rule_for_every_code() {
        if !has_vbmi() {
            return;
        }
        crate::convert_f8::check_run_decoder::<true>(decode_f8::<true>);
        crate::convert_f8::check_run_decoder::<false>(decode_f8::<false>);
    }

    /// f32 values of every class (zeros, subnormals of f32 and of the format, ties of the
    /// format's rounding, the saturation and overflow edges, infinities, NaNs with both
    /// signs) encode as the scalar rule, in every position.
    #[test]
    fn encode_equals_the_scalar_rule_over_a_sweep() {
        if !has_vbmi() {
            return;
        }
        fn each<const E4: bool>() {
            // every 2^12-th bit pattern (both signs, every exponent), the low bits mixed
            let mut src: Vec<f32> =
                (0u32..1 << 20).map(|hi| f32::from_bits(hi << 12 | (hi.wrapping_mul(2_654_435_761) >> 20))).collect();
            // a tie (and its neighbours) at every bit position of every exponent: the
            // normal range rounds at one bit, the format's subnormals at higher bits
            for e in 0u32..256 {
                for p in 0..23 {
                    let above = (e.wrapping_mul(2_246_822_519) << 3) & 0x007f_ffff & !((2u32 << p) - 1);
                    let tie = (e << 23) | above | (1 << p);
                    for d in [0u32, 1, 0xffff_ffff] {
                        for s in [0, 0x8000_0000] {
                            src.push(f32::from_bits(s | (tie.wrapping_add(d) & 0x7fff_ffff)));
                        }
                    }
                }
            }
            src.extend([0.0, -0.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
            // plain stores, and streaming ones from 0 and 23 bytes past a 64-byte line
            for (skip, stream) in [(0, false), (0, true), (23, true)] {
                let mut buf = vec![0xa5u8; src.len() + 128];
                let at = buf.as_ptr().align_offset(64) + skip;
                let dst = &mut buf[at..at + src.len()];
                // SAFETY: VBMI checked; equal lengths.
                unsafe { encode_f8::<E4>(dst.as_mut_ptr(), src.as_ptr(), src.len(), stream) };
                for (x, c) in src.iter().zip(dst.iter()) {
                    assert_eq!(*c, encode::<E4>(*x), "E4 {E4} value {:#010x} stream {stream}", x.to_bits());
                }
            }
        }
        each::<true>();
        each::<false>();
    }

    /// Every f32 bit pattern through the encoder against the scalar rule, both formats
    /// (`cargo test --release -p tensor-kernels-cpu --lib -- --ignored vbmi`: 2^33 values,
    /// seconds in release, an hour in a debug build).
    #[test]
    #[ignore = "exhaustive over 2^32 f32 values per format: run in release with --ignored"]
    fn vbmi_encode_matches_the_rule_for_every_pattern() {
        if !has_vbmi() {
            return;
        }
        fn each<const E4: bool>() {
            const CHUNK: u64 = 1 << 20;
            let mut xs = vec![0f32; CHUNK as usize];
            let mut out = vec![0u8; CHUNK as usize];
            for start in (0..1u64 << 32).step_by(CHUNK as usize) {
                xs.iter_mut().enumerate().for_each(|(i, x)| *x = f32::from_bits((start + i as u64) as u32));
                // SAFETY: VBMI checked; both hold CHUNK elements.
                unsafe { encode_f8::<E4>(out.as_mut_ptr(), xs.as_ptr(), xs.len(), false) };
                for (x, o) in xs.iter().zip(&out) {
                    assert_eq!(*o, encode::<E4>(*x), "E4 {E4} {:#010x}", x.to_bits());
                }
            }
        }
        each::<true>();
        each::<false>();
    }

    /// The lane order is its own inverse (the decode and the encode use the same one).
    #[test]
    fn lane_order_is_an_involution() {
        for p in 0..64 {
            assert_eq!(LANE_ORDER[LANE_ORDER[p] as usize] as usize, p);
        }
    }
}
