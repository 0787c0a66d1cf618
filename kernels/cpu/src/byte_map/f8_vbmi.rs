//! The 8-bit floats' one-pass loop with AVX-512 VBMI: sixty-four codes per step, decoded
//! by table lookup and encoded with saturating packs (`convert_f8_vbmi`), the op's f32 body
//! run on the four registers between. An f8 `add` spent most of its time in
//! `convert_f8`'s arithmetic decode and per-register narrowing (16 lanes a step): this
//! loop takes about half the instructions per element.
//!
//! The output's first bytes up to a 64-byte boundary, and the last `< 64`, run through
//! [`super::run`] with the sixteen-lane codec ([`super::f8_avx512::F8`]), so that streamed
//! stores are whole aligned lines. Results are the same bits as that loop's.

use super::f8_avx512::F8;
use crate::convert_f8_vbmi::{decode64, encode64, Tables};
use crate::map::{no_loop_vectorize, prefetch, MapBody, PREFETCH_BYTES};
use crate::value::F32x16;
use std::arch::x86_64::*;

/// `out[i] = encode(body(decode(ins[0][i]), …))` for `n` elements of E4M3 (`E4`) or E5M2,
/// streamed when `stream` (then `out` is 16-byte aligned).
///
/// # Safety
/// The CPU has AVX-512 F/BW/DQ/VL, VBMI, AVX2 and FMA; otherwise as
/// [`super::map_bytes`].
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn run_f8_vbmi<const N: usize, B: MapBody<N>, const E4: bool>(
    out: *mut u8,
    ins: [*const u8; N],
    n: usize,
    body: &B,
    stream: bool,
) {
    // up to the first 64-byte boundary of the output (a multiple of 16 when streaming)
    let head = (out as usize).wrapping_neg() % 64;
    if head >= n {
        // SAFETY: forwarded (AVX-512 F per the contract; the same pointers and counts).
        unsafe { super::run(out, ins, n, body, &F8::<E4>, stream) };
        return;
    }
    // SAFETY: as above, for the first `head` elements.
    unsafe { super::run(out, ins, head, body, &F8::<E4>, stream) };
    // SAFETY: AVX-512 F per the contract.
    let tables = unsafe { Tables::new::<E4>() };
    let mut args = [[F32x16([0.0; 16]); N]; 4];
    let mut i = head;
    while i + 64 <= n {
        for k in 0..N {
            prefetch(ins[k].wrapping_add(i + PREFETCH_BYTES));
            // SAFETY: i + 64 <= n: in bounds of every input (caller's contract); AVX-512
            // F/BW/VBMI per the contract. The loads come before the store, so an output
            // aliasing an input reads its old codes.
            let x = unsafe { decode64(&tables, _mm512_loadu_si512(ins[k].add(i).cast())) };
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
        // SAFETY: AVX-512 F/BW/VBMI per the contract; out + i .. + 64 in bounds and
        // 64-byte aligned (i − head is a multiple of 64).
        unsafe {
            let codes = encode64::<E4>(&tables, r);
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
        super::run(out.add(i), rest, n - i, body, &F8::<E4>, stream)
    }
}
