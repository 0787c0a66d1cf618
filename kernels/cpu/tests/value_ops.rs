//! Every `Value` method, for every element: SIMD lanes vs one lane (bit-identical) vs a
//! `std` reference (exact, or within a stated ulp bound for float transcendentals).
//!
//! Bounds asserted (f32 transcendentals compute in f32 lanes, pow through f64):
//! - f32: exp, exp2, ln, log2, sin, cos, tanh ≤ 2 ulp (1 ulp observed; the random
//!   property test and the tanh sweep assert 1); pow ≤ 1 ulp;
//! - f64: exp, exp2, ln ≤ 1 ulp; log2, sin, cos, tanh ≤ 2 ulp; pow exact (std per lane);
//! - everything else exact; special values (NaN, ±inf, ±0, overflow, underflow) exact.

#![allow(clippy::excessive_precision, clippy::approx_constant, clippy::float_cmp)]

mod value_common;

use proptest::prelude::*;
use tensor_kernels_cpu::map::MapBody;
use tensor_kernels_cpu::value::{Lane, Value};
use value_common::{check, check_pred, inputs, TestElem};

body!(AddB, |a, b| a + b);
body!(SubB, |a, b| a - b);
body!(MulB, |a, b| a * b);
body!(DivB, |a, b| a / b);
body!(NegB, |x| -x);
body!(AbsB, |x| x.abs());
body!(MaxB, |a, b| a.max(b));
body!(MinB, |a, b| a.min(b));
body!(PowB, |a, b| a.pow(b));
body!(ExpB, |x| x.exp());
body!(Exp2B, |x| x.exp2());
body!(LnB, |x| x.ln());
body!(Log2B, |x| x.log2());
body!(SqrtB, |x| x.sqrt());
body!(TanhB, |x| x.tanh());
body!(SinB, |x| x.sin());
body!(CosB, |x| x.cos());
body!(RecipB, |x| x.recip());
body!(FloorB, |x| x.floor());
body!(CeilB, |x| x.ceil());
body!(RoundB, |x| x.round());
body!(SelB, |a, b| V::select(a.lt(b), a, b));
body!(MaskB, |a, b| V::select((a.le(b) & !a.eq(V::zero())) | b.ge(V::one()), a - b, a + b));
body!(ConstB, |x| x * V::from_f64(2.5) + V::from_f32(-1.0) - V::from_i64(3) + V::from_bool(true));
pred!(EqP, |a, b| a.eq(b));
pred!(NeP, |a, b| a.ne(b));
pred!(LtP, |a, b| a.lt(b));
pred!(LeP, |a, b| a.le(b));
pred!(GtP, |a, b| a.gt(b));
pred!(GeP, |a, b| a.ge(b));
pred!(MixP, |a, b| (a.lt(b) | a.eq(V::zero())) & !b.eq(V::one()));

/// Comparisons, select and mask algebra (exact), for any element.
fn check_compare<E: TestElem>(seed: u64) {
    let ins = inputs::<E, 2>(seed, 4000);
    check_pred("eq", &EqP, &ins, |[a, b]| a == b);
    check_pred("ne", &NeP, &ins, |[a, b]| a != b);
    check_pred("lt", &LtP, &ins, |[a, b]| a < b);
    check_pred("le", &LeP, &ins, |[a, b]| a <= b);
    check_pred("gt", &GtP, &ins, |[a, b]| a > b);
    check_pred("ge", &GeP, &ins, |[a, b]| a >= b);
    check_pred("mix", &MixP, &ins, |[a, b]| (a < b || a == E::ZERO) && b != E::ONE);
    check("select", &SelB, &ins, |[a, b]| if a < b { a } else { b }, 0);
}

fn rpow_signed(x: i64, e: i64, wp: impl Fn(u32) -> i64) -> i64 {
    if e < 0 {
        match x {
            1 => 1,
            -1 => {
                if e % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        }
    } else {
        wp(e as u32)
    }
}

macro_rules! int_tests {
    ($name:ident, $t:ident, $signed:expr) => {
        #[test]
        fn $name() {
            check_compare::<$t>(1);
            let ins = inputs::<$t, 2>(2, 4000);
            check("add", &AddB, &ins, |[a, b]| a.wrapping_add(b), 0);
            check("sub", &SubB, &ins, |[a, b]| a.wrapping_sub(b), 0);
            check("mul", &MulB, &ins, |[a, b]| a.wrapping_mul(b), 0);
            check("div", &DivB, &ins, |[a, b]| if b == 0 { 0 } else { a.wrapping_div(b) }, 0);
            check("max", &MaxB, &ins, |[a, b]| a.max(b), 0);
            check("min", &MinB, &ins, |[a, b]| a.min(b), 0);
            check(
                "mask",
                &MaskB,
                &ins,
                |[a, b]| {
                    if (a <= b && a != 0) || b >= 1 {
                        a.wrapping_sub(b)
                    } else {
                        a.wrapping_add(b)
                    }
                },
                0,
            );
            // pow: exponents in a range `wrapping_pow` can take, plus negatives.
            let mut pins = ins.clone();
            for (j, e) in pins[1].iter_mut().enumerate() {
                *e = ((j % 90) as i64 - if $signed { 20 } else { 0 }) as $t;
            }
            check("pow", &PowB, &pins, |[a, b]| rpow_signed(a as i64, b as i64, |e| a.wrapping_pow(e) as i64) as $t, 0);
            let ins = inputs::<$t, 1>(3, 4000);
            check("neg", &NegB, &ins, |[x]| x.wrapping_neg(), 0);
            check("abs", &AbsB, &ins, |[x]| if $signed { (x as i64).wrapping_abs() as $t } else { x }, 0);
            check("floor", &FloorB, &ins, |[x]| x, 0);
            check("ceil", &CeilB, &ins, |[x]| x, 0);
            check("round", &RoundB, &ins, |[x]| x, 0);
            check(
                "const",
                &ConstB,
                &ins,
                |[x]| x.wrapping_mul(2.5f64 as $t).wrapping_add(-1.0f32 as $t).wrapping_sub(3).wrapping_add(1),
                0,
            );
            let f = |g: fn(f64) -> f64| move |[x]: [$t; 1]| g(x as f64) as $t;
            check("exp", &ExpB, &ins, f(f64::exp), 0);
            check("exp2", &Exp2B, &ins, f(f64::exp2), 0);
            check("ln", &LnB, &ins, f(f64::ln), 0);
            check("log2", &Log2B, &ins, f(f64::log2), 0);
            check("sqrt", &SqrtB, &ins, f(f64::sqrt), 0);
            check("tanh", &TanhB, &ins, f(f64::tanh), 0);
            check("sin", &SinB, &ins, f(f64::sin), 0);
            check("cos", &CosB, &ins, f(f64::cos), 0);
            check("recip", &RecipB, &ins, f(f64::recip), 0);
        }
    };
}

int_tests!(u8_ops, u8, false);
int_tests!(i8_ops, i8, true);
int_tests!(i16_ops, i16, true);
int_tests!(i32_ops, i32, true);
int_tests!(i64_ops, i64, true);

#[test]
fn bool_ops() {
    check_compare::<bool>(4);
    let ins = inputs::<bool, 2>(5, 1000);
    check("add", &AddB, &ins, |[a, b]| a | b, 0);
    check("sub", &SubB, &ins, |[a, b]| a ^ b, 0);
    check("mul", &MulB, &ins, |[a, b]| a & b, 0);
    check("div", &DivB, &ins, |[a, b]| a & b, 0);
    check("max", &MaxB, &ins, |[a, b]| a | b, 0);
    check("min", &MinB, &ins, |[a, b]| a & b, 0);
    check("pow", &PowB, &ins, |[a, b]| a | !b, 0);
    let ins = inputs::<bool, 1>(6, 1000);
    check("neg", &NegB, &ins, |[x]| x, 0);
    check("abs", &AbsB, &ins, |[x]| x, 0);
    let f = |g: fn(f64) -> f64| move |[x]: [bool; 1]| g(x as u8 as f64) != 0.0;
    check("exp", &ExpB, &ins, f(f64::exp), 0);
    check("ln", &LnB, &ins, f(f64::ln), 0);
    check("log2", &Log2B, &ins, f(f64::log2), 0);
    check("sqrt", &SqrtB, &ins, f(f64::sqrt), 0);
    check("cos", &CosB, &ins, f(f64::cos), 0);
    check("recip", &RecipB, &ins, f(f64::recip), 0);
    check("round", &RoundB, &ins, |[x]| x, 0);
}

macro_rules! float_tests {
    ($name:ident, $t:ident, $tol:expr) => {
        #[test]
        fn $name() {
            let [t_exp, t_exp2, t_ln, t_log2, t_sin, t_cos, t_tanh, t_pow]: [u64; 8] = $tol;
            check_compare::<$t>(7);
            let ins = inputs::<$t, 2>(8, 20000);
            check("add", &AddB, &ins, |[a, b]| a + b, 0);
            check("sub", &SubB, &ins, |[a, b]| a - b, 0);
            check("mul", &MulB, &ins, |[a, b]| a * b, 0);
            check("div", &DivB, &ins, |[a, b]| a / b, 0);
            check(
                "max",
                &MaxB,
                &ins,
                |[a, b]| {
                    if a.is_nan() || b.is_nan() {
                        $t::NAN
                    } else if a == b && a == 0.0 {
                        if a.is_sign_positive() || b.is_sign_positive() {
                            0.0
                        } else {
                            -0.0
                        }
                    } else {
                        a.max(b)
                    }
                },
                0,
            );
            check(
                "min",
                &MinB,
                &ins,
                |[a, b]| {
                    if a.is_nan() || b.is_nan() {
                        $t::NAN
                    } else if a == b && a == 0.0 {
                        if a.is_sign_negative() || b.is_sign_negative() {
                            -0.0
                        } else {
                            0.0
                        }
                    } else {
                        a.min(b)
                    }
                },
                0,
            );
            check(
                "mask",
                &MaskB,
                &ins,
                |[a, b]| {
                    if (a <= b && a != 0.0) || b >= 1.0 {
                        a - b
                    } else {
                        a + b
                    }
                },
                0,
            );
            let w = check("pow", &PowB, &ins, |[a, b]| a.powf(b), t_pow);
            eprintln!("{} pow: max {w} ulp", stringify!($t));
            // pow on meaningful ranges: x in (0, 20), y in (-30, 30); negative x with
            // integer y.
            let mut r = value_common::Rng(9);
            let n = 20000;
            let xs: Vec<$t> = (0..n)
                .map(|j| {
                    let x = r.f64_in(0.0, 20.0) as $t;
                    if j % 3 == 0 {
                        -x
                    } else {
                        x
                    }
                })
                .collect();
            let ys: Vec<$t> = (0..n)
                .map(|j| {
                    let y = r.f64_in(-30.0, 30.0) as $t;
                    if j % 3 == 0 {
                        y.round()
                    } else {
                        y
                    }
                })
                .collect();
            let w = check("pow", &PowB, &[xs, ys], |[a, b]| a.powf(b), t_pow);
            eprintln!("{} pow (ranges): max {w} ulp", stringify!($t));

            let ins = inputs::<$t, 1>(10, 200_000);
            check("neg", &NegB, &ins, |[x]| -x, 0);
            check("abs", &AbsB, &ins, |[x]| x.abs(), 0);
            check("sqrt", &SqrtB, &ins, |[x]| x.sqrt(), 0);
            check("recip", &RecipB, &ins, |[x]| 1.0 / x, 0);
            check("floor", &FloorB, &ins, |[x]| x.floor(), 0);
            check("ceil", &CeilB, &ins, |[x]| x.ceil(), 0);
            check("round", &RoundB, &ins, |[x]| x.round(), 0);
            check("const", &ConstB, &ins, |[x]| x * 2.5 + -1.0 - 3.0 + 1.0, 0);
            for (name, w) in [
                ("exp", check("exp", &ExpB, &ins, |[x]| (x as f64).exp() as $t, t_exp)),
                ("exp2", check("exp2", &Exp2B, &ins, |[x]| (x as f64).exp2() as $t, t_exp2)),
                ("ln", check("ln", &LnB, &ins, |[x]| (x as f64).ln() as $t, t_ln)),
                ("log2", check("log2", &Log2B, &ins, |[x]| (x as f64).log2() as $t, t_log2)),
                ("sin", check("sin", &SinB, &ins, |[x]| (x as f64).sin() as $t, t_sin)),
                ("cos", check("cos", &CosB, &ins, |[x]| (x as f64).cos() as $t, t_cos)),
                ("tanh", check("tanh", &TanhB, &ins, |[x]| (x as f64).tanh() as $t, t_tanh)),
            ] {
                eprintln!("{} {name}: max {w} ulp", stringify!($t));
            }
            // Against `std` at this precision (std's own f32 functions are not always
            // correctly rounded: f32 tanh is off by up to 2 ulp).
            for (name, w) in [
                ("exp", check("exp", &ExpB, &ins, |[x]| x.exp(), t_exp + 1)),
                ("ln", check("ln", &LnB, &ins, |[x]| x.ln(), t_ln + 1)),
                ("sin", check("sin", &SinB, &ins, |[x]| x.sin(), t_sin + 1)),
                ("cos", check("cos", &CosB, &ins, |[x]| x.cos(), t_cos + 1)),
                ("tanh", check("tanh", &TanhB, &ins, |[x]| x.tanh(), t_tanh + 1)),
            ] {
                eprintln!("{} {name} vs std at this precision: max {w} ulp", stringify!($t));
            }
            // Positive arguments over the whole exponent range for the logs.
            let pos: Vec<$t> = ins[0].iter().map(|x| x.abs()).collect();
            let pos = [pos];
            check("ln+", &LnB, &pos, |[x]| (x as f64).ln() as $t, t_ln);
            check("log2+", &Log2B, &pos, |[x]| (x as f64).log2() as $t, t_log2);
        }
    };
}

/// f32 sin/cos where the reduced argument is smallest: the f32 neighbours of `k pi/2` for
/// every `k` up to the vector reduction's limit (2^18), and a few beyond it.
#[test]
fn f32_trig_near_multiples_of_half_pi() {
    let mut xs = Vec::new();
    for k in 1..170_000u32 {
        let x = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        let b = x.to_bits();
        xs.extend([f32::from_bits(b - 1), x, f32::from_bits(b + 1)]);
        if k % 7 == 0 {
            xs.push(-x);
        }
    }
    xs.extend([3.0e5f32, -1.0e6, 1.0e7, 3.4e38, f32::MAX, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let ins = [xs];
    let ws = check("sin", &SinB, &ins, |[x]| (x as f64).sin() as f32, 2);
    let wc = check("cos", &CosB, &ins, |[x]| (x as f64).cos() as f32, 2);
    eprintln!("f32 sin/cos near k pi/2: max {ws} / {wc} ulp");
}

float_tests!(f32_ops, f32, [2, 2, 2, 2, 2, 2, 2, 1]);
float_tests!(f64_ops, f64, [1, 1, 1, 2, 2, 2, 3, 0]);

#[test]
fn documented_semantics() {
    assert_eq!((Lane(i32::MAX) + Lane(1)).0, i32::MIN);
    assert_eq!((Lane(i32::MIN) / Lane(-1)).0, i32::MIN);
    assert_eq!((Lane(5i64) / Lane(0)).0, 0);
    assert_eq!(Lane(i8::MIN).abs().0, i8::MIN);
    assert_eq!(Lane(2i32).pow(Lane(-1)).0, 0);
    assert_eq!(Lane(-1i32).pow(Lane(-3)).0, -1);
    assert_eq!(Lane(0i32).pow(Lane(-2)).0, 0);
    assert_eq!(Lane(3u8).pow(Lane(5)).0, 243);
    assert_eq!(Lane(2i64).pow(Lane(i64::MAX)).0, 0);
    assert_eq!(Lane(-0.5f32).round().0, -1.0);
    assert_eq!(Lane(0.49999997f32).round().0, 0.0);
    assert!(Lane(f32::NAN).max(Lane(1.0)).0.is_nan());
    assert!(Lane(1.0f64).min(Lane(f64::NAN)).0.is_nan());
    assert_eq!(Lane(f64::MAX).pow(Lane(2.0)).0, f64::INFINITY);
    assert_eq!(Lane(-8.0f32).pow(Lane(3.0)).0, -512.0);
    assert!(Lane(-8.0f32).pow(Lane(1.0 / 3.0)).0.is_nan());
    assert_eq!(Lane(1.0f32).pow(Lane(f32::NAN)).0, 1.0);
    assert_eq!(Lane(f32::NAN).pow(Lane(0.0)).0, 1.0);
    assert!(Lane(true).exp().0);
    assert!(!Lane(true).ln().0);
    assert_eq!(<Lane<f32> as Value>::from_i64(-3).0, -3.0);
    assert_eq!(<Lane<u8> as Value>::from_f64(300.0).0, 255);
}

proptest! {
    #[test]
    fn prop_i32_arith(a in any::<i32>(), b in any::<i32>()) {
        let ins = [vec![a; 9], vec![b; 9]];
        check("add", &AddB, &ins, |[a, b]| a.wrapping_add(b), 0);
        check("mul", &MulB, &ins, |[a, b]| a.wrapping_mul(b), 0);
        check("div", &DivB, &ins, |[a, b]| if b == 0 { 0 } else { a.wrapping_div(b) }, 0);
    }

    #[test]
    fn prop_f32_exp_ln(x in any::<f32>()) {
        let ins = [vec![x; 9]];
        check("exp", &ExpB, &ins, |[x]| x.exp(), 1);
        check("ln", &LnB, &ins, |[x]| x.ln(), 1);
        check("sin", &SinB, &ins, |[x]| x.sin(), 1);
        check("tanh", &TanhB, &ins, |[x]| (x as f64).tanh() as f32, 1);
    }

    #[test]
    fn prop_f64_exp_ln(x in any::<f64>()) {
        let ins = [vec![x; 5]];
        check("exp", &ExpB, &ins, |[x]| x.exp(), 1);
        check("ln", &LnB, &ins, |[x]| x.ln(), 1);
        check("cos", &CosB, &ins, |[x]| x.cos(), 2);
    }
}

/// The worst ulp distance of a one-input f32 function from `reference` (in f64, rounded)
/// over every 61st bit pattern from 2^-30 to `hi`, both signs; asserts at most 1.
fn sweep(name: &str, body: &impl MapBody<1>, hi: f32, reference: fn(f64) -> f64) -> u64 {
    let (lo, hi) = ((2f32).powi(-30).to_bits(), hi.to_bits());
    let xs: Vec<f32> = (lo..hi).step_by(61).map(f32::from_bits).flat_map(|x| [x, -x]).collect();
    check(name, body, &[xs], |[x]| reference(x as f64) as f32, 1)
}

/// A sweep of f32 `exp` (written with `mul_add`) up to 104 (about 700 000 inputs: overflow,
/// underflow to subnormals and 0): within 1 ulp of the correctly rounded result everywhere
/// (the whole f32 range was checked once, outside the tests: at most 1 ulp, every SIMD level
/// the same bits).
#[test]
fn f32_exp_sweep() {
    println!("f32 exp sweep: worst {} ulp", sweep("exp", &ExpB, 104.0, f64::exp));
}

/// Asserts that `fast` and `reference` give the same bits (or both NaN) on every input,
/// taken 16 lanes at a time (a short last chunk padded with its last input).
fn same_f32_bits(
    what: &str,
    xs: &[f32],
    fast: impl Fn(tensor_kernels_cpu::value::F32x16) -> tensor_kernels_cpu::value::F32x16,
    reference: impl Fn(tensor_kernels_cpu::value::F32x16) -> tensor_kernels_cpu::value::F32x16,
) {
    use tensor_kernels_cpu::value::F32x16;
    for c in xs.chunks(16) {
        let mut lanes = [c[c.len() - 1]; 16];
        lanes[..c.len()].copy_from_slice(c);
        let (mut got, mut want) = ([0f32; 16], [0f32; 16]);
        fast(F32x16::load(&lanes)).store(&mut got);
        reference(F32x16::load(&lanes)).store(&mut want);
        for k in 0..16 {
            assert!(
                got[k].to_bits() == want[k].to_bits() || (got[k].is_nan() && want[k].is_nan()),
                "{what} of {}: {:e} vs {:e}",
                lanes[k],
                got[k],
                want[k]
            );
        }
    }
}

/// `exp_nonpositive` (softmax's e^(x − max)) gives `exp`'s bits for every `x <= 0` of a
/// sweep down to −110 (subnormal results and 0 included), −0, −inf and NaN; a positive
/// input is taken as 0.
#[test]
fn f32_exp_nonpositive_is_exp_below_zero() {
    use tensor_kernels_cpu::value::F32x16;
    let mut xs: Vec<f32> =
        ((2f32).powi(-30).to_bits()..110f32.to_bits()).step_by(61).map(|b| -f32::from_bits(b)).collect();
    xs.extend([0.0, -0.0, f32::NEG_INFINITY, f32::NAN, -f32::MIN_POSITIVE, -87.33655, -103.97208, -104.0]);
    same_f32_bits("e^x, x <= 0", &xs, |x| x.exp_nonpositive(), |x| x.exp());
    let mut ones = [0f32; 16];
    F32x16::splat(3.5).exp_nonpositive().store(&mut ones);
    assert_eq!(ones, [1.0; 16]);
    let mut one = [0f64; 4];
    tensor_kernels_cpu::value::F64x4::splat(2.0).exp_nonpositive().store(&mut one);
    assert_eq!(one, [1.0; 4]);
}

/// A sweep of f32 `tanh` up to 12 (about 400 000 inputs): within 1 ulp of the correctly
/// rounded result everywhere.
#[test]
fn f32_tanh_sweep() {
    println!("f32 tanh sweep: worst {} ulp", sweep("tanh", &TanhB, 12.0, f64::tanh));
}

/// `sigmoid` on f32 lanes (its cheaper scaling of e^-x) has the bits of `1 / (1 + e^-x)`
/// written with `exp`, over a sweep of both signs (subnormal to 2^30 in magnitude), the
/// edges of its shortcuts (|x| near 20 and 88.4–88.8, where e^-x turns from finite to inf)
/// and ±0, ±inf, NaN; f64 lanes keep the written expression.
#[test]
fn f32_sigmoid_is_the_written_expression() {
    use tensor_kernels_cpu::value::{F32x16, F64x4};
    let mut xs: Vec<f32> = (1u32..(2f32).powi(30).to_bits()).step_by(211).map(f32::from_bits).collect();
    let edges = [0.0, f32::INFINITY, f32::NAN, f32::MIN_POSITIVE, 16.0, 17.5, 19.99, 20.0, 20.01, 87.3, 88.37, 88.38];
    xs.extend(edges);
    xs.extend([88.4f32, 88.5, 88.7, 88.72, 88.73, 88.79, 88.8, 88.81, 89.0, 103.9, 104.0, 110.0]);
    xs.extend((0..4000).map(|i| 88.0 + i as f32 * 2e-4));
    let negated: Vec<f32> = xs.iter().map(|x| -x).collect();
    xs.extend(negated);
    same_f32_bits("sigmoid", &xs, |x| x.sigmoid(), |x| F32x16::one() / (F32x16::one() + (-x).exp()));
    for x in [-800.0, -30.0, -0.5, 0.0, 0.25, 40.0, 750.0] {
        let (mut got, mut want) = ([0f64; 4], [0f64; 4]);
        let v = F64x4::splat(x);
        v.sigmoid().store(&mut got);
        (F64x4::one() / (F64x4::one() + (-v).exp())).store(&mut want);
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "f64 sigmoid({x})");
    }
}
