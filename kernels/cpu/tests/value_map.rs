//! `map_block` / `pred_block` over every length 0..100 (vector body + scalar tail), with
//! poisoned outputs, separate and in-place (`out` == first input), with plain and with
//! streaming stores, into 16-byte-aligned outputs and outputs one element past that.

#![allow(clippy::excessive_precision, clippy::approx_constant, clippy::unnecessary_cast)]

mod value_common;

use tensor_kernels_cpu::copy::stream::store_fence;
use tensor_kernels_cpu::kernel::Store;
use tensor_kernels_cpu::map::{map_block, pred_block};
use tensor_kernels_cpu::value::{SimdElement, Value};
use value_common::{Rng, TestElem};

body!(Fma, |a, b| a * b + V::one());
pred!(Less, |a, b| a.lt(b) | a.eq(V::zero()));

/// `len` elements of `E` in `buf` (a poisoned backing vector) starting `shift` elements
/// after the first 16-byte-aligned one.
fn window<E: Copy>(buf: &mut [E], shift: usize) -> *mut E {
    let size = std::mem::size_of::<E>();
    let lead = (0..16).find(|k| (buf.as_ptr() as usize + k * size).is_multiple_of(16)).unwrap_or(0);
    buf[lead + shift..].as_mut_ptr()
}

fn run<E: TestElem>(seed: u64, poison: E, fma: impl Fn(E, E) -> E) {
    for store in [Store::Plain, Store::Streaming] {
        for shift in [0, 1] {
            run_with(seed, poison, &fma, store, shift);
        }
    }
}

fn run_with<E: TestElem>(seed: u64, poison: E, fma: impl Fn(E, E) -> E, store: Store, shift: usize) {
    let mut r = Rng(seed);
    let at = format!("{store:?} stores, shifted {shift}");
    for n in 0..100 {
        let a: Vec<E> = (0..n).map(|_| E::random(&mut r)).collect();
        let b: Vec<E> = (0..n).map(|_| E::random(&mut r)).collect();
        let want: Vec<E> = a.iter().zip(&b).map(|(&x, &y)| fma(x, y)).collect();

        let mut buf = vec![poison; n + 40];
        let out = window(&mut buf, shift);
        // SAFETY: `out` has at least n + 8 elements of `buf` after it, `a` and `b` hold n.
        unsafe { map_block::<E, 2, _>(out as *mut u8, &[a.as_ptr() as _, b.as_ptr() as _], n, &Fma, store) };
        store_fence();
        // SAFETY: n + 8 elements of `buf` from `out`, written above or still poison.
        let out = unsafe { std::slice::from_raw_parts(out, n + 8) };
        for i in 0..n {
            assert!(E::same(out[i], want[i]), "{at}: n={n} i={i}: {:?} vs {:?}", out[i], want[i]);
        }
        assert!(out[n..].iter().all(|&p| E::same(p, poison)), "{at}: n={n}: wrote past the end");

        // In place into the first input.
        let mut io = vec![poison; n + 40];
        let p = window(&mut io, shift);
        // SAFETY: `p` has n + 8 elements of `io` after it.
        unsafe { std::ptr::copy_nonoverlapping(a.as_ptr(), p, n) };
        // SAFETY: as above; out == input 0 is allowed.
        unsafe { map_block::<E, 2, _>(p as *mut u8, &[p as *const u8, b.as_ptr() as _], n, &Fma, store) };
        store_fence();
        // SAFETY: as above.
        let io = unsafe { std::slice::from_raw_parts(p, n + 8) };
        for i in 0..n {
            assert!(E::same(io[i], want[i]), "{at}: in place n={n} i={i}");
        }
        assert!(io[n..].iter().all(|&q| E::same(q, poison)));

        let mut bools = vec![false; n + 40];
        let q = window(&mut bools, shift);
        // SAFETY: `q` has n + 8 elements of `bools` after it, `a` and `b` hold n.
        unsafe { std::slice::from_raw_parts_mut(q, n).fill(true) };
        // SAFETY: as above.
        unsafe { pred_block::<E, 2, _>(q as *mut u8, &[a.as_ptr() as _, b.as_ptr() as _], n, &Less, store) };
        store_fence();
        // SAFETY: as above.
        let bools = unsafe { std::slice::from_raw_parts(q, n + 8) };
        for i in 0..n {
            assert_eq!(bools[i], a[i] < b[i] || a[i] == E::ZERO, "{at}: pred n={n} i={i}");
        }
        assert!(bools[n..].iter().all(|&x| !x));
    }
}

fn lanes<E: SimdElement>() -> usize {
    <E::Lanes as Value>::LANES
}

#[test]
fn map_and_pred_blocks() {
    assert_eq!((lanes::<f32>(), lanes::<f64>(), lanes::<i32>(), lanes::<u8>()), (16, 4, 16, 64));
    run::<f32>(1, f32::from_bits(0x7fc0_dead), |a, b| a * b + 1.0);
    run::<f64>(2, -1234.5, |a, b| a * b + 1.0);
    run::<i64>(3, 0x5a5a, |a, b| a.wrapping_mul(b).wrapping_add(1));
    run::<i32>(4, 0x5a5a, |a, b| a.wrapping_mul(b).wrapping_add(1));
    run::<i16>(5, 0x5a5a, |a, b| a.wrapping_mul(b).wrapping_add(1));
    run::<i8>(6, 0x5a, |a, b| a.wrapping_mul(b).wrapping_add(1));
    run::<u8>(7, 0xa5, |a, b| a.wrapping_mul(b).wrapping_add(1));
    run::<bool>(8, true, |a, b| (a & b) | true);
}
