//! The one-pass loop 64 elements a step with AVX-512: four registers of each operand
//! decoded, the op's f32 body run on each, and the four results narrowed to 64 bytes
//! with saturating packs (two rounds and one permute back to memory order) instead of
//! four `vpmovdb` and four stores. Two codecs ([`Codec64`]): the quantized bytes
//! (`Quantized64`: `avx512::Quantized`'s per-register rule) and, with AVX-512 VBMI, the
//! 8-bit floats (`F8Vbmi`: decoded by table lookup, `convert_f8_vbmi`).
//!
//! An f8 `add` spent most of its time in `convert_f8`'s arithmetic decode and
//! per-register narrowing (16 lanes a step); this loop takes about half the instructions
//! per element. The output's first bytes up to a 64-byte boundary, and the last `< 64`,
//! run through [`super::run`] with the codec's sixteen-lane form, so that streamed stores
//! are whole aligned lines. Results are the same bits as that loop's.

use super::avx512::Quantized;
use super::f8_avx512::F8;
use super::Codec16;
use crate::convert_f8_vbmi::{decode64, encode64, Tables};
use crate::map::{no_loop_vectorize, prefetch, MapBody, PREFETCH_BYTES};
use crate::value::F32x16;
use std::arch::x86_64::*;

/// Sixty-four codes to values and back in four AVX-512 registers, with the sixteen-lane
/// codec for the ends. The registers may hold the elements in any order of the codec's
/// choosing that its `encode64` puts back (the same for every operand: a map's lanes are
/// independent).
pub(super) trait Codec64 {
    /// What the loop builds once (in registers) before its steps.
    type State: Copy;
    /// The sixteen-lane codec with the same results.
    type Narrow: Codec16;

    /// The sixteen-lane codec.
    fn narrow(&self) -> &Self::Narrow;

    /// The loop's constants.
    ///
    /// # Safety
    /// The codec's instruction set is available (inlined into a function compiled with it).
    unsafe fn state(&self) -> Self::State;

    /// Operand `k`'s (0: the output) 64 codes at `src` as values, in the codec's order.
    ///
    /// # Safety
    /// As [`Codec64::state`]; `src` valid for 64 reads.
    unsafe fn decode64(&self, s: &Self::State, k: usize, src: *const u8) -> [__m512; 4];

    /// 64 results (in the codec's order) as the output's codes, in memory order.
    ///
    /// # Safety
    /// As [`Codec64::state`].
    unsafe fn encode64(&self, s: &Self::State, v: [__m512; 4]) -> __m512i;
}

/// The 8-bit floats by table lookup (AVX-512 VBMI), in the unpacks' order (no `vpermb`
/// either way).
pub(super) struct F8Vbmi<const E4: bool>(pub(super) F8<E4>);

impl<const E4: bool> Codec64 for F8Vbmi<E4> {
    type State = Tables;
    type Narrow = F8<E4>;

    #[inline(always)]
    fn narrow(&self) -> &F8<E4> {
        &self.0
    }

    #[inline(always)]
    unsafe fn state(&self) -> Tables {
        // SAFETY: AVX-512 F per the caller.
        unsafe { Tables::new::<E4>() }
    }

    #[inline(always)]
    unsafe fn decode64(&self, t: &Tables, _k: usize, src: *const u8) -> [__m512; 4] {
        // SAFETY: AVX-512 F/BW/VBMI per the caller; src .. +64 are the caller's.
        unsafe { decode64::<false>(t, _mm512_loadu_si512(src.cast())) }
    }

    #[inline(always)]
    unsafe fn encode64(&self, t: &Tables, v: [__m512; 4]) -> __m512i {
        // SAFETY: AVX-512 F/BW/VBMI per the caller.
        unsafe { encode64::<E4, false>(t, v) }
    }
}

/// qint8 (`S`) or quint8: `avx512::Quantized`'s rule on each register, the codes narrowed
/// with saturating packs (exact: each is already in the output's range).
pub(super) struct Quantized64<const S: bool>(pub(super) Quantized<S>);

/// Dword `4j + q` of the packed register holds codes `16q + 4j ..`: this index puts them
/// back in memory order (its own inverse).
const DWORD_ORDER: [i32; 16] = {
    let mut t = [0i32; 16];
    let mut p = 0;
    while p < 16 {
        t[p] = (4 * (p % 4) + p / 4) as i32;
        p += 1;
    }
    t
};

impl<const S: bool> Codec64 for Quantized64<S> {
    type State = __m512i;
    type Narrow = Quantized<S>;

    #[inline(always)]
    fn narrow(&self) -> &Quantized<S> {
        &self.0
    }

    #[inline(always)]
    unsafe fn state(&self) -> __m512i {
        // SAFETY: AVX-512 F per the caller; 16 i32 (unaligned load).
        unsafe { _mm512_loadu_si512(DWORD_ORDER.as_ptr().cast()) }
    }

    #[inline(always)]
    unsafe fn decode64(&self, _: &__m512i, k: usize, src: *const u8) -> [__m512; 4] {
        // SAFETY: AVX-512 F per the caller; src .. +64 are the caller's.
        unsafe {
            [
                self.0.decode_register(k, src),
                self.0.decode_register(k, src.add(16)),
                self.0.decode_register(k, src.add(32)),
                self.0.decode_register(k, src.add(48)),
            ]
        }
    }

    #[inline(always)]
    unsafe fn encode64(&self, order: &__m512i, v: [__m512; 4]) -> __m512i {
        // SAFETY: AVX-512 F/BW per the caller.
        unsafe {
            let q = [
                self.0.codes_register(v[0]),
                self.0.codes_register(v[1]),
                self.0.codes_register(v[2]),
                self.0.codes_register(v[3]),
            ];
            let bytes = if S {
                _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]))
            } else {
                _mm512_packus_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]))
            };
            _mm512_permutexvar_epi32(*order, bytes)
        }
    }
}

/// `out[i] = encode(body(decode(ins[0][i]), …))` for `n` elements, 64 a step, streamed
/// when `stream` (then `out` is 16-byte aligned).
///
/// # Safety
/// The codec's instruction set is available (at most the calling copy's); otherwise as
/// [`super::map_bytes`].
#[inline(always)]
unsafe fn run64<const N: usize, B: MapBody<N>, C: Codec64>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    codec: &C,
    stream: bool,
) {
    // up to the first 64-byte boundary of the output (a multiple of 16 when streaming)
    let head = (out as usize).wrapping_neg() % 64;
    if head >= n {
        // SAFETY: forwarded (the same pointers and counts).
        unsafe { super::run(out, ins, n, body, codec.narrow(), stream) };
        return;
    }
    // SAFETY: as above, for the first `head` elements.
    unsafe { super::run(out, ins, head, body, codec.narrow(), stream) };
    // SAFETY: the codec's instruction set per the contract.
    let state = unsafe { codec.state() };
    let mut args = [[F32x16([0.0; 16]); N]; 4];
    let mut i = head;
    while i + 64 <= n {
        for k in 0..N {
            prefetch(ins[k].wrapping_add(i + PREFETCH_BYTES));
            // SAFETY: i + 64 <= n: in bounds of every input (caller's contract). The loads
            // come before the store, so an output aliasing an input reads its old codes.
            let x = unsafe { codec.decode64(&state, k + 1, ins[k].add(i)) };
            for q in 0..4 {
                // SAFETY: an __m512 is sixteen f32.
                args[q][k] = F32x16(unsafe { std::mem::transmute::<__m512, [f32; 16]>(x[q]) });
            }
        }
        // SAFETY: sixteen f32 are an __m512. (No closures: they would not inherit the
        // target features.)
        let r = unsafe {
            [
                std::mem::transmute::<[f32; 16], __m512>(body.call(args[0]).0),
                std::mem::transmute::<[f32; 16], __m512>(body.call(args[1]).0),
                std::mem::transmute::<[f32; 16], __m512>(body.call(args[2]).0),
                std::mem::transmute::<[f32; 16], __m512>(body.call(args[3]).0),
            ]
        };
        // SAFETY: out + i .. + 64 in bounds and 64-byte aligned (i − head is a multiple
        // of 64); the codec's instruction set per the contract.
        unsafe {
            let codes = codec.encode64(&state, r);
            if stream {
                _mm512_stream_si512(out.add(i).cast(), codes);
            } else {
                _mm512_store_si512(out.add(i).cast(), codes);
            }
        }
        i += 64;
        no_loop_vectorize();
    }
    // SAFETY: as above, for the elements from i.
    unsafe {
        let rest: [*const u8; N] = std::array::from_fn(|k| ins[k].add(i));
        super::run(out.add(i), rest, n - i, body, codec.narrow(), stream)
    }
}

/// [`run64`] compiled with AVX-512 F/BW/DQ/VL (the quantized codecs).
///
/// # Safety
/// As [`run64`]; the CPU has AVX-512 F/BW/DQ/VL, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
pub(super) unsafe fn run64_avx512<const N: usize, B: MapBody<N>, C: Codec64>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    codec: &C,
    stream: bool,
) {
    // SAFETY: forwarded.
    unsafe { run64(out, ins, n, body, codec, stream) }
}

/// [`run64`] compiled with AVX-512 F/BW/DQ/VL and VBMI (the 8-bit floats).
///
/// # Safety
/// As [`run64`]; the CPU has AVX-512 F/BW/DQ/VL, VBMI, AVX2 and FMA.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn run64_vbmi<const N: usize, B: MapBody<N>, C: Codec64>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    codec: &C,
    stream: bool,
) {
    // SAFETY: forwarded.
    unsafe { run64(out, ins, n, body, codec, stream) }
}
