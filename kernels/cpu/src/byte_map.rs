//! Maps over quantized bytes in one pass: operands stored as qint8/quint8 with a per-tensor
//! quantizer, dequantized to f32 in registers, run through the op's f32 body, and
//! quantized again before the store. The map driver's general path
//! stages each input through a block buffer (widen and dequantize), runs the block
//! function, then quantizes from a third buffer: four passes over L1 per block, whose loads and stores, not the arithmetic, bounded a qint8 `add` at about a
//! third of memory bandwidth, and varied most with the machine's load (a qint8 `add_out` of
//! 2^28 elements: 10.6–11.5 GB/s before, 15.4–15.6 in one pass, paired runs, 2026-11-28).
//! Results are the general path's bit for bit: the same dequantize, the same body on f32
//! lanes, the same quantize ([`tensor_core::quant::Affine`]'s rule).
//!
//! The 8-bit floats went through the same loop (their codes decoded and encoded with
//! `convert_f8`'s AVX2 steps) and measured slower than the staged path (f8 `add` 3.5–6.5
//! GB/s against 6.8–11.6): they stay on it.
//!
//! `#[tensor_op]` emits one [`ByteMapFn`](crate::kernel::ByteMapFn) per op (`cpu_bytes`, over its f32 body) and
//! registers it with the op's qint8 and quint8 rows ([`crate::kernel::MapKernel::bytes`]);
//! the driver calls it for runs where every operand is contiguous and of one such dtype.

use crate::byte_codes::ByteCodes;
use crate::kernel::Store;
use crate::map::MapBody;

/// `out[i] = quantize(body(dequantize(inputs[0][i]), …))` for `n` elements, 16 at a time in
/// registers (AVX2), streamed when `store` says so and `out` is 16-byte aligned. `false`
/// (nothing written) below AVX2, where the driver's staged path runs instead.
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
    if crate::simd_level::simd_level() >= crate::simd_level::SimdLevel::Avx2 && inputs.len() == N {
        let ins: [*const u8; N] = std::array::from_fn(|k| inputs[k]);
        let stream = store == Store::Streaming && (out as usize).is_multiple_of(16);
        // SAFETY: the level never exceeds the CPU's (AVX2 and FMA present); the pointers
        // and counts are the caller's contract.
        unsafe {
            if codes.signed {
                avx2::run(out, ins, n, body, &avx2::Quantized::<true>::new(&codes.affines), stream)
            } else {
                avx2::run(out, ins, n, body, &avx2::Quantized::<false>::new(&codes.affines), stream)
            }
        }
        return true;
    }
    let _ = (out, inputs, n, body, codes, store);
    false
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::byte_codes::MAX_OPERANDS;
    use crate::map::{no_loop_vectorize, prefetch, MapBody, PREFETCH_BYTES};
    use crate::value::{SimdElement, Value};
    use std::arch::x86_64::*;
    use tensor_core::quant::Affine;

    /// qint8 (`S`) or quint8 with per-operand affines, their constants broadcast once.
    pub(super) struct Quantized<const S: bool> {
        affines: [Affine; MAX_OPERANDS],
        zp: [__m256; MAX_OPERANDS],
        scale: [__m256; MAX_OPERANDS],
        out: [__m256; 4],
    }

    impl<const S: bool> Quantized<S> {
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(super) fn new(affines: &[Affine; MAX_OPERANDS]) -> Self {
            let o = &affines[0];
            Quantized {
                affines: *affines,
                zp: std::array::from_fn(|k| _mm256_set1_ps(affines[k].zero_point)),
                scale: std::array::from_fn(|k| _mm256_set1_ps(affines[k].scale)),
                out: [o.inv_scale, o.zero_point, o.qmin, o.qmax].map(|x| _mm256_set1_ps(x)),
            }
        }
    }

    impl<const S: bool> Quantized<S> {
        /// Operand `k`'s (0: the output) sixteen stored integers at `src` as values.
        ///
        /// # Safety
        /// AVX2; `src` valid for 16 reads.
        #[inline(always)]
        unsafe fn decode16(&self, k: usize, src: *const u8) -> [f32; 16] {
            let mut v = [0.0f32; 16];
            for h in 0..2 {
                // SAFETY: src + 8h .. +8 within the caller's 16 bytes; AVX2 per the caller.
                unsafe {
                    let bytes = _mm_loadl_epi64(src.add(8 * h).cast());
                    let ints = if S { _mm256_cvtepi8_epi32(bytes) } else { _mm256_cvtepu8_epi32(bytes) };
                    // (q − zp) · scale: Affine::dequantize's two steps
                    let x = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(ints), self.zp[k]), self.scale[k]);
                    _mm256_storeu_ps(v.as_mut_ptr().add(8 * h), x);
                }
            }
            v
        }

        /// Sixteen results quantized as the output's integers at `dst`, streamed when
        /// `stream` (then `dst` is 16-byte aligned).
        ///
        /// # Safety
        /// AVX2; `dst` valid for 16 writes.
        #[inline(always)]
        unsafe fn encode16(&self, v: &[f32; 16], dst: *mut u8, stream: bool) {
            let [inv, zp, lo, hi] = self.out;
            // SAFETY: AVX2 per the caller; `v` holds 16 values; dst per the caller.
            unsafe {
                // Affine::quantize: round half to even of x · inv, + zp, clamped; NaN → qmax
                // falls out of min(v, qmax), which returns its second operand on NaN (the
                // byte dtypes' NaN is qmax: `ByteCodes::of`)
                let q = |h: usize| {
                    let x = _mm256_loadu_ps(v.as_ptr().add(8 * h));
                    let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(x, inv));
                    _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(_mm256_add_ps(r, zp), hi), lo))
                };
                // in range after quantizing: the saturating packs are exact
                let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(q(0), q(1)));
                let (a, b) = (_mm256_castsi256_si128(words), _mm256_extracti128_si256::<1>(words));
                let bytes = if S { _mm_packs_epi16(a, b) } else { _mm_packus_epi16(a, b) };
                if stream {
                    _mm_stream_si128(dst.cast(), bytes);
                } else {
                    _mm_storeu_si128(dst.cast(), bytes);
                }
            }
        }

        /// One stored integer of operand `k` as a value (tails).
        #[inline(always)]
        fn decode1(&self, k: usize, code: u8) -> f32 {
            self.affines[k].dequantize_byte(code, S)
        }

        /// One value as the output's integer (tails).
        #[inline(always)]
        fn encode1(&self, v: f32) -> u8 {
            self.affines[0].quantize_byte(v, S)
        }
    }

    /// The one-pass loop: sixteen elements a step (the f32 body's lane count), a padded
    /// last step for the `< 16` left.
    ///
    /// # Safety
    /// AVX2 and FMA are available; otherwise as [`super::map_bytes`] (`stream` only with a
    /// 16-byte aligned `out`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run<const N: usize, B: MapBody<N>, const S: bool>(
        out: *mut u8,
        ins: [*const u8; N],
        n: usize,
        body: &B,
        codec: &Quantized<S>,
        stream: bool,
    ) {
        const { assert!(<<f32 as SimdElement>::Lanes as Value>::LANES == 16) };
        type Lanes = <f32 as SimdElement>::Lanes;
        let mut i = 0;
        while i + 16 <= n {
            for p in ins {
                prefetch(p.wrapping_add(i + PREFETCH_BYTES));
            }
            // SAFETY: i + 16 <= n: in bounds of every input (caller's contract); the loads
            // come before the store, so an output aliasing an input reads its old codes.
            let args: [Lanes; N] =
                std::array::from_fn(|k| Lanes::load(&unsafe { codec.decode16(k + 1, ins[k].add(i)) }));
            let mut v = [0.0f32; 16];
            body.call(args).store(&mut v);
            // SAFETY: out + i .. + 16 in bounds; aligned when streaming (16 | out, 16 | i).
            unsafe { codec.encode16(&v, out.add(i), stream) };
            i += 16;
            no_loop_vectorize();
        }
        let m = n - i;
        if m > 0 {
            // the last `m` elements padded with the first code of each input (any code:
            // every lane is independent), computed as one more vector
            let args: [Lanes; N] = std::array::from_fn(|k| {
                let mut x = [0.0f32; 16];
                for (j, slot) in x.iter_mut().enumerate() {
                    // SAFETY: i + j < n for j < m; else element i (< n) again.
                    let code = unsafe { *ins[k].add(i + if j < m { j } else { 0 }) };
                    *slot = codec.decode1(k + 1, code);
                }
                Lanes::load(&x)
            });
            let mut v = [0.0f32; 16];
            body.call(args).store(&mut v);
            for (j, &r) in v[..m].iter().enumerate() {
                // SAFETY: i + j < n.
                unsafe { *out.add(i + j) = codec.encode1(r) };
            }
        }
    }
}

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
        ];
        for n in [0usize, 1, 15, 16, 17, 31, 33, 100, 1000] {
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
                check(&codes, &a, &b, &halves, &AddThenHalve);
                let quotients: Vec<u8> = (0..n).map(|i| q(v(1, a[i]) / v(2, b[i]))).collect();
                check(&codes, &a, &b, &quotients, &Divide);
            }
        }
    }

    fn check<B: MapBody<2>>(codes: &ByteCodes, a: &[u8], b: &[u8], want: &[u8], body: &B) {
        let n = a.len();
        for store in [Store::Plain, Store::Streaming] {
            let mut out = vec![0xa5u8; n + 16];
            // an output at a 16-byte boundary of its buffer when there is one
            let at = out.as_ptr().align_offset(16).min(16);
            let dst = out[at..].as_mut_ptr();
            // SAFETY: n codes each; the output lies in `out`.
            let ran = unsafe { map_bytes::<2, _>(dst, &[a.as_ptr(), b.as_ptr()], n, body, codes, store) };
            crate::copy::stream::store_fence();
            if !ran {
                return; // below AVX2: the driver's staged path is the only one
            }
            assert_eq!(&out[at..at + n], want, "{codes:?} n {n} {store:?}");
            // aliased: the output is input a's memory
            let mut alias = a.to_vec();
            let p = alias.as_mut_ptr();
            // SAFETY: as above, out == a exactly.
            unsafe { map_bytes::<2, _>(p, &[p.cast_const(), b.as_ptr()], n, body, codes, store) };
            crate::copy::stream::store_fence();
            assert_eq!(alias, want, "{codes:?} n {n} {store:?} aliased");
        }
    }
}
