//! Maps over quantized bytes in one pass: operands stored as qint8/quint8 with a per-tensor
//! quantizer, dequantized to f32 in registers, run through the op's f32 body, and
//! quantized again before the store. The map driver's general path stages each input
//! through a block buffer (widen and dequantize), runs the block function, then quantizes
//! from a third buffer: four passes over L1 per block, whose loads and stores, not the
//! arithmetic, bounded a qint8 `add` at about a third of memory bandwidth (a qint8
//! `add_out` of 2^28 elements: 10.6–11.5 GB/s before, 15.4–15.6 in one pass, paired runs,
//! 2026-11-28). Results are the general path's bit for bit: the same dequantize, the same
//! body on f32 lanes, the same quantize ([`tensor_core::quant::Affine`]'s rule).
//!
//! One loop (`run`) serves two instruction sets through a `Codec16`: AVX2 (`avx2.rs`:
//! two 8-lane halves, 16-bit packs) and AVX-512 (`avx512.rs`: one 16-lane register and a
//! narrowing move), chosen by [`crate::simd_level`].
//!
//! The 8-bit floats run the same loop with AVX-512 (`f8_avx512.rs`: `convert_f8`'s rules
//! on sixteen lanes). With AVX-512, `wide64.rs` runs 64 elements a step and narrows with
//! saturating packs, for the quantized bytes and (with VBMI, decoding by table lookup) the
//! 8-bit floats: an f8 `add` of 2^28 elements 12-13 GB/s before, 21-26 after; qint8
//! 31.5-33.2 before, 32.8-36.0 after (2026-11-28). With AVX2 and F16C they run
//! `wide32.rs`, 32 elements a step (`convert_f8_avx2`: E4M3 decoded by byte lookups, E5M2
//! through the f16 conversion), with this module's sixteen-lane loop and `f8_avx2.rs` for
//! the ends: an f8 `add` of 2^28 elements on a Zen 3 without AVX-512, 6.3-9.8 GB/s in the
//! sixteen-lane loop, 12.4-16.5 in the 32-element one (2026-11-29).
//!
//! `#[tensor_op]` emits one [`ByteMapFn`](crate::kernel::ByteMapFn) per op (`cpu_bytes`,
//! over its f32 body) and registers it with the op's qint8 and quint8 rows
//! ([`crate::kernel::MapKernel::bytes`]); the driver calls it for runs where every operand
//! is contiguous and of one such dtype.

/// A [`Codec16`]'s one-code steps for the 8-bit floats (E4M3 when `$e4`): `convert_f8`'s
/// scalar rules, shared by the codecs of every level (which differ in their sixteen-code
/// steps only).
#[cfg(target_arch = "x86_64")]
macro_rules! f8_one_code_steps {
    ($e4:ident) => {
        #[inline(always)]
        fn decode1(&self, _k: usize, code: u8) -> f32 {
            crate::convert_f8::decode::<$e4>(code)
        }

        #[inline(always)]
        fn encode1(&self, v: f32) -> u8 {
            crate::convert_f8::encode::<$e4>(v)
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod f8_avx2;
#[cfg(target_arch = "x86_64")]
mod f8_avx512;
#[cfg(target_arch = "x86_64")]
mod wide32;
#[cfg(target_arch = "x86_64")]
mod wide64;

use crate::byte_codes::{ByteCodes, ByteFamily};
use crate::kernel::Store;
use crate::map::MapBody;
#[cfg(target_arch = "x86_64")]
use crate::map::{no_loop_vectorize, prefetch, PREFETCH_BYTES};
#[cfg(target_arch = "x86_64")]
use crate::simd_level::level_copies;
#[cfg(target_arch = "x86_64")]
use crate::value::{SimdElement, Value};

/// `out[i] = quantize(body(dequantize(inputs[0][i]), …))` (for the 8-bit floats: encode
/// and decode) for `n` elements, 16 at a time in registers (AVX-512 or AVX2), streamed
/// when `store` says so and `out` is 16-byte aligned. `false` (nothing written) below
/// AVX2, and for the 8-bit floats without F16C, where the driver's staged path runs
/// instead.
///
/// # Safety
/// As [`ByteMapFn`](crate::kernel::ByteMapFn).
pub unsafe fn map_bytes<const N: usize, B: MapBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
    codes: &ByteCodes,
    store: Store,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::simd_level::{simd_level, SimdLevel};
        let level = simd_level();
        use wide64::{F8Vbmi, Quantized64};
        if level >= SimdLevel::Avx2 && inputs.len() == N {
            let ins: [*const u8; N] = std::array::from_fn(|k| inputs[k]);
            let stream = store == Store::Streaming && (out as usize).is_multiple_of(16);
            let affines = &codes.affines;
            let wide = level >= SimdLevel::Avx512;
            let vbmi = wide && crate::simd_level::has_avx512_vbmi();
            let f16c = std::arch::is_x86_feature_detected!("f16c");
            // SAFETY: the level never exceeds the CPU's (AVX-512 F/BW/DQ/VL with AVX2 and
            // FMA, or AVX2 and FMA), VBMI is checked; the pointers and counts are the
            // caller's contract.
            unsafe {
                match (wide, codes.family) {
                    (true, ByteFamily::QInt8) => {
                        let codec = Quantized64(avx512::Quantized::<true>::new(affines));
                        wide64::run64_avx512(out, ins, n, body, &codec, stream)
                    }
                    (true, ByteFamily::QUInt8) => {
                        let codec = Quantized64(avx512::Quantized::<false>::new(affines));
                        wide64::run64_avx512(out, ins, n, body, &codec, stream)
                    }
                    (true, ByteFamily::F8E4M3) if vbmi => {
                        wide64::run64_vbmi(out, ins, n, body, &F8Vbmi(f8_avx512::F8::<true>), stream)
                    }
                    (true, ByteFamily::F8E5M2) if vbmi => {
                        wide64::run64_vbmi(out, ins, n, body, &F8Vbmi(f8_avx512::F8::<false>), stream)
                    }
                    (true, ByteFamily::F8E4M3) => run_avx512(out, ins, n, body, &f8_avx512::F8::<true>, stream),
                    (true, ByteFamily::F8E5M2) => run_avx512(out, ins, n, body, &f8_avx512::F8::<false>, stream),
                    (false, ByteFamily::QInt8) => {
                        run_avx2(out, ins, n, body, &avx2::Quantized::<true>::new(affines), stream)
                    }
                    (false, ByteFamily::QUInt8) => {
                        run_avx2(out, ins, n, body, &avx2::Quantized::<false>::new(affines), stream)
                    }
                    (false, ByteFamily::F8E4M3) if f16c => wide32::run32_f8::<N, B, true>(out, ins, n, body, stream),
                    (false, ByteFamily::F8E5M2) if f16c => wide32::run32_f8::<N, B, false>(out, ins, n, body, stream),
                    (false, ByteFamily::F8E4M3 | ByteFamily::F8E5M2) => return false,
                }
            }
            return true;
        }
    }
    let _ = (out, inputs, n, body, codes, store);
    false
}

/// The output's constants of the quantize both quantized codecs run, reordered without
/// changing a result: clamp(round(x · inv) + zp, qmin, qmax) is round(clamp(x · inv,
/// qmin − zp, qmax − zp)) + zp, as the bounds are integers; `[inv, qmin − zp, qmax − zp]`.
#[cfg(target_arch = "x86_64")]
fn quantize_bounds(o: &tensor_core::quant::Affine) -> [f32; 3] {
    [o.inv_scale, o.qmin - o.zero_point, o.qmax - o.zero_point]
}

/// Sixteen codes to `dst`, streamed when `stream` (then `dst` is 16-byte aligned): every
/// sixteen-lane codec's store.
///
/// # Safety
/// `dst` valid for 16 writes (SSE2 is x86-64's baseline).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store16(dst: *mut u8, bytes: std::arch::x86_64::__m128i, stream: bool) {
    use std::arch::x86_64::{_mm_storeu_si128, _mm_stream_si128};
    // SAFETY: dst .. +16 are the caller's, 16-byte aligned when streaming.
    unsafe {
        if stream {
            _mm_stream_si128(dst.cast(), bytes);
        } else {
            _mm_storeu_si128(dst.cast(), bytes);
        }
    }
}

/// Sixteen codes to values and back, in one instruction set's registers.
#[cfg(target_arch = "x86_64")]
trait Codec16 {
    /// Operand `k`'s (0: the output) sixteen stored integers at `src` as values.
    ///
    /// # Safety
    /// The codec's instruction set is available; `src` valid for 16 reads.
    unsafe fn decode16(&self, k: usize, src: *const u8) -> [f32; 16];

    /// Sixteen results as the output's codes at `dst`, streamed when `stream` (then `dst`
    /// is 16-byte aligned).
    ///
    /// # Safety
    /// The codec's instruction set is available; `dst` valid for 16 writes.
    unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool);

    /// One stored integer of operand `k` as a value (tails).
    fn decode1(&self, k: usize, code: u8) -> f32;

    /// One value as the output's code (tails).
    fn encode1(&self, v: f32) -> u8;
}

/// The one-pass loop: sixteen elements a step (the f32 body's lane count), a padded last
/// step for the `< 16` left. No closures: everything is inlined into the target-feature
/// copies (`run_avx2`, `run_avx512`, from `level_copies!`), so the codec's intrinsics
/// compile for their instruction set.
///
/// # Safety
/// The codec's instruction set is available; otherwise as [`map_bytes`] (`stream` only
/// with a 16-byte aligned `out`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn run<const N: usize, B: MapBody<N>, C: Codec16>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    codec: &C,
    stream: bool,
) {
    const { assert!(<<f32 as SimdElement>::Lanes as Value>::LANES == 16) };
    type Lanes = <f32 as SimdElement>::Lanes;
    let mut args = [Lanes::load(&[0.0; 16]); N];
    let mut v = [0.0f32; 16];
    let mut i = 0;
    while i + 16 <= n {
        // a cache line of each input per four steps: one prefetch each
        if i % 64 == 0 {
            for p in ins {
                prefetch(p.wrapping_add(i + PREFETCH_BYTES));
            }
        }
        for k in 0..N {
            // SAFETY: i + 16 <= n: in bounds of every input (caller's contract); the loads
            // come before the store, so an output aliasing an input reads its old codes.
            args[k] = Lanes::load(&unsafe { codec.decode16(k + 1, ins[k].add(i)) });
        }
        body.call(args).store(&mut v);
        // SAFETY: out + i .. + 16 in bounds; aligned when streaming (16 | out, 16 | i).
        unsafe { codec.encode16(&v, out.add(i), stream) };
        i += 16;
        no_loop_vectorize();
    }
    let m = n - i;
    if m > 0 {
        // the last `m` elements padded with the first code of each input (any code: every
        // lane is independent), computed as one more vector
        for k in 0..N {
            let mut x = [0.0f32; 16];
            for (j, slot) in x.iter_mut().enumerate() {
                // SAFETY: i + j < n for j < m; else element i (< n) again.
                let code = unsafe { *ins[k].add(i + if j < m { j } else { 0 }) };
                *slot = codec.decode1(k + 1, code);
            }
            args[k] = Lanes::load(&x);
        }
        body.call(args).store(&mut v);
        for (j, &r) in v[..m].iter().enumerate() {
            // SAFETY: i + j < n.
            unsafe { *out.add(i + j) = codec.encode1(r) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
level_copies!(unsafe fn run_avx2, run_avx512 [const N: usize, B: MapBody<N>, C: Codec16]
    (out: *mut u8, ins: [*const u8; N], n: usize, body: &B, codec: &C, stream: bool)
    => run; "As [`run`]; the codec's instruction set is at most the copy's");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::byte_codes::MAX_OPERANDS;
    use crate::value::Value;
    use tensor_core::{quant::Affine, DType};

    struct AddThenHalve;
    impl MapBody<2> for AddThenHalve {
        fn call<V: Value>(&self, [a, b]: [V; 2]) -> V {
            (a + b) * V::from_f64(0.5)
        }
    }

    /// Division: ±∞ (saturating) and NaN (0 / 0) results.
    struct Divide;
    impl MapBody<2> for Divide {
        fn call<V: Value>(&self, [a, b]: [V; 2]) -> V {
            a / b
        }
    }

    /// The one-pass loop equals dequantize → body → quantize done element by element with
    /// the core's rules, for every length around the 16-element steps, streamed or not, an
    /// aliased output, both byte families, saturating, infinite and NaN results.
    #[test]
    fn one_pass_maps_equal_the_element_rule() {
        let affine = |d, s, z| Affine::new(d, s, z);
        let cases = [
            (DType::I8, [affine(DType::QInt8, 0.05, 3), affine(DType::QInt8, 0.1, -7), affine(DType::QInt8, 0.02, 0)]),
            (
                DType::U8,
                [affine(DType::QUInt8, 0.3, 128), affine(DType::QUInt8, 0.07, 10), affine(DType::QUInt8, 1.5, 250)],
            ),
            // the output's zero point at either end of its range
            (
                DType::I8,
                [affine(DType::QInt8, 0.01, -128), affine(DType::QInt8, 0.1, 127), affine(DType::QInt8, 0.3, 5)],
            ),
            (
                DType::I8,
                [affine(DType::QInt8, 0.02, 127), affine(DType::QInt8, 0.1, -20), affine(DType::QInt8, 1.0, 0)],
            ),
            (
                DType::U8,
                [affine(DType::QUInt8, 0.01, 0), affine(DType::QUInt8, 0.2, 255), affine(DType::QUInt8, 0.5, 3)],
            ),
            (
                DType::U8,
                [affine(DType::QUInt8, 0.05, 255), affine(DType::QUInt8, 0.2, 0), affine(DType::QUInt8, 0.5, 77)],
            ),
        ];
        for n in [0usize, 1, 15, 16, 17, 31, 33, 63, 64, 65, 80, 100, 1000] {
            let a: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let b: Vec<u8> = (0..n).map(|i| (i * 101 + 5) as u8).collect();
            for (storage, affines) in cases {
                let mut all = [affines[0]; MAX_OPERANDS];
                all[..3].copy_from_slice(&affines);
                let signed = storage == DType::I8;
                let codes = ByteCodes::of(&[storage; 3], &affines.map(Some)).expect("byte codes");
                assert_eq!(codes.affines[..3], all[..3]);
                let v = |k: usize, c: u8| all[k].dequantize_byte(c, signed);
                let q = |x: f32| all[0].quantize_byte(x, signed);
                let halves: Vec<u8> = (0..n).map(|i| q((v(1, a[i]) + v(2, b[i])) * 0.5)).collect();
                check(&codes, &Expect { a: &a, b: &b, want: &halves, nan: None }, &AddThenHalve);
                let quotients: Vec<u8> = (0..n).map(|i| q(v(1, a[i]) / v(2, b[i]))).collect();
                check(&codes, &Expect { a: &a, b: &b, want: &quotients, nan: None }, &Divide);
            }
        }
    }

    /// The 8-bit floats' loop equals decode → body → encode element by element with
    /// `convert_f8`'s rules, over every pair of codes (NaNs, infinities, subnormals, both
    /// signs of zero), for both formats, with lengths around the steps.
    #[test]
    fn one_pass_f8_maps_equal_the_element_rule() {
        use crate::convert_f8::{decode, encode};
        fn both<const E4: bool>(family: ByteFamily, dtype: DType) {
            let codes = ByteCodes::of(&[dtype; 3], &[None; 3]).expect("f8 codes");
            assert_eq!(codes.family, family);
            for n in [1usize, 15, 17, 64, 65, 65536] {
                let a: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let b: Vec<u8> = (0..n).map(|i| (i >> 8) as u8 ^ (i as u8 & 0x81)).collect();
                let (x, y) = (|i: usize| decode::<E4>(a[i]), |i: usize| decode::<E4>(b[i]));
                let halves: Vec<u8> = (0..n).map(|i| encode::<E4>((x(i) + y(i)) * 0.5)).collect();
                // two NaN operands: any NaN (which payload and sign wins is unspecified)
                let nan = Some((|c: u8| decode::<E4>(c).is_nan()) as fn(u8) -> bool);
                check(&codes, &Expect { a: &a, b: &b, want: &halves, nan }, &AddThenHalve);
                let quotients: Vec<u8> = (0..n).map(|i| encode::<E4>(x(i) / y(i))).collect();
                check(&codes, &Expect { a: &a, b: &b, want: &quotients, nan }, &Divide);
            }
        }
        both::<true>(ByteFamily::F8E4M3, DType::F8E4M3);
        both::<false>(ByteFamily::F8E5M2, DType::F8E5M2);
    }

    /// Two operands and the codes expected from them.
    struct Expect<'a> {
        a: &'a [u8],
        b: &'a [u8],
        want: &'a [u8],
        /// The format's NaN test, when a result of two NaN operands may be any NaN.
        nan: Option<fn(u8) -> bool>,
    }

    impl Expect<'_> {
        /// Panics at the first element of `got` that is not the expected code.
        fn assert(&self, got: &[u8], what: &str) {
            for (i, (&g, &w)) in got.iter().zip(self.want).enumerate() {
                let any_nan = self.nan.is_some_and(|nan| nan(self.a[i]) && nan(self.b[i]) && nan(g));
                assert!(g == w || any_nan, "{what}: element {i} is {g:#04x}, not {w:#04x}");
            }
            assert_eq!(got.len(), self.want.len(), "{what}");
        }
    }

    fn check<B: MapBody<2>>(codes: &ByteCodes, e: &Expect, body: &B) {
        let (a, b) = (e.a, e.b);
        let n = a.len();
        // outputs at a 64-byte boundary and 16, 48, 1 and 7 bytes past one (the 8-bit
        // floats' 64-byte steps start at the output's next line); streamed only when
        // 16-byte aligned
        for (store, off) in [(Store::Plain, 0), (Store::Plain, 1), (Store::Plain, 7), (Store::Plain, 48)]
            .into_iter()
            .chain([0, 16, 48].map(|off| (Store::Streaming, off)))
        {
            let mut out = vec![0xa5u8; n + 128];
            let at = out.as_ptr().align_offset(64).min(64) + off;
            let dst = out[at..].as_mut_ptr();
            // SAFETY: n codes each; the output lies in `out`.
            let ran = unsafe { map_bytes::<2, _>(dst, &[a.as_ptr(), b.as_ptr()], n, body, codes, store) };
            crate::copy::stream::store_fence();
            if !ran {
                return; // below AVX2: the driver's staged path is the only one
            }
            e.assert(&out[at..at + n], &format!("{codes:?} n {n} {store:?} at {off}"));
            assert!(out[..at].iter().chain(&out[at + n..]).all(|&b| b == 0xa5), "{codes:?} n {n} wrote outside");
            // aliased: the output is input a's memory
            let mut alias = a.to_vec();
            let p = alias.as_mut_ptr();
            // SAFETY: as above, out == a exactly.
            unsafe { map_bytes::<2, _>(p, &[p.cast_const(), b.as_ptr()], n, body, codes, store) };
            crate::copy::stream::store_fence();
            e.assert(&alias, &format!("{codes:?} n {n} {store:?} aliased"));
            #[cfg(target_arch = "x86_64")]
            each_codec(codes, e, body, store);
        }
    }

    /// Each instruction set's loop this CPU can run, called directly (`map_bytes` runs only
    /// the widest).
    #[cfg(target_arch = "x86_64")]
    fn each_codec<B: MapBody<2>>(codes: &ByteCodes, e: &Expect, body: &B, store: Store) {
        use crate::simd_level::{simd_level, SimdLevel};
        let n = e.a.len();
        let (level, ins) = (simd_level(), [e.a.as_ptr(), e.b.as_ptr()]);
        let stream = store == Store::Streaming;
        let mut out = vec![0x5au8; n + 16];
        let at = out.as_ptr().align_offset(16).min(16);
        let stream = stream && at < 16;
        let dst = out[at..].as_mut_ptr();
        macro_rules! check_with {
            ($run:ident, $codec:ident, $what:literal) => {{
                // SAFETY: the level says the CPU has the instruction set; n codes each, the
                // output in `out` (16-byte aligned when streaming).
                unsafe {
                    if codes.family == ByteFamily::QInt8 {
                        $run(dst, ins, n, body, &$codec::Quantized::<true>::new(&codes.affines), stream)
                    } else {
                        $run(dst, ins, n, body, &$codec::Quantized::<false>::new(&codes.affines), stream)
                    }
                }
                crate::copy::stream::store_fence();
                e.assert(&out[at..at + n], &format!("{} {codes:?} n {n} {store:?}", $what));
            }};
        }
        match codes.family {
            ByteFamily::QInt8 | ByteFamily::QUInt8 => {
                if level >= SimdLevel::Avx2 {
                    check_with!(run_avx2, avx2, "AVX2");
                }
                if level >= SimdLevel::Avx512 {
                    check_with!(run_avx512, avx512, "AVX-512");
                }
            }
            // the 8-bit floats' AVX2 loop (32 a step, F16C at the ends) and sixteen-lane
            // AVX-512 loop (map_bytes runs the 64-step one when the CPU has VBMI)
            ByteFamily::F8E4M3 | ByteFamily::F8E5M2 if level >= SimdLevel::Avx2 => {
                if std::arch::is_x86_feature_detected!("f16c") {
                    // SAFETY: AVX2 per the level, F16C checked; n codes each, the output in
                    // `out` (16-byte aligned when streaming).
                    unsafe {
                        if codes.family == ByteFamily::F8E4M3 {
                            wide32::run32_f8::<2, B, true>(dst, ins, n, body, stream)
                        } else {
                            wide32::run32_f8::<2, B, false>(dst, ins, n, body, stream)
                        }
                    }
                    crate::copy::stream::store_fence();
                    e.assert(&out[at..at + n], &format!("AVX2 {codes:?} n {n} {store:?}"));
                }
                if level < SimdLevel::Avx512 {
                    return;
                }
                // SAFETY: the level says the CPU has AVX-512; n codes each, the output in
                // `out` (16-byte aligned when streaming).
                unsafe {
                    if codes.family == ByteFamily::F8E4M3 {
                        run_avx512(dst, ins, n, body, &f8_avx512::F8::<true>, stream)
                    } else {
                        run_avx512(dst, ins, n, body, &f8_avx512::F8::<false>, stream)
                    }
                }
                crate::copy::stream::store_fence();
                e.assert(&out[at..at + n], &format!("AVX-512 {codes:?} n {n} {store:?}"));
            }
            ByteFamily::F8E4M3 | ByteFamily::F8E5M2 => {}
        }
    }
}
