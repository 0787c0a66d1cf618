//! The checks of strided results: maps on views, `_out` and in-place through views,
//! reductions of views, casts/copies/fills, fused chains against the eager chain.

use crate::compare::*;
use crate::data::*;
use crate::ops::*;
use crate::rng::Rng;
use crate::Verdict;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// A map on views equals the map on contiguous copies.
pub fn maps_on_views(rng: &mut Rng) -> Result<Verdict> {
    let name = if rng.coin() { rng.pick(&UNARY) } else { rng.pick(&BINARY) };
    let sa = shape(rng);
    let sb = broadcast_partner(rng, &sa);
    let (sa, sb) = if rng.coin() { (sa, sb) } else { (sb, sa) };
    let da = any_dtype(rng);
    let db = if rng.below(3) == 0 { any_dtype(rng) } else { da };
    let (a, b) = (view(rng, da, &sa, false, false)?, view(rng, db, &sb, false, false)?);
    let want = eager(name, &a.contiguous()?, &b.contiguous()?);
    let what = format!("{name}({}, {})", describe(&a), describe(&b));
    Ok(agree(&what, eager(name, &a, &b), want, true))
}

/// An `_out` call and an in-place call through a strided output equal the new result, cast.
pub fn outs_through_views(rng: &mut Rng) -> Result<Verdict> {
    let name = rng.pick(&[
        "neg", "abs", "exp", "relu", "sigmoid", "sqrt", "add", "sub", "mul", "div", "maximum", "minimum", "lt", "eq",
    ]);
    let sa = shape(rng);
    let sb = broadcast_partner(rng, &sa);
    let da = plain(rng);
    let db = if rng.coin() { plain(rng) } else { da };
    let (a, b) = (view(rng, da, &sa, false, false)?, view(rng, db, &sb, false, false)?);
    let Ok(r) = eager(name, &a, &b) else { return Ok(Ok(())) };
    let od = if rng.coin() { r.dtype() } else { plain(rng) };
    let out = output(rng, od, r.shape())?;
    let what = format!("{name}_out({}, {}, {})", describe(&a), describe(&b), describe(&out));
    match eager_out(name, &a, &b, &out) {
        Ok(()) => {
            if let Err(e) = agree(&what, Ok(out.contiguous()?), r.to_dtype(od), true) {
                return Ok(Err(e));
            }
        }
        Err(e) if tensor_ops::can_cast(r.dtype(), od) => {
            return Ok(Err(format!("{what}: failed though {} casts to {od:?}: {e}", r.dtype())))
        }
        Err(_) => {}
    }
    // in place: `a` as a writable view of the result's shape
    if r.shape() == a.shape() {
        let x = view(rng, da, &sa, true, false)?;
        let Ok(fresh) = eager(name, &x.contiguous()?, &b) else { return Ok(Ok(())) };
        let what = format!("{name}_({}, {})", describe(&x), describe(&b));
        let done = match name {
            "neg" => tensor_ops::neg_(&x),
            "relu" => tensor_ops::relu_(&x),
            "exp" => tensor_ops::exp_(&x),
            "add" => tensor_ops::add_(&x, &b),
            "mul" => tensor_ops::mul_(&x, &b),
            "maximum" => tensor_ops::maximum_(&x, &b),
            _ => return Ok(Ok(())),
        };
        return Ok(match done {
            Ok(()) => agree(&what, x.contiguous(), fresh.to_dtype(da), true),
            Err(e) if tensor_ops::can_cast(fresh.dtype(), da) => {
                Err(format!("{what}: failed though {} casts to {da:?}: {e}", fresh.dtype()))
            }
            Err(_) => Ok(()),
        });
    }
    Ok(Ok(()))
}

/// Reductions of views equal reductions of contiguous copies: exactly where the order of
/// the elements cannot matter, within rounding where it can.
pub fn reductions_of_views(rng: &mut Rng) -> Result<Verdict> {
    let s = shape(rng);
    let dt = any_dtype(rng);
    let a = view(rng, dt, &s, false, false)?;
    let c = a.contiguous()?;
    let nd = s.len();
    let mut dims: Vec<usize> = (0..nd).filter(|_| rng.coin()).collect();
    if rng.coin() {
        dims.reverse();
    }
    let dim = rng.below(nd.max(1));
    let keep = rng.coin();
    let op = rng.pick(&[
        "sum",
        "prod",
        "mean",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "all",
        "any",
        "var",
        "logsumexp",
        "softmax",
        "log_softmax",
    ]);
    let run = |t: &Tensor| -> Result<Tensor> {
        match op {
            "sum" => t.sum(&dims, keep),
            "prod" => t.prod(&dims, keep),
            "mean" => t.mean(&dims, keep),
            "amax" => t.amax(&dims, keep),
            "amin" => t.amin(&dims, keep),
            "argmax" => t.argmax(dim, keep),
            "argmin" => t.argmin(dim, keep),
            "all" => t.all(&dims, keep),
            "any" => t.any(&dims, keep),
            "var" => t.var(&dims, 1, keep),
            "logsumexp" => t.logsumexp(&dims, keep),
            "softmax" => t.softmax(dim),
            _ => t.log_softmax(dim),
        }
    };
    let what = format!("{op}(dims {dims:?}, dim {dim}, keep {keep}) of {}", describe(&a));
    let exact = matches!(op, "amax" | "amin" | "argmax" | "argmin" | "all" | "any")
        || (!dt.is_float() && !dt.is_quantized() && matches!(op, "sum" | "prod"));
    if exact {
        return Ok(agree(&what, run(&a), run(&c), true));
    }
    // Within the result's rounding plus an f32 accumulation's error over the magnitudes.
    let (got, want) = (run(&a), run(&c));
    let eps = want.as_ref().map(|w| epsilon(w.dtype())).unwrap_or(0.0).max(1e-7);
    let magnitudes =
        tensor_ops::abs(&c.to_dtype(DType::F64).or_else(|_| c.dequantize().and_then(|d| d.to_dtype(DType::F64)))?)
            .and_then(|m| if op == "sum" { m.sum(&dims, keep) } else { m.amax(&dims, keep) })
            .and_then(|m| values(&m))
            .unwrap_or_default();
    let n = s.iter().product::<usize>().max(1) as f64;
    Ok(close(&what, got, want, op == "prod", |i, y| {
        let m = magnitudes.get(i).copied().filter(|m| m.is_finite()).unwrap_or(0.0);
        match op {
            // a product's rounding grows with each factor; over- and underflow depend on the order
            "prod" => 4.0 * eps * y.abs() * n + 1e-12,
            // Welford's running mean and square sum round at every element, in either order
            "var" => 4.0 * eps * y.abs() * n.sqrt().max(1.0) + 4.0 * eps * m * m * n.sqrt().max(1.0) + 1e-12,
            // e^x over a sum of up to n terms: an f32 rounding per term in another order
            "softmax" | "log_softmax" => 4.0 * eps * y.abs() + 4.0 * 1.2e-7 * n.sqrt().max(1.0) * y.abs().max(1.0),
            _ => 4.0 * eps * y.abs() + 1e-6 * m * n.sqrt().max(1.0) + 1e-12,
        }
    }))
}

/// Casts of views, copies into strided views of another dtype and fills of views equal the
/// same on contiguous tensors.
pub fn casts_copies_fills(rng: &mut Rng) -> Result<Verdict> {
    let s = shape(rng);
    let from = any_dtype(rng);
    let a = view(rng, from, &s, false, false)?;
    let to = plain(rng);
    let what = format!("to_dtype({to:?}) of {}", describe(&a));
    if let Err(e) = agree(&what, a.to_dtype(to), a.contiguous()?.to_dtype(to), true) {
        return Ok(Err(e));
    }
    let out = output(rng, to, &s)?;
    let want = a.contiguous()?.to_dtype(to);
    let what = format!("copy_ of {} into {}", describe(&a), describe(&out));
    if want.is_ok()
        && let Err(e) = agree(&what, out.copy_(&a).and_then(|_| out.contiguous()), want, true)
    {
        return Ok(Err(e));
    }
    let value = rng.pick(&[0.5, -3.0, 448.0, 1e30, f64::NAN, -0.0]);
    let what = format!("fill_({value}) of {}", describe(&out));
    Ok(agree(&what, out.fill_(value).and_then(|_| out.contiguous()), Tensor::full(&s, value, to, Device::Cpu), true))
}

/// A random tree of maps over three leaves, evaluated fused and eagerly: the same bits,
/// shape, dtype and memory order; a reduction after it too.
pub fn fused_against_eager(rng: &mut Rng) -> Result<Verdict> {
    let s = shape(rng);
    let leaves: Vec<Tensor> = (0..3)
        .map(|_| {
            let sh = broadcast_partner(rng, &s);
            let dt = if rng.below(6) == 0 {
                any_dtype(rng)
            } else {
                rng.pick(&[DType::F32, DType::F16, DType::BF16, DType::I32, DType::F8E4M3, DType::U8, DType::F64])
            };
            view(rng, dt, &sh, false, false)
        })
        .collect::<Result<_>>()?;
    fn grow(rng: &mut Rng, depth: usize, leaves: &[Tensor], text: &mut String) -> (Expr, Result<Tensor>) {
        // the root is always an op: a bare leaf is no chain
        if depth == 0 || (depth < 3 && rng.below(4) == 0) {
            let i = rng.below(leaves.len());
            text.push_str(&format!("x{i}"));
            return (Expr::input(&leaves[i]), Ok(leaves[i].clone()));
        }
        let name = if rng.coin() { rng.pick(&UNARY) } else { rng.pick(&BINARY) };
        text.push_str(name);
        text.push('(');
        let (ea, ta) = grow(rng, depth - 1, leaves, text);
        let (eb, tb) = if BINARY.contains(&name) {
            text.push_str(", ");
            grow(rng, depth - 1, leaves, text)
        } else {
            (ea.clone(), ta.clone())
        };
        text.push(')');
        let t = ta.and_then(|a| tb.and_then(|b| eager(name, &a, &b)));
        (node(name, &ea, &eb), t)
    }
    let mut text = String::new();
    let (e, want) = grow(rng, 3, &leaves, &mut text);
    let what = format!("fused {text} over [{}]", leaves.iter().map(describe).collect::<Vec<_>>().join(", "));
    let got = e.eval();
    if let (Ok(g), Ok(w)) = (&got, &want)
        && g.strides() != w.strides()
        && g.shape() == w.shape()
        && g.numel() > 1
    {
        return Ok(Err(format!("{what}: strides {:?}, the eager chain's {:?}", g.strides(), w.strides())));
    }
    if let Err(e) = agree(&what, got, want.clone(), true) {
        return Ok(Err(e));
    }
    let nd = s.len();
    let dims: Vec<usize> = (0..nd).filter(|_| rng.coin()).collect();
    let keep = rng.coin();
    let (r, w) = match rng.below(3) {
        0 => (e.sum(&dims, keep).eval(), want.and_then(|w| w.sum(&dims, keep))),
        1 => (e.amax(&dims, keep).eval(), want.and_then(|w| w.amax(&dims, keep))),
        _ => (e.mean(&dims, keep).eval(), want.and_then(|w| w.mean(&dims, keep))),
    };
    Ok(agree(&format!("{what}, reduced over {dims:?}"), r, w, true))
}
