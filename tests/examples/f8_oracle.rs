//! The 8-bit float casts and maps written as raw little-endian files for `ml_dtypes` to
//! check (`tests/f8_oracle.py`, run by `.ci/run`): an implementation of the same formats
//! that is not ours and gives PyTorch's codes (an f64 rounded through f32, E5M2 overflow
//! infinity) but one: its E4M3 overflow is NaN where PyTorch 2.15 saturates to ±448, which
//! the check expects.
//!
//! For E4M3 and E5M2 it writes: the casts from f32 of every 4099th f32 bit pattern and of
//! the formats' edges (ties, the overflow thresholds, subnormals, ±∞, NaNs of both signs);
//! the casts from f64 of values next to every code's midpoints (where one rounding from f64
//! and PyTorch's rounding through f32 differ); the decode of all 256 codes to f32; `add` and
//! `mul` of every pair of codes (65,536 results each, through the vectorized map loops).
//!
//! ```sh
//! cargo run -p tensor-tests --example f8_oracle -- /tmp/f8
//! python3 tests/f8_oracle.py /tmp/f8
//! ```

use std::path::{Path, PathBuf};
use tensor_ops::prelude::*;
use tensor_ops::{F8E4M3, F8E5M2};

/// The f32 sources: every 4099th bit pattern (every exponent, both signs, NaN payloads)
/// and the edges of both formats.
fn f32_sources() -> Vec<f32> {
    let mut x: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
    x.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MAX, f32::MIN_POSITIVE]);
    for v in [448.0f32, 464.0, 480.0, 57344.0, 61440.0, 65536.0, 2f32.powi(-9), 2f32.powi(-10), 2f32.powi(-17)] {
        for s in [1.0f32, -1.0] {
            let b = (v * s).to_bits();
            x.extend([f32::from_bits(b - 1), f32::from_bits(b), f32::from_bits(b + 1)]);
        }
    }
    x
}

/// The f64 sources: each finite code's value and the midpoints to its neighbours, nudged
/// by ±2^-30 and ±2^-60 of themselves (below an f32 ulp: the f32 rounding lands on the
/// tie), for both formats.
fn f64_sources() -> Vec<f64> {
    let mut values: Vec<f64> = (0..=255u8)
        .flat_map(|c| [F8E4M3::from_bits(c).to_f64(), F8E5M2::from_bits(c).to_f64()])
        .filter(|v| v.is_finite())
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let mut x = Vec::new();
    for w in values.windows(2) {
        let mid = (w[0] + w[1]) / 2.0;
        for m in [w[0], mid] {
            for k in [0.0, 2f64.powi(-30), -(2f64.powi(-30)), 2f64.powi(-60), -(2f64.powi(-60))] {
                x.push(m + m.abs() * k);
            }
        }
    }
    x.extend([464.0 + 2f64.powi(-30), 480.0, 61440.0 - 2f64.powi(-30), 1e300, -1e300, f64::NAN]);
    x
}

/// `t`'s elements (an f8 tensor) as their codes.
fn codes(t: &Tensor) -> Result<Vec<u8>> {
    Ok(match t.dtype() {
        DType::F8E4M3 => t.to_vec::<F8E4M3>()?.into_iter().map(F8E4M3::to_bits).collect(),
        _ => t.to_vec::<F8E5M2>()?.into_iter().map(F8E5M2::to_bits).collect(),
    })
}

/// A tensor of the codes `c` of dtype `dt`.
fn from_codes(c: &[u8], dt: DType) -> Result<Tensor> {
    match dt {
        DType::F8E4M3 => Tensor::from_vec(c.iter().map(|&b| F8E4M3::from_bits(b)).collect::<Vec<_>>(), &[c.len()]),
        _ => Tensor::from_vec(c.iter().map(|&b| F8E5M2::from_bits(b)).collect::<Vec<_>>(), &[c.len()]),
    }
}

/// Little-endian bytes of `values` (f32 or f64).
fn le_bytes<T: Copy, const N: usize>(values: &[T], to_le: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to_le(v)).collect()
}

/// Writes `bytes` to `dir/name`.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(dir.join(name), bytes)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: f8_oracle DIR")?);
    std::fs::create_dir_all(&dir)?;
    let x32 = f32_sources();
    let x64 = f64_sources();
    write(&dir, "sources_f32.bin", &le_bytes(&x32, f32::to_le_bytes))?;
    write(&dir, "sources_f64.bin", &le_bytes(&x64, f64::to_le_bytes))?;
    let t32 = Tensor::from_vec(x32.clone(), &[x32.len()])?;
    let t64 = Tensor::from_vec(x64.clone(), &[x64.len()])?;
    let all: Vec<u8> = (0..=255).collect();
    let (a, b): (Vec<u8>, Vec<u8>) = (0..=u16::MAX).map(|i| ((i >> 8) as u8, i as u8)).unzip();
    for (name, dt) in [("e4m3", DType::F8E4M3), ("e5m2", DType::F8E5M2)] {
        write(&dir, &format!("cast_f32_{name}.bin"), &codes(&t32.to_dtype(dt)?)?)?;
        write(&dir, &format!("cast_f64_{name}.bin"), &codes(&t64.to_dtype(dt)?)?)?;
        let decoded = from_codes(&all, dt)?.to_dtype(DType::F32)?.to_vec::<f32>()?;
        write(&dir, &format!("decode_{name}.bin"), &le_bytes(&decoded, f32::to_le_bytes))?;
        let (ta, tb) = (from_codes(&a, dt)?, from_codes(&b, dt)?);
        write(&dir, &format!("add_{name}.bin"), &codes(&ta.add(&tb)?)?)?;
        write(&dir, &format!("mul_{name}.bin"), &codes(&ta.mul(&tb)?)?)?;
    }
    println!(
        "f8_oracle: {} f32 and {} f64 sources, 256 codes, 65536 pairs written to {}",
        x32.len(),
        x64.len(),
        dir.display()
    );
    Ok(())
}
