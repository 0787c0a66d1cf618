//! The fused softmax / log_softmax rows of dense f16 and bf16 tensors on the CPU: each row
//! converted into an f32 scratch row, its maximum, Σ e^(x − max) and output computed there
//! in f32 (as the f32 rows do), and the output rounded once into the row's dtype — one
//! read of the row from memory, where the log-sum-exp reduction and map it replaced read
//! the whole tensor twice. Registered with the f32/f64 rows in `mod.rs`.

use super::step::{exp_step, finish};
use crate::convert::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::map::{no_loop_vectorize, simd_level, SimdLevel};
use crate::reduce::builtin::max_by_gt;
use crate::rows::RowScratch;
use crate::value::{F32x16, Lane, Value};

/// Widens `n` 16-bit floats at `src` to f32 at `dst`.
type Widen = unsafe fn(dst: *mut f32, src: *const u16, n: usize);
/// Rounds `n` f32 at `src` to 16-bit floats at `dst`.
type Narrow = unsafe fn(dst: *mut u16, src: *const f32, n: usize);

/// `count` dense rows of `len` 16-bit floats: per row, the row widened into the first
/// scratch row, its maximum, e^(x − max) (softmax: into the second scratch row) summed,
/// the f32 output built in the second scratch row (softmax `e · (1 / Σ)`, log_softmax
/// `(x − max) − ln Σ`, the f32 rows' formulas) and narrowed into `out`. A NaN or +∞ in a
/// row makes the whole row NaN, a row of −∞ NaN, as in f32.
///
/// # Safety
/// As [`crate::rows::RowFn`], with f32 scratch rows; `widen`/`narrow` are the
/// row dtype's conversions.
#[inline(always)]
unsafe fn half_rows(
    out: *mut u16,
    x: *const u16,
    len: usize,
    count: usize,
    sc: RowScratch,
    log: bool,
    (widen, narrow): (Widen, Narrow),
) {
    let n = F32x16::LANES;
    let body = len - len % n;
    // SAFETY: the caller's contract: two f32 scratch rows of `len` elements, disjoint from
    // each other and from the rows.
    let (xs, tmp) = unsafe {
        (
            std::slice::from_raw_parts_mut(sc.scratch[0].cast::<f32>(), len),
            std::slice::from_raw_parts_mut(sc.scratch[1].cast::<f32>(), len),
        )
    };
    for r in 0..count {
        let (x, out) = (x.wrapping_add(r * len), out.wrapping_add(r * len));
        // SAFETY: row `r` of the input holds `len` elements (the caller's contract).
        unsafe { widen(xs.as_mut_ptr(), x, len) };
        let mx = max_by_gt(xs);
        let mv = F32x16::splat(mx);
        let mut vs = F32x16::zero();
        for k in 0..body / n {
            // One vector per iteration: keep LLVM from widening across them.
            no_loop_vectorize();
            vs = exp_step(xs, tmp, k, mv, vs, log, x.wrapping_add(len));
        }
        let mut lanes = [0f32; 16];
        vs.store(&mut lanes);
        let mut s = Lane(0f32);
        for &l in &lanes {
            s = s + Lane(l);
        }
        for (&xk, o) in xs[body..].iter().zip(&mut tmp[body..]) {
            let e = (Lane(xk) - Lane(mx)).exp_nonpositive();
            if !log {
                *o = e.0;
            }
            s = s + e;
        }
        let c = if log { s.ln().0 } else { 1.0 / s.0 };
        let cv = F32x16::splat(c);
        // The output into the second scratch row: from the input (log) or e^(x − max).
        for k in 0..body / n {
            no_loop_vectorize();
            let src = if log { &xs[k * n..(k + 1) * n] } else { &tmp[k * n..(k + 1) * n] };
            finish(log, F32x16::load(src), mv, cv).store(&mut tmp[k * n..(k + 1) * n]);
        }
        for (&xk, o) in xs[body..].iter().zip(&mut tmp[body..]) {
            *o = finish(log, Lane(if log { xk } else { *o }), Lane(mx), Lane(c)).0;
        }
        // SAFETY: row `r` of the output holds `len` elements (the caller's contract).
        unsafe { narrow(out, tmp.as_ptr(), len) };
    }
}

/// The row functions per dtype and mode, at the CPU's SIMD level.
macro_rules! half_row_fns {
    ($($name:ident: $widen:path, $narrow:path, $log:expr;)*) => { $(
        /// `count` rows (see [`half_rows`]).
        ///
        /// # Safety
        /// As [`crate::rows::RowFn`], with f32 scratch rows.
        pub(super) unsafe fn $name(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch) {
            let conv: (Widen, Narrow) = ($widen, $narrow);
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn avx512(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch, conv: (Widen, Narrow)) {
                // SAFETY: forwarded.
                unsafe { half_rows(out.cast(), x.cast(), len, count, r, $log, conv) }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch, conv: (Widen, Narrow)) {
                // SAFETY: forwarded.
                unsafe { half_rows(out.cast(), x.cast(), len, count, r, $log, conv) }
            }
            match simd_level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `simd_level` never exceeds what the CPU has; forwarded.
                SimdLevel::Avx512 => unsafe { avx512(out, x, len, count, r, conv) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above.
                SimdLevel::Avx2 => unsafe { avx2(out, x, len, count, r, conv) },
                // SAFETY: forwarded.
                _ => unsafe { half_rows(out.cast(), x.cast(), len, count, r, $log, conv) },
            }
        }
    )* };
}

half_row_fns! {
    softmax_f16: f16_to_f32, f32_to_f16, false;
    softmax_bf16: bf16_to_f32, f32_to_bf16, false;
    log_softmax_f16: f16_to_f32, f32_to_f16, true;
    log_softmax_bf16: bf16_to_f32, f32_to_bf16, true;
}
