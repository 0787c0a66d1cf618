//! The checks of the other layouts and dtypes: sparse against dense, quantized against
//! f32, quantized copies and fills, safetensors round trips.

use crate::compare::*;
use crate::data::*;
use crate::ops::*;
use crate::rng::Rng;
use crate::Verdict;
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor, Quantizer};

/// Sparse results equal the dense op's: to_dense, ⊕ over the union, mul over the
/// intersection, maps of zero to zero, sums, amax/amin with implicit zeros, spmv.
pub fn sparse_against_dense(rng: &mut Rng) -> Result<Verdict> {
    let rank = 2 + rng.below(2);
    let s: Vec<usize> = (0..rank).map(|_| rng.below(7)).collect();
    let dt = rng.pick(&[DType::F32, DType::F64, DType::I64, DType::I32, DType::F16, DType::I8]);
    let (d1, d2) = (view(rng, dt, &s, false, true)?, view(rng, dt, &s, false, true)?);
    let csr = rng.coin();
    let sparse = |d: &Tensor| if csr { d.to_sparse_csr() } else { d.to_sparse_coo() };
    let (s1, s2) = (sparse(&d1)?, sparse(&d2)?);
    let what = |op: &str| format!("{op} of {} ({}) and {}", describe(&s1), describe(&d1), describe(&d2));
    let checks: [(&str, Result<Tensor>, Result<Tensor>); 6] = [
        ("to_dense", s1.to_dense(), Ok(d1.contiguous()?)),
        ("add", s1.add(&s2), d1.add(&d2)),
        ("mul", s1.mul(&s2), d1.mul(&d2)),
        ("add dense", s1.add(&d2), d1.add(&d2)),
        ("neg", s1.neg(), d1.neg()),
        ("relu", s1.relu(), d1.relu()),
    ];
    for (op, got, want) in checks {
        let got = got.and_then(|g| dense(&g));
        if let Err(e) = agree(&what(op), got, want, false) {
            return Ok(Err(e));
        }
    }
    let dim = rng.below(rank);
    for (op, got, want) in [
        ("amax", s1.amax(&[dim], false), d1.amax(&[dim], false)),
        ("amin", s1.amin(&[dim], false), d1.amin(&[dim], false)),
    ] {
        let got = got.and_then(|g| dense(&g));
        if let Err(e) = agree(&what(op), got, want, false) {
            return Ok(Err(e));
        }
    }
    let eps = epsilon(dt).max(1e-7);
    let n = s.iter().product::<usize>() as f64;
    if let Err(e) = close(&what("sum_all"), s1.sum_all(), d1.sum_all(), false, |_, y| 4.0 * eps * y.abs() + 1e-5 * n) {
        return Ok(Err(e));
    }
    let tol_sum = |_: usize, y: f64| 4.0 * eps * y.abs() + 1e-5 * n;
    if let Err(e) = close(
        &what("sum over a dim"),
        s1.sum(&[dim], false).and_then(|g| dense(&g)),
        d1.sum(&[dim], false),
        false,
        tol_sum,
    ) {
        return Ok(Err(e));
    }
    if csr && rank == 2 && dt.is_float() && dt != DType::F16 && rng.coin() {
        // (no NaN or ∞ in the dense factor: the implicit zeros are never multiplied)
        let k = 1 + rng.below(5);
        let m = view(rng, dt, &[s[1], k], false, true)?;
        let want = d1.unsqueeze(2).and_then(|d| d.mul(&m)).and_then(|p| p.sum(&[1], false));
        let mag =
            tensor_ops::abs(&d1.unsqueeze(2)?.mul(&m)?)?.sum(&[1], false).and_then(|m| values(&m)).unwrap_or_default();
        return Ok(close(&what("spmm"), s1.spmm(&m), want, false, |i, y| {
            4.0 * eps * y.abs() + 8.0 * eps * mag.get(i).copied().unwrap_or(f64::INFINITY)
        }));
    }
    if csr && rank == 2 && dt.is_float() && dt != DType::F16 {
        // (no NaN or ∞ in the vector: the implicit zeros are never multiplied)
        let v = view(rng, dt, &s[1..], false, true)?;
        let want = d1.mul(&v).and_then(|p| p.sum(&[1], false));
        let mag = tensor_ops::abs(&d1.mul(&v)?)?.sum(&[1], false).and_then(|m| values(&m)).unwrap_or_default();
        return Ok(close(&what("spmv"), s1.spmv(&v), want, false, |i, y| {
            4.0 * eps * y.abs() + 8.0 * eps * mag.get(i).copied().unwrap_or(f64::INFINITY)
        }));
    }
    Ok(Ok(()))
}

/// Quantized ops equal dequantize → the f32 op → quantize: a new result keeps the first
/// input's quantizer, an `_out` call quantizes to the output's.
pub fn quantized_against_f32(rng: &mut Rng) -> Result<Verdict> {
    let name = rng.pick(&["add", "sub", "mul", "div", "maximum", "minimum", "neg", "abs", "relu", "lt"]);
    let sa = shape(rng);
    let sb = broadcast_partner(rng, &sa);
    let dt = rng.pick(&DType::QUANTIZED);
    let qa = view(rng, dt, &sa, false, false)?;
    let db = if rng.coin() { rng.pick(&DType::QUANTIZED) } else { DType::F32 };
    let qb = view(rng, db, &sb, false, false)?;
    let f = |t: &Tensor| if t.dtype().is_quantized() { t.dequantize() } else { t.to_dtype(DType::F32) };
    let Ok(r32) = eager(name, &f(&qa)?, &f(&qb)?) else { return Ok(Ok(())) };
    let what = format!("{name}({}, {})", describe(&qa), describe(&qb));
    let new = eager(name, &qa, &qb);
    let want = if r32.dtype() == DType::Bool { Ok(r32.clone()) } else { requantize(&r32, qa.quantizer().unwrap()) };
    // A result broadcast past the first input's shape cannot keep a per-channel quantizer.
    if (r32.shape() == qa.shape() || qa.quantizer().is_some_and(|q| matches!(q, Quantizer::PerTensor { .. })))
        && let Err(e) = agree(&what, new, want, true)
    {
        return Ok(Err(e));
    }
    if r32.dtype() == DType::Bool {
        return Ok(Ok(()));
    }
    let out = quantized_output(rng, r32.shape())?;
    let q = out.quantizer().expect("a quantized output").clone();
    let got = eager_out(name, &qa, &qb, &out).and_then(|_| out.contiguous());
    Ok(agree(&format!("{what} into {}", describe(&out)), got, requantize(&r32, &q), true))
}

/// An empty quantized tensor of `shape`: per tensor or per channel (scales and zero points
/// varied), sometimes a transposed view of one (the channel axis moved with its dim).
pub fn quantized_output(rng: &mut Rng, shape: &[usize]) -> Result<Tensor> {
    let dtype = rng.pick(&DType::QUANTIZED);
    let nd = shape.len();
    let (d, e) = (rng.below(nd.max(1)), rng.below(nd.max(1)));
    let mut s = shape.to_vec();
    if nd > 0 {
        s.swap(d, e);
    }
    let q = if nd == 0 || rng.coin() {
        Quantizer::per_tensor(dtype, rng.pick(&[0.05, 0.5, 2.0]), 0)?
    } else {
        let axis = rng.below(nd);
        let scales = (0..s[axis]).map(|_| rng.pick(&[0.05, 0.5, 2.0, 0.01])).collect();
        let zps =
            (0..s[axis]).map(|_| if dtype == DType::QUInt8 { rng.pick(&[0, 128, 200]) } else { rng.pick(&[0, -3, 7]) });
        Quantizer::per_channel(dtype, axis, scales, zps.collect())?
    };
    let out = Tensor::empty_quantized(&s, &q, Device::Cpu)?;
    if nd == 0 {
        Ok(out)
    } else {
        out.transpose(d, e)
    }
}

/// The same quantizer's rule applied to `x` (per tensor or per channel).
pub fn requantize(x: &Tensor, q: &Quantizer) -> Result<Tensor> {
    match q {
        Quantizer::PerTensor { dtype, scale, zero_point } => quantize_per_tensor(x, *scale, *zero_point, *dtype),
        Quantizer::PerChannel { dtype, axis, scales, zero_points } => {
            let c = scales.len();
            let s = Tensor::from_vec(scales.to_vec(), &[c])?;
            let z = Tensor::from_vec(zero_points.to_vec(), &[c])?;
            quantize_per_channel(x, &s, &z, *axis, *dtype)
        }
    }
}

/// Copies into and fills of quantized views equal quantizing with the output's quantizer:
/// from a float tensor, from another quantized tensor (its values requantized), and a
/// scalar.
pub fn quantized_copies_and_fills(rng: &mut Rng) -> Result<Verdict> {
    let s = shape(rng);
    let out = quantized_output(rng, &s)?;
    let q = out.quantizer().expect("a quantized output").clone();
    let from = if rng.coin() {
        rng.pick(&DType::QUANTIZED)
    } else {
        rng.pick(&[DType::F32, DType::F16, DType::I32, DType::F64])
    };
    let src_shape = broadcast_partner(rng, &s);
    let src = view(rng, from, &src_shape, false, false)?;
    let as_f32 = if from.is_quantized() { src.dequantize()? } else { src.to_dtype(DType::F32)? };
    let want = as_f32.broadcast_to(&s).and_then(|b| b.contiguous()).and_then(|b| requantize(&b, &q));
    let what = format!("copy_ of {} into {}", describe(&src), describe(&out));
    if let Err(e) = agree(&what, out.copy_(&src).and_then(|_| out.contiguous()), want, true) {
        return Ok(Err(e));
    }
    let value = rng.pick(&[0.5, -3.0, 1e30, -1e30, 0.0, 12.25, f64::NAN]);
    let want = Tensor::full(&s, value, DType::F32, Device::Cpu).and_then(|f| requantize(&f, &q));
    let what = format!("fill_({value}) of {}", describe(&out));
    Ok(agree(&what, out.fill_(value).and_then(|_| out.contiguous()), want, true))
}

/// A safetensors file holds what was saved: every dtype, views (saved as their values),
/// quantized tensors with their quantizers.
pub fn safetensors_round_trip(rng: &mut Rng) -> Result<Verdict> {
    let tensors: Vec<Tensor> = (0..3)
        .map(|_| {
            let sh = shape(rng);
            let dt = any_dtype(rng);
            view(rng, dt, &sh, false, false)
        })
        .collect::<Result<_>>()?;
    let dir = std::env::temp_dir().join(format!("value_fuzz_{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::invalid("value_fuzz", e.to_string()))?;
    let path = dir.join("t.safetensors");
    let names = ["a", "b", "c"];
    let named: Vec<(&str, &Tensor)> = names.iter().copied().zip(&tensors).collect();
    if let Err(e) = tensor_ops::safetensors_io::save(&path, &named) {
        return Ok(Err(format!("save of {} failed: {e}", tensors.iter().map(describe).collect::<Vec<_>>().join(", "))));
    }
    let loaded = match tensor_ops::safetensors_io::load(&path) {
        Ok(l) => l,
        Err(e) => return Ok(Err(format!("load of what was saved failed: {e}"))),
    };
    for (name, t) in names.iter().zip(&tensors) {
        let Some((_, back)) = loaded.iter().find(|(n, _)| n == name) else {
            return Ok(Err(format!("{name} ({}) was not loaded back", describe(t))));
        };
        if back.quantizer() != t.quantizer() {
            return Ok(Err(format!("{name}: saved {} loaded {}", describe(t), describe(back))));
        }
        if let Err(e) = agree(&format!("safetensors {name}"), Ok(back.clone()), t.contiguous(), true) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}
