//! What the value fuzzer feeds the ops: shapes, values in four styles, tensors of every
//! dtype (quantized ones with varied quantizers) as seven kinds of view, poisoned outputs.

use crate::rng::Rng;
use tensor_ops::prelude::*;
use tensor_ops::{quantize_per_channel, quantize_per_tensor};

/// A shape of rank 0 to 4: mostly extents 0 to 5, one in eight large.
pub fn shape(rng: &mut Rng) -> Vec<usize> {
    if rng.below(8) == 0 {
        rng.pick(&[&[70_001][..], &[300, 257], &[3, 129, 130], &[40_000, 3], &[2, 65_537], &[1030, 67], &[17, 1, 4099]])
            .to_vec()
    } else {
        (0..rng.below(5)).map(|_| rng.below(6)).collect()
    }
}

/// A shape that broadcasts with `s`: some leading dims dropped, some extents 1.
pub fn broadcast_partner(rng: &mut Rng, s: &[usize]) -> Vec<usize> {
    let drop = if s.is_empty() { 0 } else { rng.below(s.len() + 1) };
    s[drop..].iter().map(|&e| if rng.below(4) == 0 { 1 } else { e }).collect()
}

/// `n` values in one of four styles: a pattern, small integers (ties), wide random numbers,
/// or a pattern with specials (NaN, ±∞, -0, huge, out of the 8-bit ranges).
pub fn data(rng: &mut Rng, n: usize, zeros: bool) -> Vec<f64> {
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
pub fn base(rng: &mut Rng, dtype: DType, shape: &[usize], zeros: bool) -> Result<Tensor> {
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
pub fn view(rng: &mut Rng, dtype: DType, shape: &[usize], writable: bool, zeros: bool) -> Result<Tensor> {
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

pub fn plain(rng: &mut Rng) -> DType {
    rng.pick(&DType::ALL)
}

pub fn any_dtype(rng: &mut Rng) -> DType {
    if rng.below(5) == 0 {
        rng.pick(&DType::QUANTIZED)
    } else {
        plain(rng)
    }
}

/// A poisoned output of `dtype` and `shape` as a writable view.
pub fn output(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let out = view(rng, dtype, shape, true, false)?;
    let _ = out.fill_(rng.pick(&[f64::NAN, 77.0, -1.0, 1e30]));
    Ok(out)
}
