//! Shared helpers of the `value_*` tests: bodies, evaluation on lanes and on one lane,
//! comparison against references.

#![allow(dead_code, clippy::excessive_precision, clippy::approx_constant, clippy::unnecessary_cast)]

use tensor_kernels_cpu::map::{MapBody, PredBody};
use tensor_kernels_cpu::value::{Lanes, Mask, SimdElement, Value};

/// Defines a unit struct implementing `MapBody<N>` with the given body.
#[macro_export]
macro_rules! body {
    ($name:ident, |$x:ident| $e:expr) => {
        struct $name;
        impl tensor_kernels_cpu::map::MapBody<1> for $name {
            #[allow(unused_imports)]
            fn call<V: Value>(&self, [$x]: [V; 1]) -> V {
                $e
            }
        }
    };
    ($name:ident, |$a:ident, $b:ident| $e:expr) => {
        struct $name;
        impl tensor_kernels_cpu::map::MapBody<2> for $name {
            fn call<V: Value>(&self, [$a, $b]: [V; 2]) -> V {
                $e
            }
        }
    };
}

/// Defines a unit struct implementing `PredBody<2>`.
#[macro_export]
macro_rules! pred {
    ($name:ident, |$a:ident, $b:ident| $e:expr) => {
        struct $name;
        impl tensor_kernels_cpu::map::PredBody<2> for $name {
            fn call<V: Value>(&self, [$a, $b]: [V; 2]) -> V::Mask {
                $e
            }
        }
    };
}

/// Deterministic splitmix64.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    pub fn f64_in(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Element-specific test support.
pub trait TestElem: SimdElement {
    /// Equal bits, or both NaN.
    fn same(a: Self, b: Self) -> bool;
    /// Distance in ulps for finite floats (`None` for non-floats or non-finite values).
    fn ulps(a: Self, b: Self) -> Option<u64>;
    fn specials() -> Vec<Self>;
    fn random(r: &mut Rng) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => { $(
        impl TestElem for $t {
            fn same(a: Self, b: Self) -> bool { a == b }
            fn ulps(_: Self, _: Self) -> Option<u64> { None }
            fn specials() -> Vec<Self> {
                let mut v: Vec<$t> = vec![0, 1, 2, 3, 7, 10, <$t>::MAX, <$t>::MIN, <$t>::MAX - 1, <$t>::MIN.wrapping_add(1)];
                v.extend([(0 as $t).wrapping_sub(1), (0 as $t).wrapping_sub(2), (0 as $t).wrapping_sub(7)]);
                v
            }
            fn random(r: &mut Rng) -> Self {
                match r.next() % 4 {
                    0 => ((r.next() % 21) as $t).wrapping_sub(10),
                    _ => r.next() as $t,
                }
            }
        }
    )* };
}
int_elem!(u8, i8, i16, i32, i64);

impl TestElem for bool {
    fn same(a: Self, b: Self) -> bool {
        a == b
    }
    fn ulps(_: Self, _: Self) -> Option<u64> {
        None
    }
    fn specials() -> Vec<Self> {
        vec![false, true]
    }
    fn random(r: &mut Rng) -> Self {
        r.next() & 1 != 0
    }
}

macro_rules! float_elem {
    ($t:ident, $i:ident, $bits:ident, $extra:expr) => {
        impl TestElem for $t {
            fn same(a: Self, b: Self) -> bool {
                (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
            }
            fn ulps(a: Self, b: Self) -> Option<u64> {
                if !a.is_finite() || !b.is_finite() {
                    return None;
                }
                let o = |x: $t| {
                    let i = x.to_bits() as $i;
                    (if i < 0 { $i::MIN.wrapping_sub(i) } else { i }) as i128
                };
                Some((o(a) - o(b)).unsigned_abs() as u64)
            }
            fn specials() -> Vec<Self> {
                let mut v: Vec<$t> = vec![
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    -0.5,
                    1.5,
                    -1.5,
                    2.5,
                    -2.5,
                    2.0,
                    -2.0,
                    3.0,
                    -3.0,
                    0.1,
                    -0.1,
                    10.0,
                    -10.0,
                    100.0,
                    -100.0,
                    1e6,
                    -1e6,
                    1e7,
                    1e10,
                    -1e10,
                    1e30,
                    -1e30,
                    $t::INFINITY,
                    $t::NEG_INFINITY,
                    $t::NAN,
                    $t::MIN_POSITIVE,
                    -$t::MIN_POSITIVE,
                    $t::from_bits(1),
                    -$t::from_bits(1),
                    $t::MAX,
                    $t::MIN,
                    $t::EPSILON,
                    (0.5 as $t).next_down(),
                    (-0.5 as $t).next_up(),
                    (1.5 as $t).next_down(),
                    88.72,
                    88.73,
                    -87.3,
                    -103.9,
                    -104.0,
                    127.9,
                    128.0,
                    -149.0,
                    -150.0,
                    -126.0,
                    709.78,
                    709.79,
                    710.0,
                    -708.4,
                    -745.1,
                    -745.2,
                    1023.9,
                    1024.0,
                    -1074.0,
                    -1075.0,
                    -1076.0,
                    0.55,
                    0.549,
                    0.3466,
                    9.0,
                    20.0,
                    22.0,
                    -22.0,
                    0.75,
                    1e-5,
                    -1e-5,
                    1e-20,
                    3.141592653589793,
                    1.5707963267948966,
                    -3.141592653589793,
                    4.71238898038469,
                    0.7853981633974483,
                    355.0,
                    1e-30,
                    0.9999999,
                    1.0000001,
                ];
                v.extend($extra);
                v
            }
            fn random(r: &mut Rng) -> Self {
                match r.next() % 8 {
                    0 => $t::from_bits(r.next() as $bits),
                    1 => r.f64_in(-1.0, 1.0) as $t,
                    2 => r.f64_in(-10.0, 10.0) as $t,
                    3 => r.f64_in(-100.0, 100.0) as $t,
                    4 => r.f64_in(-1000.0, 1000.0) as $t,
                    5 => (r.f64_in(-10.0, 10.0) as $t).round() + 0.5,
                    6 => r.f64_in(-1e6, 1e6) as $t,
                    _ => (r.f64_in(-30.0, 30.0).exp() as $t),
                }
            }
        }
    };
}
float_elem!(f32, i32, u32, [8_388_609.0f32, 8_388_607.5, -8_388_607.5, 16_777_217.0]);
float_elem!(f64, i64, u64, [4_503_599_627_370_497.0f64, 4_503_599_627_370_495.5, -4_503_599_627_370_495.5]);

/// A test input set: specials (all pairs for binary ops) then `n` random values.
pub fn inputs<E: TestElem, const N: usize>(seed: u64, n: usize) -> [Vec<E>; N] {
    let sp = E::specials();
    let mut r = Rng(seed);
    let mut out: [Vec<E>; N] = std::array::from_fn(|_| Vec::new());
    if N == 1 {
        out[0].extend(sp.iter().copied());
    } else {
        for &a in &sp {
            for &b in &sp {
                out[0].push(a);
                out[1].push(b);
                for v in out.iter_mut().skip(2) {
                    v.push(a);
                }
            }
        }
    }
    for _ in 0..n {
        for v in out.iter_mut() {
            v.push(E::random(&mut r));
        }
    }
    // Mixed lanes: random values among specials.
    for v in out.iter_mut() {
        let len = v.len();
        for j in 0..len / 16 {
            let k = (r.next() as usize) % len;
            v.swap(j * 16, k);
        }
    }
    out
}

/// Evaluates `b` on SIMD lanes (padding the last vector) and on one lane per element.
pub fn eval<E: SimdElement, const N: usize, B: MapBody<N>>(b: &B, ins: &[Vec<E>; N]) -> (Vec<E>, Vec<E>) {
    let n = ins[0].len();
    let l = <Lanes<E> as Value>::LANES;
    let mut lanes = vec![E::ZERO; n];
    let mut i = 0;
    while i < n {
        let m = l.min(n - i);
        let args: [Lanes<E>; N] = std::array::from_fn(|k| {
            let mut buf = vec![E::ONE; l];
            buf[..m].copy_from_slice(&ins[k][i..i + m]);
            <Lanes<E> as Value>::load(&buf)
        });
        let mut o = vec![E::ZERO; l];
        b.call(args).store(&mut o);
        lanes[i..i + m].copy_from_slice(&o[..m]);
        i += l;
    }
    let scalar = (0..n)
        .map(|j| {
            let args: [E::One; N] = std::array::from_fn(|k| <E::One as Value>::splat(ins[k][j]));
            let mut o = [E::ZERO];
            b.call(args).store(&mut o);
            o[0]
        })
        .collect();
    (lanes, scalar)
}

/// [`eval`] for predicates.
pub fn eval_pred<E: SimdElement, const N: usize, B: PredBody<N>>(b: &B, ins: &[Vec<E>; N]) -> (Vec<bool>, Vec<bool>) {
    let n = ins[0].len();
    let l = <Lanes<E> as Value>::LANES;
    let mut lanes = vec![false; n];
    let mut i = 0;
    while i < n {
        let m = l.min(n - i);
        let args: [Lanes<E>; N] = std::array::from_fn(|k| {
            let mut buf = vec![E::ONE; l];
            buf[..m].copy_from_slice(&ins[k][i..i + m]);
            <Lanes<E> as Value>::load(&buf)
        });
        let mut o = vec![false; l];
        b.call(args).write_bools(&mut o);
        lanes[i..i + m].copy_from_slice(&o[..m]);
        i += l;
    }
    let scalar = (0..n)
        .map(|j| {
            let args: [E::One; N] = std::array::from_fn(|k| <E::One as Value>::splat(ins[k][j]));
            let mut o = [false];
            b.call(args).write_bools(&mut o);
            o[0]
        })
        .collect();
    (lanes, scalar)
}

/// Checks lanes == one lane bit for bit, and one lane against `reference` (exactly, or
/// within `tol` ulps for finite float results). Returns the largest ulp error seen.
pub fn check<E: TestElem, const N: usize, B: MapBody<N>>(
    name: &str,
    b: &B,
    ins: &[Vec<E>; N],
    reference: impl Fn([E; N]) -> E,
    tol: u64,
) -> u64 {
    let (lanes, scalar) = eval(b, ins);
    let mut worst = 0;
    for j in 0..lanes.len() {
        let args: [E; N] = std::array::from_fn(|k| ins[k][j]);
        assert!(E::same(lanes[j], scalar[j]), "{name}{args:?}: lanes {:?} != scalar {:?}", lanes[j], scalar[j]);
        let r = reference(args);
        if E::same(scalar[j], r) {
            continue;
        }
        match E::ulps(scalar[j], r) {
            Some(u) if u <= tol && r != E::ZERO => worst = worst.max(u),
            _ => panic!("{name}{args:?}: got {:?}, std {:?}", scalar[j], r),
        }
    }
    worst
}

/// Like [`check`] for predicates (always exact).
pub fn check_pred<E: TestElem, const N: usize, B: PredBody<N>>(
    name: &str,
    b: &B,
    ins: &[Vec<E>; N],
    reference: impl Fn([E; N]) -> bool,
) {
    let (lanes, scalar) = eval_pred(b, ins);
    for j in 0..lanes.len() {
        let args: [E; N] = std::array::from_fn(|k| ins[k][j]);
        assert_eq!(lanes[j], scalar[j], "{name}{args:?}: lanes vs scalar");
        assert_eq!(scalar[j], reference(args), "{name}{args:?}: vs reference");
    }
}
