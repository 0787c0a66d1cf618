//! Block kernels of elementwise ops: contiguous input blocks in, one contiguous output
//! block out. `#[tensor_op]` generates a [`MapBody`] (or [`PredBody`]) per op and one
//! `MapFn` per dtype that calls [`map_block`] (or [`pred_block`]).

use super::value::{Mask, SimdElement, Value};
use std::sync::atomic::{AtomicU8, Ordering};

/// An op body returning a value: `fn call<V: Value>(&self, [a, b]: [V; 2]) -> V`.
pub trait MapBody<const N: usize>: Sync {
    /// Evaluates the body on scalars or on SIMD lanes.
    fn call<V: Value>(&self, args: [V; N]) -> V;
}

/// An op body returning a comparison mask (ops whose output dtype is `bool`).
pub trait PredBody<const N: usize>: Sync {
    /// Evaluates the body on scalars or on SIMD lanes.
    fn call<V: Value>(&self, args: [V; N]) -> V::Mask;
}

/// The instruction set the block kernels run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdLevel {
    /// The build's target features (SSE2 on a default x86-64 build).
    Baseline,
    /// AVX2 + FMA (x86-64, detected at run time).
    Avx2,
}

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The widest instruction set of the running CPU the block kernels use (detected once).
/// Setting `TENSOR_OPS_SIMD=baseline` in the environment forces [`SimdLevel::Baseline`].
#[inline]
pub fn simd_level() -> SimdLevel {
    match LEVEL.load(Ordering::Relaxed) {
        1 => SimdLevel::Baseline,
        2 => SimdLevel::Avx2,
        _ => detect_level(),
    }
}

#[cold]
fn detect_level() -> SimdLevel {
    let forced = std::env::var("TENSOR_OPS_SIMD").is_ok_and(|v| v.eq_ignore_ascii_case("baseline"));
    #[cfg(target_arch = "x86_64")]
    let wide = !forced && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let wide = {
        let _ = forced;
        false
    };
    let level = if wide { SimdLevel::Avx2 } else { SimdLevel::Baseline };
    LEVEL.store(if wide { 2 } else { 1 }, Ordering::Relaxed);
    level
}

/// Runs `body` over `n` elements: `out[i] = body(inputs[0][i], ..., inputs[N-1][i])`.
///
/// The loop is compiled twice: for the build's baseline target and, on x86-64, with AVX2
/// (chosen at run time when the CPU has it, see [`simd_level`]). Results are identical.
///
/// # Safety
/// `out` is valid for `n` writes of `E`, each of the `N` `inputs` for `n` reads of `E`;
/// `out` may be equal to an input pointer but must not partially overlap one.
pub unsafe fn map_block<E: SimdElement, const N: usize, B: MapBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() == SimdLevel::Avx2 {
        // SAFETY: the CPU has AVX2 and FMA (detected at run time); the caller's contract
        // is forwarded unchanged.
        return unsafe { map_block_avx2::<E, N, B>(out, inputs, n, body) };
    }
    // SAFETY: forwarded.
    unsafe { map_block_generic::<E, N, B>(out, inputs, n, body) }
}

/// [`map_block_generic`] compiled with AVX2.
///
/// # Safety
/// As [`map_block`]; the CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_block_avx2<E: SimdElement, const N: usize, B: MapBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    // SAFETY: forwarded.
    unsafe { map_block_generic::<E, N, B>(out, inputs, n, body) }
}

/// The loop of [`map_block`], inlined into each instruction-set copy.
///
/// # Safety
/// As [`map_block`].
#[inline(always)]
unsafe fn map_block_generic<E: SimdElement, const N: usize, B: MapBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    let ins: [*const E; N] = std::array::from_fn(|i| inputs[i] as *const E);
    let out = out as *mut E;
    let lanes = <E::Lanes as Value>::LANES;
    let mut i = 0;
    let mut buf = [[E::ZERO; 64]; N];
    let mut obuf = [E::ZERO; 64];
    debug_assert!(lanes <= 64);
    while i + lanes <= n {
        for k in 0..N {
            // SAFETY: i + lanes <= n, inputs valid for n reads (caller's contract); copied
            // to a local so `out` aliasing an input is never a live `&` + `&mut` pair.
            unsafe { std::ptr::copy_nonoverlapping(ins[k].add(i), buf[k].as_mut_ptr(), lanes) };
        }
        let args: [E::Lanes; N] = std::array::from_fn(|k| E::Lanes::load(&buf[k][..lanes]));
        body.call(args).store(&mut obuf[..lanes]);
        // SAFETY: out valid for n writes; i + lanes <= n.
        unsafe { std::ptr::copy_nonoverlapping(obuf.as_ptr(), out.add(i), lanes) };
        i += lanes;
    }
    while i < n {
        // SAFETY: i < n.
        let args: [E::One; N] = std::array::from_fn(|k| E::One::splat(unsafe { ins[k].add(i).read() }));
        let mut r = [E::ZERO];
        body.call(args).store(&mut r);
        // SAFETY: i < n.
        unsafe { out.add(i).write(r[0]) };
        i += 1;
    }
}

/// Like [`map_block`] for bodies returning a mask; `out` holds `n` `bool`s.
///
/// # Safety
/// As [`map_block`], with `out` valid for `n` writes of `bool`.
pub unsafe fn pred_block<E: SimdElement, const N: usize, B: PredBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() == SimdLevel::Avx2 {
        // SAFETY: the CPU has AVX2 and FMA (detected at run time); contract forwarded.
        return unsafe { pred_block_avx2::<E, N, B>(out, inputs, n, body) };
    }
    // SAFETY: forwarded.
    unsafe { pred_block_generic::<E, N, B>(out, inputs, n, body) }
}

/// [`pred_block_generic`] compiled with AVX2.
///
/// # Safety
/// As [`pred_block`]; the CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pred_block_avx2<E: SimdElement, const N: usize, B: PredBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    // SAFETY: forwarded.
    unsafe { pred_block_generic::<E, N, B>(out, inputs, n, body) }
}

/// The loop of [`pred_block`].
///
/// # Safety
/// As [`pred_block`].
#[inline(always)]
unsafe fn pred_block_generic<E: SimdElement, const N: usize, B: PredBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
) {
    let ins: [*const E; N] = std::array::from_fn(|i| inputs[i] as *const E);
    let out = out as *mut bool;
    let lanes = <E::Lanes as Value>::LANES;
    let mut i = 0;
    let mut buf = [[E::ZERO; 64]; N];
    let mut obuf = [false; 64];
    while i + lanes <= n {
        for k in 0..N {
            // SAFETY: as in map_block.
            unsafe { std::ptr::copy_nonoverlapping(ins[k].add(i), buf[k].as_mut_ptr(), lanes) };
        }
        let args: [E::Lanes; N] = std::array::from_fn(|k| E::Lanes::load(&buf[k][..lanes]));
        body.call(args).write_bools(&mut obuf[..lanes]);
        // SAFETY: out valid for n bool writes; i + lanes <= n.
        unsafe { std::ptr::copy_nonoverlapping(obuf.as_ptr(), out.add(i), lanes) };
        i += lanes;
    }
    while i < n {
        // SAFETY: i < n.
        let args: [E::One; N] = std::array::from_fn(|k| E::One::splat(unsafe { ins[k].add(i).read() }));
        let mut b = [false];
        body.call(args).write_bools(&mut b);
        // SAFETY: i < n.
        unsafe { out.add(i).write(b[0]) };
        i += 1;
    }
}
