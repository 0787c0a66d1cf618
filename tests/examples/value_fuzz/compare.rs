//! How the value fuzzer compares a result with its reference: bit for bit, or within the
//! result dtype's rounding.

use crate::Verdict;
use tensor_ops::prelude::*;

/// A tensor's values in f64 (a quantized one's dequantized values; a sparse one densified).
pub fn values(t: &Tensor) -> Result<Vec<f64>> {
    let t = if t.layout() != Layout::Strided { t.to_dense()? } else { t.clone() };
    let t = if t.dtype().is_quantized() { t.dequantize()? } else { t };
    t.to_dtype(DType::F64)?.to_vec::<f64>()
}

/// A sparse result densified (a dense one as it is).
pub fn dense(t: &Tensor) -> Result<Tensor> {
    if t.layout() != Layout::Strided {
        t.to_dense()
    } else {
        Ok(t.clone())
    }
}

/// Comparable bits: the f64 bits of each value (a quantized tensor's stored integers), every
/// NaN one pattern, and -0 as 0 when `signed_zero` is false.
pub fn bits(t: &Tensor, signed_zero: bool) -> Result<Vec<u64>> {
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

pub fn describe(t: &Tensor) -> String {
    let q = t.quantizer().map(|q| format!(" {q:?}")).unwrap_or_default();
    format!("{:?} {:?} strides {:?} {:?}{q}", t.dtype(), t.shape(), t.strides(), t.layout())
}

/// The first differing element of two bit lists, if any.
pub fn first_difference(got: &[u64], want: &[u64]) -> Option<String> {
    let i = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i))?;
    let f = |v: Option<&u64>| v.map(|&b| if b == u64::MAX { f64::NAN } else { f64::from_bits(b) });
    let n = got.iter().zip(want).filter(|(g, w)| g != w).count();
    Some(format!("element {i} of {} is {:?}, want {:?} ({n} differ)", got.len(), f(got.get(i)), f(want.get(i))))
}

/// `got` and `want` agree: both errors, or the same shape, dtype and elements.
pub fn agree(what: &str, got: Result<Tensor>, want: Result<Tensor>, signed_zero: bool) -> Verdict {
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
pub fn epsilon(d: DType) -> f64 {
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
pub fn close(
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
