//! Block kernels of elementwise ops: contiguous input blocks in, one contiguous output
//! block out. `#[tensor_op]` generates a [`MapBody`] (or [`PredBody`]) per op and one
//! `MapFn` per dtype that calls [`map_block`] (or [`pred_block`]).

use super::value::{Mask, SimdElement, Value};

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

/// Runs `body` over `n` elements: `out[i] = body(inputs[0][i], ..., inputs[N-1][i])`.
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
