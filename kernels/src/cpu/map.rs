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

/// How a block loop turns a body's result into output elements: values of `E`
/// ([`MapBody`]) or `bool`s ([`PredBody`]). Lets one loop serve both kinds of op.
trait BlockBody<E: SimdElement, const N: usize>: Sync {
    /// The output element.
    type Out: Copy + Default;
    /// Evaluates one vector of lanes into `out[..LANES]`.
    fn lanes(&self, args: [E::Lanes; N], out: &mut [Self::Out]);
    /// Evaluates one element.
    fn one(&self, args: [E::One; N]) -> Self::Out;
}

struct Values<'a, B>(&'a B);
struct Preds<'a, B>(&'a B);

impl<E: SimdElement, const N: usize, B: MapBody<N>> BlockBody<E, N> for Values<'_, B> {
    type Out = E;
    #[inline(always)]
    fn lanes(&self, args: [E::Lanes; N], out: &mut [E]) {
        self.0.call(args).store(out);
    }
    #[inline(always)]
    fn one(&self, args: [E::One; N]) -> E {
        let mut r = [E::ZERO];
        self.0.call(args).store(&mut r);
        r[0]
    }
}

impl<E: SimdElement, const N: usize, B: PredBody<N>> BlockBody<E, N> for Preds<'_, B> {
    type Out = bool;
    #[inline(always)]
    fn lanes(&self, args: [E::Lanes; N], out: &mut [bool]) {
        self.0.call(args).write_bools(out);
    }
    #[inline(always)]
    fn one(&self, args: [E::One; N]) -> bool {
        let mut b = [false];
        self.0.call(args).write_bools(&mut b);
        b[0]
    }
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
    // SAFETY: forwarded; `out` holds `n` values of E.
    unsafe { run_block::<E, N, _>(out, inputs, n, &Values(body)) }
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
    // SAFETY: forwarded; `out` holds `n` bools.
    unsafe { run_block::<E, N, _>(out, inputs, n, &Preds(body)) }
}

/// Picks the instruction-set copy of the block loop.
///
/// # Safety
/// As [`map_block`], with `out` valid for `n` writes of `K::Out`.
#[inline(always)]
unsafe fn run_block<E: SimdElement, const N: usize, K: BlockBody<E, N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &K,
) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() == SimdLevel::Avx2 {
        // SAFETY: the CPU has AVX2 and FMA (detected at run time); the caller's contract
        // is forwarded unchanged.
        return unsafe { run_block_avx2::<E, N, K>(out, inputs, n, body) };
    }
    // SAFETY: forwarded.
    unsafe { run_block_generic::<E, N, K>(out, inputs, n, body) }
}

/// [`run_block_generic`] compiled with AVX2.
///
/// # Safety
/// As [`run_block`]; the CPU supports AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_block_avx2<E: SimdElement, const N: usize, K: BlockBody<E, N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &K,
) {
    // SAFETY: forwarded.
    unsafe { run_block_generic::<E, N, K>(out, inputs, n, body) }
}

/// The block loop, inlined into each instruction-set copy: full vectors of lanes, then a
/// scalar tail.
///
/// # Safety
/// As [`run_block`].
#[inline(always)]
unsafe fn run_block_generic<E: SimdElement, const N: usize, K: BlockBody<E, N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &K,
) {
    let ins: [*const E; N] = std::array::from_fn(|i| inputs[i] as *const E);
    let out = out as *mut K::Out;
    let lanes = <E::Lanes as Value>::LANES;
    let mut i = 0;
    let mut buf = [[E::ZERO; 64]; N];
    let mut obuf = [K::Out::default(); 64];
    debug_assert!(lanes <= 64);
    while i + lanes <= n {
        for k in 0..N {
            // SAFETY: i + lanes <= n, inputs valid for n reads (caller's contract); copied
            // to a local so `out` aliasing an input is never a live `&` + `&mut` pair.
            unsafe { std::ptr::copy_nonoverlapping(ins[k].add(i), buf[k].as_mut_ptr(), lanes) };
        }
        let args: [E::Lanes; N] = std::array::from_fn(|k| E::Lanes::load(&buf[k][..lanes]));
        body.lanes(args, &mut obuf[..lanes]);
        // SAFETY: out valid for n writes; i + lanes <= n.
        unsafe { std::ptr::copy_nonoverlapping(obuf.as_ptr(), out.add(i), lanes) };
        i += lanes;
    }
    while i < n {
        // SAFETY: i < n.
        let args: [E::One; N] = std::array::from_fn(|k| E::One::splat(unsafe { ins[k].add(i).read() }));
        // SAFETY: i < n.
        unsafe { out.add(i).write(body.one(args)) };
        i += 1;
    }
}
