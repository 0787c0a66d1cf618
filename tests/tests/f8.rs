//! The 8-bit float dtypes (issue 35) through the public API on the CPU: casts of every bit
//! pattern to and from every dtype against the scalar model (`F8E4M3`/`F8E5M2` in
//! tensor-core, itself checked against the nearest-value model and PyTorch's results), the
//! promotion rule, maps and reductions against an f64 reference rounded once, a user op
//! listing `float`, fused chains bit for bit with the eager chain, and safetensors files.

mod common;

use common::{bits, gen_values, input, make, values, Lay, LAYOUTS, V};
use half::{bf16, f16};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;
use tensor_ops::{F8E4M3, F8E5M2};

const F8: [DType; 2] = [DType::F8E4M3, DType::F8E5M2];

/// The f8 value of `bits` as f64 (exact).
fn decode(d: DType, b: u8) -> f64 {
    if d == DType::F8E4M3 {
        F8E4M3::from_bits(b).to_f64()
    } else {
        F8E5M2::from_bits(b).to_f64()
    }
}

/// The f8 bits `x` rounds to (one rounding from f64).
fn encode(d: DType, x: f64) -> u8 {
    if d == DType::F8E4M3 {
        F8E4M3::from_f64(x).to_bits()
    } else {
        F8E5M2::from_f64(x).to_bits()
    }
}

fn f8_tensor(d: DType, b: &[u8]) -> Tensor {
    if d == DType::F8E4M3 {
        Tensor::from_vec(b.iter().map(|&x| F8E4M3::from_bits(x)).collect::<Vec<_>>(), &[b.len()]).unwrap()
    } else {
        Tensor::from_vec(b.iter().map(|&x| F8E5M2::from_bits(x)).collect::<Vec<_>>(), &[b.len()]).unwrap()
    }
}

fn raw_bits(t: &Tensor) -> Vec<u8> {
    bits(t).into_iter().map(|b| b as u8).collect()
}

#[test]
fn every_pattern_casts_to_every_dtype_as_the_scalar_model() {
    let all: Vec<u8> = (0..=255).collect();
    for d in F8 {
        let t = f8_tensor(d, &all);
        for to in DType::ALL {
            let got = values(&t.to_dtype(to).unwrap());
            for (b, g) in all.iter().zip(&got) {
                let x = decode(d, *b);
                let want = match to {
                    DType::Bool => V::B(x != 0.0),
                    // f32 -> integer: truncate, saturate, NaN -> 0 (Rust `as`)
                    DType::U8 => V::I((x as f32) as u8 as i128),
                    DType::I8 => V::I((x as f32) as i8 as i128),
                    DType::I16 => V::I((x as f32) as i16 as i128),
                    DType::I32 => V::I((x as f32) as i32 as i128),
                    DType::I64 => V::I((x as f32) as i64 as i128),
                    DType::F8E4M3 | DType::F8E5M2 => V::F(decode(to, encode(to, x))),
                    DType::F16 => V::F(f16::from_f64(x).to_f64()),
                    DType::BF16 => V::F(bf16::from_f64(x).to_f64()),
                    _ => V::F(x),
                };
                let same = match (g, want) {
                    (V::F(g), V::F(w)) => g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    (g, w) => *g == w,
                };
                assert!(same, "{d} {b:#04x} -> {to}: got {g:?}, want {want:?}");
            }
            if to == d {
                assert_eq!(raw_bits(&t.to_dtype(to).unwrap()), all, "a same-dtype copy keeps every pattern");
            }
        }
    }
}

#[test]
fn every_dtype_casts_to_f8_as_the_scalar_rule() {
    // Values of every source dtype around the f8 rounding boundaries and ranges.
    let mut xs: Vec<f64> =
        vec![0.0, -0.0, 1.0, -1.0, 0.3, 447.9, 448.0, 464.0, 480.0, 1e4, 57344.0, 61439.0, 61440.0, 1e9];
    xs.extend([
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        2f64.powi(-10),
        2f64.powi(-17),
        1.0625,
        1.0625 + 2f64.powi(-30),
    ]);
    for b in 0..=255u8 {
        for d in F8 {
            let v = decode(d, b);
            xs.extend([v, v * 1.03125, v * 0.96875, v * 1.0625, -v]);
        }
    }
    xs.retain(|x| !x.is_nan() || x.is_sign_positive());
    for src in DType::ALL {
        let t = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap().to_dtype(src).unwrap();
        let held: Vec<V> = values(&t);
        for d in F8 {
            let got = raw_bits(&t.to_dtype(d).unwrap());
            for (h, g) in held.iter().zip(&got) {
                let want = match *h {
                    V::B(b) => encode(d, b as u8 as f64),
                    V::I(i) => encode(d, i as f64),
                    V::F(x) => encode(d, x),
                };
                assert_eq!(*g, want, "{src} {h:?} -> {d}");
            }
        }
    }
}

#[test]
fn the_rule_is_pytorchs_saturate_e4m3_overflow_e5m2() {
    let t = Tensor::from_vec(vec![1000.0f32, f32::INFINITY, -1e30, 61440.0, f32::NAN, 0.3], &[6]).unwrap();
    let e4: Vec<f32> = t.to_dtype(DType::F8E4M3).unwrap().to_dtype(DType::F32).unwrap().to_vec().unwrap();
    assert_eq!(&e4[..4], &[448.0, 448.0, -448.0, 448.0]);
    assert!(e4[4].is_nan());
    assert_eq!(e4[5], 0.3125);
    // An f64 source is rounded to f32 first (PyTorch 2.15, ml_dtypes): the tie 1.0625 → 1.0
    // (1.125 in one rounding); for E5M2 61440 − 2^-30 → 61440 → ∞ (57344 in one rounding).
    let wide = Tensor::from_vec(vec![1.0625 + 2f64.powi(-30), 61440.0 - 2f64.powi(-30)], &[2]).unwrap();
    let wide_e4: Vec<f32> = wide.to_dtype(DType::F8E4M3).unwrap().to_dtype(DType::F32).unwrap().to_vec().unwrap();
    assert_eq!(wide_e4[0], 1.0);
    let wide_e5: Vec<f32> = wide.to_dtype(DType::F8E5M2).unwrap().to_dtype(DType::F32).unwrap().to_vec().unwrap();
    assert_eq!(wide_e5[1], f32::INFINITY);
    let e5: Vec<f32> = t.to_dtype(DType::F8E5M2).unwrap().to_dtype(DType::F32).unwrap().to_vec().unwrap();
    assert_eq!(&e5[..4], &[1024.0, f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY]);
    assert_eq!(e5[5], 0.3125);
}

#[test]
fn promotion() {
    use tensor_ops::tensor_core::promote_types;
    for d in F8 {
        assert_eq!(promote_types(d, d), d);
        for i in [DType::Bool, DType::U8, DType::I8, DType::I64] {
            assert_eq!(promote_types(d, i), d, "{d} with {i}");
        }
        for f in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            assert_eq!(promote_types(d, f), f, "{d} with {f}");
        }
    }
    assert_eq!(promote_types(DType::F8E4M3, DType::F8E5M2), DType::F16);
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().to_dtype(DType::F8E4M3).unwrap();
    let b = Tensor::from_vec(vec![0.5f32, 0.25], &[2]).unwrap().to_dtype(DType::F8E5M2).unwrap();
    let s = a.add(&b).unwrap();
    assert_eq!(s.dtype(), DType::F16);
    assert_eq!(s.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![1.5, 2.25]);
}

/// Maps on f8 in every layout compute in f32 and round once: bit for bit the f32 op on the
/// widened operands, cast to f8 (the f32 ops are checked against their own references in
/// ops_values.rs); and within one f8 ulp of the f64 result.
#[test]
fn maps_compute_in_f32_and_round_once() {
    for d in F8 {
        for lay in LAYOUTS {
            let shape = [5usize, 37];
            let a = input(d, &shape, lay, 11);
            let b = input(d, &shape, Lay::Contiguous, 12);
            let (wa, wb) = (a.to_dtype(DType::F32).unwrap(), b.to_dtype(DType::F32).unwrap());
            let cases: [(&str, Tensor, Tensor); 7] = [
                ("add", a.add(&b).unwrap(), wa.add(&wb).unwrap()),
                ("mul", a.mul(&b).unwrap(), wa.mul(&wb).unwrap()),
                ("relu", a.relu().unwrap(), wa.relu().unwrap()),
                ("neg", a.neg().unwrap(), wa.neg().unwrap()),
                ("maximum", a.maximum(&b).unwrap(), wa.maximum(&wb).unwrap()),
                ("exp", a.exp().unwrap(), wa.exp().unwrap()),
                ("tanh", a.tanh().unwrap(), wa.tanh().unwrap()),
            ];
            for (what, got, f32_result) in cases {
                assert_eq!(got.dtype(), d, "{what}");
                assert_eq!(bits(&got), bits(&f32_result.to_dtype(d).unwrap()), "{d} {lay:?} {what}");
            }
            // add against the f64 model: the exact sum rounded to f8 (the f32 sum of two f8
            // values is exact, so one rounding).
            for ((g, x), y) in values(&a.add(&b).unwrap()).iter().zip(values(&a)).zip(values(&b)) {
                let (V::F(g), V::F(x), V::F(y)) = (*g, x, y) else { unreachable!() };
                let w = decode(d, encode(d, x + y));
                assert!(g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan(), "{d} {lay:?} {x} + {y}: {g} vs {w}");
            }
        }
    }
}

/// In-place and `_out` into f8, scalars, and a cast output.
#[test]
fn in_place_out_and_cast_outputs() {
    for d in F8 {
        let a = input(d, &[64], Lay::Contiguous, 3);
        let want = raw_bits(&a.add(&a).unwrap());
        let c = a.deep_clone().unwrap();
        c.add_(&a).unwrap();
        assert_eq!(raw_bits(&c), want);
        let out = Tensor::empty(&[64], DType::F32, Device::Cpu).unwrap();
        tensor_ops::add_out(&a, &a, &out).unwrap();
        // The f8 result, widened (rounded to f8 first, as PyTorch and NumPy round an f16
        // result written into an f32 out).
        let wide: Vec<V> = values(&out);
        for (w, b) in wide.iter().zip(values(&a)) {
            let (V::F(w), V::F(b)) = (w, b) else { unreachable!() };
            let rounded = decode(d, encode(d, b + b));
            assert!(*w == rounded || w.is_nan() && rounded.is_nan(), "{d}: f32 out {w} from {b}");
        }
        let filled = Tensor::empty(&[3], d, Device::Cpu).unwrap();
        filled.fill_(0.3).unwrap();
        assert_eq!(raw_bits(&filled), vec![encode(d, 0.3); 3]);
    }
}

/// Reductions: sum/mean in f32 rounded once; amax/amin exact; argmax by value.
#[test]
fn reductions_against_the_f64_model() {
    for d in F8 {
        let vals: Vec<V> = gen_values(d, 6 * 50, 21)
            .into_iter()
            .map(|v| if let V::F(x) = v { V::F(if x.is_finite() { x } else { 1.0 }) } else { v })
            .collect();
        for lay in [Lay::Contiguous, Lay::Transposed, Lay::Flipped] {
            let t = make(&vals, &[6, 50], d, lay);
            let x: Vec<f64> =
                values(&t).into_iter().map(|v| if let V::F(x) = v { x } else { unreachable!() }).collect();
            let s = t.sum(&[1], false).unwrap();
            assert_eq!(s.dtype(), d, "sum keeps the float dtype");
            let m = t.amax(&[0], false).unwrap();
            let am = t.argmax(1, false).unwrap().to_vec::<i64>().unwrap();
            for r in 0..6 {
                let row = &x[r * 50..(r + 1) * 50];
                let want: f64 = row.iter().sum();
                let V::F(g) = values(&s)[r] else { unreachable!() };
                // f32 sums of f8 values are exact here; one rounding to f8: half an ulp.
                let half_ulp = if d == DType::F8E4M3 { 0.0625 } else { 0.125 };
                let saturated = d == DType::F8E4M3 && g.abs() == 448.0 && want.abs() > 448.0;
                assert!(
                    (g - want).abs() <= half_ulp * want.abs() + 1e-6 || saturated,
                    "{d} {lay:?} sum row {r}: {g} vs {want}"
                );
                assert_eq!(
                    g.to_bits(),
                    decode(d, encode(d, want)).to_bits(),
                    "{d} {lay:?} sum row {r} is the rounded exact sum"
                );
                let best = row.iter().enumerate().fold(0, |b, (i, v)| if *v > row[b] { i } else { b });
                assert_eq!(am[r] as usize, best, "{d} argmax row {r}");
            }
            for c in 0..50 {
                let want = (0..6).map(|r| x[r * 50 + c]).fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(values(&m)[c], V::F(want), "{d} amax col {c}");
            }
        }
    }
}

#[tensor_op(dtypes = [float])]
fn scaled_square<T: Float>(x: T, #[param] k: f32) -> T {
    x * x * T::from_f32(k)
}

#[test]
fn a_user_op_listing_float_gets_the_f8_rows() {
    for d in F8 {
        let a = input(d, &[33], Lay::Stepped, 5);
        let got = scaled_square(&a, 0.5).unwrap();
        assert_eq!(got.dtype(), d);
        for (g, v) in values(&got).iter().zip(values(&a)) {
            let V::F(x) = v else { unreachable!() };
            let w = decode(d, encode(d, (x as f32 * x as f32 * 0.5f32) as f64));
            assert!(
                matches!(g, V::F(g) if g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())),
                "{d}: {g:?} vs {w}"
            );
        }
    }
}

#[test]
fn fused_chains_equal_the_eager_chain_bit_for_bit() {
    for d in F8 {
        let a = input(d, &[40, 33], Lay::Transposed, 1);
        let b = input(d, &[33], Lay::Contiguous, 2);
        let c = input(DType::F32, &[40, 33], Lay::Contiguous, 3);
        let (xa, xb, xc) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
        let chain = (&(&xa * &xb) + &xa).relu();
        let fused = chain.eval().unwrap();
        let eager = a.mul(&b).unwrap().add(&a).unwrap().relu().unwrap();
        assert_eq!(fused.dtype(), d);
        assert_eq!(bits(&fused), bits(&eager), "{d}");
        let mixed = (&chain * &xc).eval().unwrap();
        assert_eq!(bits(&mixed), bits(&eager.mul(&c).unwrap()), "{d} with an f32 leaf");
        let s = chain.sum(&[1], false).eval().unwrap();
        assert_eq!(bits(&s), bits(&eager.sum(&[1], false).unwrap()), "{d} chain ending in a sum");
    }
}

#[test]
fn safetensors_files_carry_f8() {
    use tensor_ops::safetensors_io::{load, save};
    let path = std::env::temp_dir().join(format!("tensor_ops_{}_f8.safetensors", std::process::id()));
    let all: Vec<u8> = (0..=255).collect();
    let (e4, e5) = (f8_tensor(DType::F8E4M3, &all), f8_tensor(DType::F8E5M2, &all));
    save(&path, &[("e4", &e4.view(&[16, 16]).unwrap().t().unwrap()), ("e5", &e5)]).unwrap();
    let raw = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&raw).unwrap();
    assert_eq!(st.tensor("e4").unwrap().dtype(), safetensors::Dtype::F8_E4M3);
    assert_eq!(st.tensor("e5").unwrap().dtype(), safetensors::Dtype::F8_E5M2);
    let loaded = load(&path).unwrap();
    let get = |n: &str| loaded.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_eq!(get("e4").dtype(), DType::F8E4M3);
    assert_eq!(raw_bits(&get("e4")), raw_bits(&e4.view(&[16, 16]).unwrap().t().unwrap().contiguous().unwrap()));
    assert_eq!(raw_bits(&get("e5")), all);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn display_and_names() {
    let t = Tensor::from_vec(vec![0.3f32, -2.0], &[2]).unwrap().to_dtype(DType::F8E4M3).unwrap();
    let s = t.to_string();
    assert!(s.contains("0.3125") && s.contains("f8e4m3"), "{s}");
    assert_eq!(DType::from_name("f8e5m2"), Some(DType::F8E5M2));
    assert_eq!(DType::F8E4M3.size(), 1);
    assert!(DType::F8E4M3.is_float() && DType::F8E5M2.compute() == DType::F32);
}

/// Large unary maps (past the CPU's byte-table threshold, where an f8 → f8 map runs through
/// a 256-entry table built by the op itself) equal the f32 op rounded once, element by
/// element, for every bit pattern, contiguous, transposed and in place.
#[test]
fn large_unary_maps_equal_the_f32_op_rounded_once() {
    let n = 1 << 17;
    for d in F8 {
        let pattern: Vec<u8> = (0..n).map(|i| (i * 97 + i / 256) as u8).collect();
        let a = f8_tensor(d, &pattern).view(&[512, 256]).unwrap();
        let wa = a.to_dtype(DType::F32).unwrap();
        let cases: [(&str, Tensor, Tensor); 4] = [
            ("relu", a.relu().unwrap(), wa.relu().unwrap()),
            ("neg", a.neg().unwrap(), wa.neg().unwrap()),
            ("tanh", a.tanh().unwrap(), wa.tanh().unwrap()),
            ("relu of a transpose", a.t().unwrap().relu().unwrap(), wa.t().unwrap().relu().unwrap()),
        ];
        for (what, got, f32_result) in cases {
            assert_eq!(got.dtype(), d, "{what}");
            assert_eq!(bits(&got), bits(&f32_result.to_dtype(d).unwrap()), "{d} {what}");
        }
        let c = a.deep_clone().unwrap();
        c.relu_().unwrap();
        assert_eq!(bits(&c), bits(&wa.relu().unwrap().to_dtype(d).unwrap()), "{d} relu_");
    }
}

/// Casts whose output is larger than the cache (past the copy's non-temporal threshold,
/// where the f8 ↔ f32 conversions stream their stores): every element equal to the scalar
/// model, into a fresh output and into a view starting 3 elements into a larger tensor (an
/// output not aligned to a cache line: the scalar head, the streamed body, the tail).
#[test]
fn large_casts_stream_the_same_bits() {
    let n = (1 << 22) + 13; // 16 MiB + 52 bytes of f32
    for d in F8 {
        let pattern: Vec<u8> = (0..n).map(|i| (i * 131 + i / 4096) as u8).collect();
        let t = f8_tensor(d, &pattern);
        let want: Vec<f32> = pattern.iter().map(|&b| decode(d, b) as f32).collect();
        let fresh: Vec<f32> = t.to_dtype(DType::F32).unwrap().to_vec().unwrap();
        assert!(fresh.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{d} → f32");
        let big = Tensor::zeros(&[n + 8], DType::F32, Device::Cpu).unwrap();
        let view = big.narrow(0, 3, n).unwrap();
        view.copy_(&t).unwrap();
        let got: Vec<f32> = view.to_vec().unwrap();
        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{d} → f32 at an offset");
        let edges: Vec<f32> = big.to_vec().unwrap();
        assert!(edges[..3].iter().chain(&edges[n + 3..]).all(|&x| x == 0.0), "{d}: nothing written outside the view");
    }
    let m = (1 << 24) + 29; // 16 MiB + 29 bytes of f8
    let xs: Vec<f32> = (0..m).map(|i| f32::from_bits((i as u32).wrapping_mul(2_654_435_761))).collect();
    let src = Tensor::from_vec(xs.clone(), &[m]).unwrap();
    for d in F8 {
        let want: Vec<u8> = xs.iter().map(|&x| encode(d, x as f64)).collect();
        assert_eq!(raw_bits(&src.to_dtype(d).unwrap()), want, "f32 → {d}");
        let big = Tensor::zeros(&[m + 64], d, Device::Cpu).unwrap();
        let view = big.narrow(0, 23, m).unwrap();
        view.copy_(&src).unwrap();
        assert_eq!(raw_bits(&view), want, "f32 → {d} at an offset");
        let edges = raw_bits(&big);
        assert!(edges[..23].iter().chain(&edges[m + 23..]).all(|&b| b == 0), "{d}: nothing written outside the view");
    }
}
