//! `map_block` / `pred_block` over every length 0..100 (vector body + scalar tail), with
//! poisoned outputs, separate and in-place (`out` == first input).

#![allow(clippy::excessive_precision, clippy::approx_constant, clippy::unnecessary_cast)]

mod value_common;

use tensor_kernels_cpu::map::{map_block, pred_block};
use tensor_kernels_cpu::value::{SimdElement, Value};
use value_common::{Rng, TestElem};

body!(Fma, |a, b| a * b + V::one());
pred!(Less, |a, b| a.lt(b) | a.eq(V::zero()));

fn run<E: TestElem>(seed: u64, poison: E, fma: impl Fn(E, E) -> E) {
    let mut r = Rng(seed);
    for n in 0..100 {
        let a: Vec<E> = (0..n).map(|_| E::random(&mut r)).collect();
        let b: Vec<E> = (0..n).map(|_| E::random(&mut r)).collect();
        let want: Vec<E> = a.iter().zip(&b).map(|(&x, &y)| fma(x, y)).collect();

        let mut out = vec![poison; n + 8];
        // SAFETY: `out` holds n + 8 elements, `a` and `b` hold n.
        unsafe { map_block::<E, 2, _>(out.as_mut_ptr() as *mut u8, &[a.as_ptr() as _, b.as_ptr() as _], n, &Fma) };
        for i in 0..n {
            assert!(E::same(out[i], want[i]), "n={n} i={i}: {:?} vs {:?}", out[i], want[i]);
        }
        assert!(out[n..].iter().all(|&p| E::same(p, poison)), "n={n}: wrote past the end");

        // In place into the first input.
        let mut io = a.clone();
        io.extend([poison; 8]);
        let p = io.as_mut_ptr();
        // SAFETY: `io` holds n + 8 elements; out == input 0 is allowed.
        unsafe { map_block::<E, 2, _>(p as *mut u8, &[p as *const u8, b.as_ptr() as _], n, &Fma) };
        for i in 0..n {
            assert!(E::same(io[i], want[i]), "in place n={n} i={i}");
        }
        assert!(io[n..].iter().all(|&q| E::same(q, poison)));

        let mut bools = vec![true; n + 8];
        bools[n..].iter_mut().for_each(|x| *x = false);
        // SAFETY: `bools` holds n + 8 elements, `a` and `b` hold n.
        unsafe { pred_block::<E, 2, _>(bools.as_mut_ptr() as *mut u8, &[a.as_ptr() as _, b.as_ptr() as _], n, &Less) };
        for i in 0..n {
            assert_eq!(bools[i], a[i] < b[i] || a[i] == E::ZERO, "pred n={n} i={i}");
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
