//! The one-pass loop of the 8-bit floats 32 elements a step with AVX2 (CPUs without
//! AVX-512): each operand's 32 codes decoded by byte arithmetic into four registers
//! (`convert_f8_avx2::decode32`), the op's f32 body run on two sixteen-lane halves, and
//! the results encoded and narrowed with saturating packs into one 32-byte store
//! (`convert_f8_avx2::encode32`). The decode's unpacks and the encode's packs work within
//! 128-bit lanes and undo each other's order, and a map's lanes are independent, so no
//! element is reordered.
//!
//! `byte_map::f8_avx2`'s sixteen-lane loop (the F16C conversion, an 8-lane encode) took
//! about twice the instructions per element; it still runs the output's first bytes up to
//! a 32-byte boundary and the last `< 32`, so that streamed stores are whole aligned
//! blocks. Results are the same bits as that loop's.

use super::f8_avx2::F8Avx2;
use crate::convert_f8_avx2::{decode32, decodes_in_memory_order, encode32, Tables};
use crate::map::{no_loop_vectorize, prefetch, MapBody, PREFETCH_BYTES};
use crate::value::F32x16;
use std::arch::x86_64::*;

/// `out[i] = encode(body(decode(ins[0][i]), …))` for `n` elements of E4M3 (`E4`) or
/// E5M2, 32 a step, streamed when `stream` (then `out` is 16-byte aligned).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; otherwise as [`super::map_bytes`].
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn run32_f8<const N: usize, B: MapBody<N>, const E4: bool>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    stream: bool,
) {
    let narrow = F8Avx2::<E4>;
    // up to the first 32-byte boundary of the output (a multiple of 16 when streaming)
    let head = (out as usize).wrapping_neg() % 32;
    if head >= n {
        // SAFETY: forwarded (the same pointers and counts).
        unsafe { super::run(out, ins, n, body, &narrow, stream) };
        return;
    }
    // SAFETY: as above, for the first `head` elements.
    unsafe { super::run(out, ins, head, body, &narrow, stream) };
    let mut i = head;
    if i + 32 <= n {
        // Software-pipelined: each step decodes and computes the next 32 results before
        // encoding and storing the previous ones, so that the two long dependency chains
        // (decode → body, encode → store) of different steps sit side by side in the
        // scheduler (one step's chains alone left the core waiting on latencies).
        // SAFETY: i + 32 <= n; the contract's instruction sets.
        let t = unsafe { Tables::new::<E4>() };
        // SAFETY: as above.
        let mut pending = unsafe { step_values::<N, B, E4>(&t, ins, i, body) };
        while i + 64 <= n {
            // SAFETY: i + 64 <= n: the next step is in bounds. Its loads come before the
            // previous step's store (at i), which is below them: an output aliasing an
            // input (same position) was read at i before this store.
            let next = unsafe { step_values::<N, B, E4>(&t, ins, i + 32, body) };
            // SAFETY: out + i .. + 32 in bounds and 32-byte aligned (i − head is a
            // multiple of 32); AVX2 and FMA per the contract.
            unsafe { store_codes::<E4>(out.add(i), pending, stream) };
            pending = next;
            i += 32;
            no_loop_vectorize();
        }
        // SAFETY: as above, for the last whole step.
        unsafe { store_codes::<E4>(out.add(i), pending, stream) };
        i += 32;
    }
    // SAFETY: as above, for the elements from i.
    unsafe {
        let rest: [*const u8; N] = std::array::from_fn(|k| ins[k].add(i));
        super::run(out.add(i), rest, n - i, body, &narrow, stream)
    }
}

/// The body's 32 results for the codes at `ins[k] + i`, in the decode's order (E4M3:
/// the unpacks', E5M2: memory order).
///
/// # Safety
/// AVX2, FMA and F16C (inlined into [`run32_f8`]); `i + 32` within every input.
#[inline(always)]
unsafe fn step_values<const N: usize, B: MapBody<N>, const E4: bool>(
    t: &Tables,
    ins: [*const u8; N],
    i: usize,
    body: &B,
) -> [__m256; 4] {
    let mut args = [[F32x16([0.0; 16]); N]; 2];
    for k in 0..N {
        prefetch(ins[k].wrapping_add(i + PREFETCH_BYTES));
        // SAFETY: i + 32 within input k (the caller); AVX2 per the caller.
        let x = unsafe { decode32::<E4, false>(t, _mm256_loadu_si256(ins[k].add(i).cast())) };
        // SAFETY: two __m256 are sixteen f32.
        unsafe {
            args[0][k] = F32x16(std::mem::transmute::<[__m256; 2], [f32; 16]>([x[0], x[1]]));
            args[1][k] = F32x16(std::mem::transmute::<[__m256; 2], [f32; 16]>([x[2], x[3]]));
        }
    }
    // SAFETY: sixteen f32 are two __m256. (No closures: they would not inherit the target
    // features.)
    unsafe {
        let r0 = std::mem::transmute::<[f32; 16], [__m256; 2]>(body.call(args[0]).0);
        let r1 = std::mem::transmute::<[f32; 16], [__m256; 2]>(body.call(args[1]).0);
        [r0[0], r0[1], r1[0], r1[1]]
    }
}

/// Encodes 32 results (the decode's order) and stores them at `dst`, streamed when
/// `stream`.
///
/// # Safety
/// AVX2 and FMA (inlined into [`run32_f8`]); `dst .. + 32` the caller's, 32-byte aligned.
#[inline(always)]
unsafe fn store_codes<const E4: bool>(dst: *mut u8, v: [__m256; 4], stream: bool) {
    // SAFETY: per the contract.
    unsafe {
        // (a register order the decode chose, undone here)
        let codes = if decodes_in_memory_order(E4) { encode32::<E4, true>(v) } else { encode32::<E4, false>(v) };
        if stream {
            _mm256_stream_si256(dst.cast(), codes);
        } else {
            _mm256_store_si256(dst.cast(), codes);
        }
    }
}
