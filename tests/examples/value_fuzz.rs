//! Random calls whose answers must equal another way to the same answer: an op on strided
//! views against the op on contiguous copies, `_out` and in-place forms written through
//! views against the new result, reductions of views against reductions of copies, casts,
//! copies and fills through views, fused chains against the eager chain (bit for bit),
//! sparse (COO, CSR) results against the dense op, and quantized ops against dequantize →
//! f32 op → quantize. Dtypes: every plain one and the quantized ones; shapes of rank 0 to
//! 4, some large enough for the SIMD, tiled and parallel paths; values with ties, zeros,
//! NaN, ±∞ and out-of-range numbers.
//!
//! ```sh
//! cargo run --release -p tensor-tests --example value_fuzz -- [calls] [seed]
//! ```
//! Prints every disagreement (check, op, dtypes, shapes, strides, the first differing
//! element) and every panic, and exits 1 if there was one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor, Quantizer};

#[path = "fuzz/rng.rs"]
mod rng;
use rng::Rng;

/// What a check found wrong.
type Verdict = std::result::Result<(), String>;
/// A check: `Err` when its inputs could not be made, else its verdict.
type Check = fn(&mut Rng) -> Result<Verdict>;

const UNARY: [&str; 11] = ["neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "sin", "cos", "silu"];
const BINARY: [&str; 13] =
    ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge"];

type Unary = fn(&Tensor) -> Result<Tensor>;
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// The eager function of a one-input op (`None` for a two-input one).
fn unary(name: &str) -> Option<Unary> {
    use tensor_ops::*;
    let f: Unary = match name {
        "neg" => neg,
        "abs" => abs,
        "exp" => exp,
        "log" => log,
        "sqrt" => sqrt,
        "relu" => relu,
        "sigmoid" => sigmoid,
        "tanh" => tanh,
        "sin" => sin,
        "cos" => cos,
        "silu" => silu,
        _ => return None,
    };
    Some(f)
}

/// The eager function of a two-input op.
fn binary(name: &str) -> Binary {
    use tensor_ops::*;
    match name {
        "add" => add,
        "sub" => sub,
        "mul" => mul,
        "div" => div,
        "maximum" => maximum,
        "minimum" => minimum,
        "pow" => pow,
        "eq" => eq,
        "ne" => ne,
        "lt" => lt,
        "le" => le,
        "gt" => gt,
        _ => ge,
    }
}

/// `name` applied to `a` (and `b` for a binary op).
fn eager(name: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    match unary(name) {
        Some(f) => f(a),
        None => binary(name)(a, b),
    }
}

/// `name` applied into `out`.
fn eager_out(name: &str, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    match name {
        "neg" => tensor_ops::neg_out(a, out),
        "abs" => tensor_ops::abs_out(a, out),
        "exp" => tensor_ops::exp_out(a, out),
        "relu" => tensor_ops::relu_out(a, out),
        "sigmoid" => tensor_ops::sigmoid_out(a, out),
        "sqrt" => tensor_ops::sqrt_out(a, out),
        "add" => tensor_ops::add_out(a, b, out),
        "sub" => tensor_ops::sub_out(a, b, out),
        "mul" => tensor_ops::mul_out(a, b, out),
        "div" => tensor_ops::div_out(a, b, out),
        "maximum" => tensor_ops::maximum_out(a, b, out),
        "minimum" => tensor_ops::minimum_out(a, b, out),
        "lt" => tensor_ops::lt_out(a, b, out),
        _ => tensor_ops::eq_out(a, b, out),
    }
}

/// `name` as a fused node.
fn node(name: &str, a: &Expr, b: &Expr) -> Expr {
    match name {
        "neg" => a.neg(),
        "abs" => a.abs(),
        "exp" => a.exp(),
        "log" => a.log(),
        "sqrt" => a.sqrt(),
        "relu" => a.relu(),
        "sigmoid" => a.sigmoid(),
        "tanh" => a.tanh(),
        "sin" => a.sin(),
        "cos" => a.cos(),
        "silu" => a.silu(),
        "add" => a.add(b),
        "sub" => a.sub(b),
        "mul" => a.mul(b),
        "div" => a.div(b),
        "maximum" => a.maximum(b),
        "minimum" => a.minimum(b),
        "pow" => a.pow(b),
        "eq" => a.eq(b),
        "ne" => a.ne(b),
        "lt" => a.lt(b),
        "le" => a.le(b),
        "gt" => a.gt(b),
        _ => a.ge(b),
    }
}

/// A tensor's values in f64 (a quantized one's dequantized values; a sparse one densified).
fn values(t: &Tensor) -> Result<Vec<f64>> {
    let t = if t.layout() != Layout::Strided { t.to_dense()? } else { t.clone() };
    let t = if t.dtype().is_quantized() { t.dequantize()? } else { t };
    t.to_dtype(DType::F64)?.to_vec::<f64>()
}

/// A sparse result densified (a dense one as it is).
fn dense(t: &Tensor) -> Result<Tensor> {
    if t.layout() != Layout::Strided {
        t.to_dense()
    } else {
        Ok(t.clone())
    }
}

/// Comparable bits: the f64 bits of each value (a quantized tensor's stored integers), every
/// NaN one pattern, and -0 as 0 when `signed_zero` is false.
fn bits(t: &Tensor, signed_zero: bool) -> Result<Vec<u64>> {
    let t = if t.layout() != Layout::Strided { t.to_dense()? } else { t.clone() };
    let v = if t.dtype().is_quantized() { values(&t.int_repr()?)? } else { values(&t)? };
    Ok(v.into_iter()
        .map(|x| match x {
            x if x.is_nan() => u64::MAX,
            x if x == 0.0 && !signed_zero => 0,
            x => x.to_bits(),
        })
        .collect())
}

fn describe(t: &Tensor) -> String {
    let q = t.quantizer().map(|q| format!(" {q:?}")).unwrap_or_default();
    format!("{:?} {:?} strides {:?} {:?}{q}", t.dtype(), t.shape(), t.strides(), t.layout())
}

/// The first differing element of two bit lists, if any.
fn first_difference(got: &[u64], want: &[u64]) -> Option<String> {
    let i = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i))?;
    let f = |v: Option<&u64>| v.map(|&b| if b == u64::MAX { f64::NAN } else { f64::from_bits(b) });
    let n = got.iter().zip(want).filter(|(g, w)| g != w).count();
    Some(format!("element {i} of {} is {:?}, want {:?} ({n} differ)", got.len(), f(got.get(i)), f(want.get(i))))
}

/// `got` and `want` agree: both errors, or the same shape, dtype and elements.
fn agree(what: &str, got: Result<Tensor>, want: Result<Tensor>, signed_zero: bool) -> Verdict {
    match (got, want) {
        (Err(_), Err(_)) => Ok(()),
        (Ok(g), Err(e)) => Err(format!("{what}: gave {} but the reference failed: {e}", describe(&g))),
        (Err(e), Ok(w)) => Err(format!("{what}: failed ({e}) but the reference gave {}", describe(&w))),
        (Ok(g), Ok(w)) => {
            if g.shape() != w.shape() || g.dtype() != w.dtype() {
                return Err(format!("{what}: gave {} but the reference {}", describe(&g), describe(&w)));
            }
            let (gb, wb) =
                (bits(&g, signed_zero).map_err(|e| e.to_string())?, bits(&w, signed_zero).map_err(|e| e.to_string())?);
            match first_difference(&gb, &wb) {
                Some(d) => Err(format!("{what}: {} vs {}: {d}", describe(&g), describe(&w))),
                None => Ok(()),
            }
        }
    }
}

/// The relative rounding step of a dtype's values (0 for exact ones).
fn epsilon(d: DType) -> f64 {
    match d {
        DType::F8E4M3 => 0.125,
        DType::F8E5M2 => 0.25,
        DType::BF16 => 1.0 / 128.0,
        DType::F16 => 1.0 / 1024.0,
        DType::F32 => 1.0 / 8_388_608.0,
        DType::F64 => 1.0 / 4_503_599_627_370_496.0,
        _ => 0.0,
    }
}

/// `got` and `want` agree within `tol(i)` per element (NaN with NaN, ∞ with the same ∞).
/// `products`: a NaN against 0 or ∞ is allowed (∞ · 0 met in one order only).
fn close(
    what: &str,
    got: Result<Tensor>,
    want: Result<Tensor>,
    products: bool,
    tol: impl Fn(usize, f64) -> f64,
) -> Verdict {
    let (g, w) = match (got, want) {
        (Err(_), Err(_)) => return Ok(()),
        (Ok(g), Err(e)) => return Err(format!("{what}: gave {} but the reference failed: {e}", describe(&g))),
        (Err(e), Ok(w)) => return Err(format!("{what}: failed ({e}) but the reference gave {}", describe(&w))),
        (Ok(g), Ok(w)) => (g, w),
    };
    if g.shape() != w.shape() || g.dtype() != w.dtype() {
        return Err(format!("{what}: gave {} but the reference {}", describe(&g), describe(&w)));
    }
    let (gv, wv) = (values(&g).map_err(|e| e.to_string())?, values(&w).map_err(|e| e.to_string())?);
    for (i, (&x, &y)) in gv.iter().zip(&wv).enumerate() {
        // A NaN where the other order gave 0 or ∞ is ∞ · 0 met in another order (a product
        // overflowing before it reached a zero): a rounding difference too.
        let inf_times_zero = |p: f64, q: f64| products && p.is_nan() && (q == 0.0 || q.is_infinite());
        let ok = (x.is_nan() && y.is_nan())
            || x == y
            || (x - y).abs() <= tol(i, y)
            || inf_times_zero(x, y)
            || inf_times_zero(y, x);
        if !ok {
            return Err(format!("{what}: {}: element {i} is {x:?}, want {y:?} (within {:?})", describe(&g), tol(i, y)));
        }
    }
    Ok(())
}

/// A shape of rank 0 to 4: mostly extents 0 to 5, one in eight large.
fn shape(rng: &mut Rng) -> Vec<usize> {
    if rng.below(8) == 0 {
        rng.pick(&[&[70_001][..], &[300, 257], &[3, 129, 130], &[40_000, 3], &[2, 65_537], &[1030, 67], &[17, 1, 4099]])
            .to_vec()
    } else {
        (0..rng.below(5)).map(|_| rng.below(6)).collect()
    }
}

/// A shape that broadcasts with `s`: some leading dims dropped, some extents 1.
fn broadcast_partner(rng: &mut Rng, s: &[usize]) -> Vec<usize> {
    let drop = if s.is_empty() { 0 } else { rng.below(s.len() + 1) };
    s[drop..].iter().map(|&e| if rng.below(4) == 0 { 1 } else { e }).collect()
}

/// `n` values in one of four styles: a pattern, small integers (ties), wide random numbers,
/// or a pattern with specials (NaN, ±∞, -0, huge, out of the 8-bit ranges).
fn data(rng: &mut Rng, n: usize, zeros: bool) -> Vec<f64> {
    let style = rng.below(if zeros { 3 } else { 4 });
    let salt = rng.next();
    (0..n)
        .map(|i| {
            let h = salt.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
            let v = match style {
                0 => ((i * 37 % 23) as f64 - 11.0) * 0.75,
                1 => (h % 7) as f64 - 3.0,
                2 => (h % 20_001) as f64 / 100.0 - 100.0,
                _ if i % 7 == 3 => {
                    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e30, -1e-30, 448.0, 500.0, 65504.0, 70000.0]
                        [(h % 10) as usize]
                }
                _ => ((i * 37 % 23) as f64 - 11.0) * 0.3,
            };
            if zeros && !h.is_multiple_of(3) {
                0.0
            } else {
                v
            }
        })
        .collect()
}

/// A contiguous tensor of `dtype` and `shape` (quantized: per tensor or per channel, scales
/// and zero points varied).
fn base(rng: &mut Rng, dtype: DType, shape: &[usize], zeros: bool) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let x = Tensor::from_vec(data(rng, n, zeros), shape)?;
    if !dtype.is_quantized() {
        return x.to_dtype(dtype);
    }
    let x = x.to_dtype(DType::F32)?;
    let zp_of = |rng: &mut Rng| match dtype {
        DType::QUInt8 => rng.pick(&[0, 128, 255, 3]),
        DType::QInt8 => rng.pick(&[0, -128, 127, 5]),
        _ => rng.pick(&[0, 1000, -7]),
    };
    if shape.is_empty() || rng.coin() {
        let scale = rng.pick(&[0.1, 0.5, 1.0, 1e-3, 0.3, 7.0]);
        let zp = zp_of(rng);
        quantize_per_tensor(&x, scale, zp, dtype)
    } else {
        let axis = rng.below(shape.len());
        let c = shape[axis];
        let scales: Vec<f64> = (0..c).map(|_| rng.pick(&[0.1, 0.5, 1.0, 1e-3, 0.3, 7.0])).collect();
        let zps: Vec<i64> = (0..c).map(|_| zp_of(rng)).collect();
        quantize_per_channel(&x, &Tensor::from_vec(scales, &[c])?, &Tensor::from_vec(zps, &[c])?, axis, dtype)
    }
}

/// A tensor of `dtype` with `shape` as one of seven kinds of view: contiguous, transposed,
/// flipped, stepped, offset, permuted or (unless `writable`) expanded.
fn view(rng: &mut Rng, dtype: DType, shape: &[usize], writable: bool, zeros: bool) -> Result<Tensor> {
    let nd = shape.len();
    let d = rng.below(nd.max(1));
    let kind = rng.below(7);
    if nd == 0 || kind == 0 {
        return base(rng, dtype, shape, zeros);
    }
    let mut s = shape.to_vec();
    match kind {
        1 if nd >= 2 => {
            let e = (d + 1 + rng.below(nd - 1)) % nd;
            s.swap(d, e);
            base(rng, dtype, &s, zeros)?.transpose(d, e)
        }
        2 => base(rng, dtype, shape, zeros)?.flip(d),
        3 => {
            s[d] *= 2;
            base(rng, dtype, &s, zeros)?.slice(d, 0, s[d], 2)
        }
        4 => {
            s[d] += 2;
            base(rng, dtype, &s, zeros)?.narrow(d, 1, shape[d])
        }
        5 if !writable => {
            s[d] = 1;
            base(rng, dtype, &s, zeros)?.expand(shape)
        }
        _ => {
            // a random permutation p; the base has extent shape[k] at dim p[k]
            let mut p: Vec<usize> = (0..nd).collect();
            for i in (1..nd).rev() {
                p.swap(i, rng.below(i + 1));
            }
            for (k, &pk) in p.iter().enumerate() {
                s[pk] = shape[k];
            }
            base(rng, dtype, &s, zeros)?.permute(&p)
        }
    }
}

fn plain(rng: &mut Rng) -> DType {
    rng.pick(&DType::ALL)
}

fn any_dtype(rng: &mut Rng) -> DType {
    if rng.below(5) == 0 {
        rng.pick(&DType::QUANTIZED)
    } else {
        plain(rng)
    }
}

/// A poisoned output of `dtype` and `shape` as a writable view.
fn output(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let out = view(rng, dtype, shape, true, false)?;
    let _ = out.fill_(rng.pick(&[f64::NAN, 77.0, -1.0, 1e30]));
    Ok(out)
}

/// A map on views equals the map on contiguous copies.
fn maps_on_views(rng: &mut Rng) -> Result<Verdict> {
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
fn outs_through_views(rng: &mut Rng) -> Result<Verdict> {
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
fn reductions_of_views(rng: &mut Rng) -> Result<Verdict> {
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
fn casts_copies_fills(rng: &mut Rng) -> Result<Verdict> {
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
fn fused_against_eager(rng: &mut Rng) -> Result<Verdict> {
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

/// Sparse results equal the dense op's: to_dense, ⊕ over the union, mul over the
/// intersection, maps of zero to zero, sums, amax/amin with implicit zeros, spmv.
fn sparse_against_dense(rng: &mut Rng) -> Result<Verdict> {
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
fn quantized_against_f32(rng: &mut Rng) -> Result<Verdict> {
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
fn quantized_output(rng: &mut Rng, shape: &[usize]) -> Result<Tensor> {
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
fn requantize(x: &Tensor, q: &Quantizer) -> Result<Tensor> {
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
fn quantized_copies_and_fills(rng: &mut Rng) -> Result<Verdict> {
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
fn safetensors_round_trip(rng: &mut Rng) -> Result<Verdict> {
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

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x5EED);
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        println!("panic: {}{at}", info.payload_as_str().unwrap_or("(non-string panic)"));
    }));
    let checks: [(&str, Check); 9] = [
        ("maps on views", maps_on_views),
        ("outs through views", outs_through_views),
        ("reductions of views", reductions_of_views),
        ("casts, copies, fills", casts_copies_fills),
        ("fused against eager", fused_against_eager),
        ("sparse against dense", sparse_against_dense),
        ("quantized against f32", quantized_against_f32),
        ("quantized copies and fills", quantized_copies_and_fills),
        ("safetensors round trip", safetensors_round_trip),
    ];
    let mut rng = Rng(seed.wrapping_mul(1 << 32) ^ 0xA5A5);
    let mut ran = [0usize; 9];
    let mut failures = std::collections::BTreeMap::<String, (usize, String)>::new();
    for _ in 0..calls {
        let k = rng.below(checks.len());
        let (name, check) = checks[k];
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&mut rng)));
        let problem = match outcome {
            Ok(Ok(verdict)) => {
                ran[k] += 1;
                verdict.err()
            }
            Ok(Err(_)) => None, // an input not made (a view the shape does not allow)
            Err(_) => Some(format!("{name}: panicked (message above)")),
        };
        if let Some(p) = problem {
            let key = format!("{name}: {}", p.split(':').next().unwrap_or("").split('(').next().unwrap_or(""));
            failures.entry(key).or_insert((0, p)).0 += 1;
        }
    }
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("value_fuzz_{}", std::process::id())));
    for (key, (n, first)) in &failures {
        println!("{n} × {key}\n    first: {first}");
    }
    let summary: Vec<String> = checks.iter().zip(ran).map(|((n, _), r)| format!("{n} {r}")).collect();
    println!("{} checks ({}), {} kinds of disagreement", calls, summary.join(", "), failures.len());
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
