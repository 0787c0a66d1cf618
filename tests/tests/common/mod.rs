//! Shared helpers of the integration tests: deterministic values, layouts, an independent
//! scalar reference model, and comparison with per-dtype tolerances.
#![allow(dead_code)]

use half::{bf16, f16};
use tensor_ops::prelude::*;
use tensor_ops::{F8E4M3, F8E5M2};

/// A logical value read back from a tensor, widened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum V {
    B(bool),
    I(i128),
    F(f64),
}

/// Reads any tensor as widened values in logical order.
pub fn values(t: &Tensor) -> Vec<V> {
    match t.dtype() {
        DType::Bool => t.to_vec::<bool>().unwrap().into_iter().map(V::B).collect(),
        DType::U8 => t.to_vec::<u8>().unwrap().into_iter().map(|x| V::I(x as i128)).collect(),
        DType::I8 => t.to_vec::<i8>().unwrap().into_iter().map(|x| V::I(x as i128)).collect(),
        DType::I16 => t.to_vec::<i16>().unwrap().into_iter().map(|x| V::I(x as i128)).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(|x| V::I(x as i128)).collect(),
        DType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(|x| V::I(x as i128)).collect(),
        DType::F8E4M3 => t.to_vec::<F8E4M3>().unwrap().into_iter().map(|x| V::F(x.to_f64())).collect(),
        DType::F8E5M2 => t.to_vec::<F8E5M2>().unwrap().into_iter().map(|x| V::F(x.to_f64())).collect(),
        DType::F16 => t.to_vec::<f16>().unwrap().into_iter().map(|x| V::F(x.to_f64())).collect(),
        DType::BF16 => t.to_vec::<bf16>().unwrap().into_iter().map(|x| V::F(x.to_f64())).collect(),
        DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(|x| V::F(x as f64)).collect(),
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(V::F).collect(),
        // A quantized tensor's values (f32).
        DType::QInt8 | DType::QUInt8 | DType::QInt32 => values(&t.dequantize().unwrap()),
    }
}

/// Builds a contiguous tensor of `dtype` from widened values (values must be representable).
pub fn from_values(vals: &[V], shape: &[usize], dtype: DType) -> Tensor {
    fn f(v: &V) -> f64 {
        match *v {
            V::B(b) => b as u8 as f64,
            V::I(i) => i as f64,
            V::F(x) => x,
        }
    }
    fn i(v: &V) -> i128 {
        match *v {
            V::B(b) => b as i128,
            V::I(i) => i,
            V::F(x) => x as i128,
        }
    }
    match dtype {
        DType::Bool => Tensor::from_vec(vals.iter().map(|v| i(v) != 0).collect::<Vec<_>>(), shape),
        DType::U8 => Tensor::from_vec(vals.iter().map(|v| i(v) as u8).collect::<Vec<_>>(), shape),
        DType::I8 => Tensor::from_vec(vals.iter().map(|v| i(v) as i8).collect::<Vec<_>>(), shape),
        DType::I16 => Tensor::from_vec(vals.iter().map(|v| i(v) as i16).collect::<Vec<_>>(), shape),
        DType::I32 => Tensor::from_vec(vals.iter().map(|v| i(v) as i32).collect::<Vec<_>>(), shape),
        DType::I64 => Tensor::from_vec(vals.iter().map(|v| i(v) as i64).collect::<Vec<_>>(), shape),
        DType::F8E4M3 => Tensor::from_vec(vals.iter().map(|v| F8E4M3::from_f64(f(v))).collect::<Vec<_>>(), shape),
        DType::F8E5M2 => Tensor::from_vec(vals.iter().map(|v| F8E5M2::from_f64(f(v))).collect::<Vec<_>>(), shape),
        DType::F16 => Tensor::from_vec(vals.iter().map(|v| f16::from_f64(f(v))).collect::<Vec<_>>(), shape),
        DType::BF16 => Tensor::from_vec(vals.iter().map(|v| bf16::from_f64(f(v))).collect::<Vec<_>>(), shape),
        DType::F32 => Tensor::from_vec(vals.iter().map(|v| f(v) as f32).collect::<Vec<_>>(), shape),
        DType::F64 => Tensor::from_vec(vals.iter().map(f).collect::<Vec<_>>(), shape),
        // Scale 1, zero point 0: integers are stored as they are.
        DType::QInt8 | DType::QUInt8 | DType::QInt32 => {
            let x = Tensor::from_vec(vals.iter().map(|v| f(v) as f32).collect::<Vec<_>>(), shape).unwrap();
            tensor_ops::quantize_per_tensor(&x, 1.0, 0, dtype)
        }
    }
    .unwrap()
}

/// A small deterministic generator (splitmix64).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` values of `dtype`: a mix of ordinary values and the dtype's edge cases.
pub fn gen_values(dtype: DType, n: usize, seed: u64) -> Vec<V> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let r = rng.next();
        let v = match dtype {
            DType::Bool => V::B(r & 1 == 1),
            // Quantized (scale 1, zero point 0 in these helpers): small integers and extremes.
            d if d.is_quantized() => {
                let (lo, hi) = d.quant_range().unwrap();
                match k % 7 {
                    0 => V::I(lo as i128),
                    1 => V::I(hi as i128),
                    _ => V::I((r % 19) as i128 - if lo < 0 { 9 } else { 0 }),
                }
            }
            d if d.is_int() => {
                let (lo, hi): (i128, i128) = match d {
                    DType::U8 => (0, 255),
                    DType::I8 => (-128, 127),
                    DType::I16 => (i16::MIN as i128, i16::MAX as i128),
                    DType::I32 => (i32::MIN as i128, i32::MAX as i128),
                    _ => (i64::MIN as i128, i64::MAX as i128),
                };
                match k % 7 {
                    0 => V::I(lo),
                    1 => V::I(hi),
                    2 => V::I(lo.max(-1)),
                    _ => V::I((r % 19) as i128 - if lo < 0 { 9 } else { 0 }),
                }
            }
            d => {
                let x = (rng.unit() - 0.5) * 8.0;
                let x = match k % 11 {
                    0 => 0.0,
                    1 => -0.0,
                    2 if k % 3 == 0 => f64::NAN,
                    3 if k % 4 == 0 => f64::INFINITY,
                    4 if k % 5 == 0 => f64::NEG_INFINITY,
                    _ => x,
                };
                // Round to the dtype so the reference sees exactly what the tensor holds.
                V::F(match d {
                    DType::F8E4M3 => F8E4M3::from_f64(x).to_f64(),
                    DType::F8E5M2 => F8E5M2::from_f64(x).to_f64(),
                    DType::F16 => f16::from_f64(x).to_f64(),
                    DType::BF16 => bf16::from_f64(x).to_f64(),
                    DType::F32 => x as f32 as f64,
                    _ => x,
                })
            }
        };
        out.push(v);
    }
    out
}

/// A named way to lay out a tensor of a given logical shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lay {
    Contiguous,
    /// Last two dims transposed in memory.
    Transposed,
    /// Dims stored in reverse order (a permuted view).
    Permuted,
    /// Every other element of the last dim of a twice-as-wide buffer.
    Stepped,
    /// First dim flipped (negative stride).
    Flipped,
    /// Starts one element into its storage (misaligned for SIMD).
    Offset,
}

pub const LAYOUTS: [Lay; 6] =
    [Lay::Contiguous, Lay::Transposed, Lay::Permuted, Lay::Stepped, Lay::Flipped, Lay::Offset];

/// An uninitialised tensor of `shape` and `dtype` laid out as `lay`.
pub fn empty_with(lay: Lay, shape: &[usize], dtype: DType) -> Tensor {
    let n = shape.len();
    match lay {
        Lay::Contiguous => empty_any(shape, dtype).unwrap(),
        Lay::Transposed if n >= 2 => {
            let mut s = shape.to_vec();
            s.swap(n - 1, n - 2);
            empty_any(&s, dtype).unwrap().transpose(n - 1, n - 2).unwrap()
        }
        Lay::Permuted if n >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let perm: Vec<usize> = (0..n).rev().collect();
            empty_any(&rev, dtype).unwrap().permute(&perm).unwrap()
        }
        Lay::Stepped if n >= 1 => {
            let mut s = shape.to_vec();
            s[n - 1] *= 2;
            empty_any(&s, dtype).unwrap().slice(n - 1, 0, s[n - 1], 2).unwrap()
        }
        Lay::Flipped if n >= 1 => empty_any(shape, dtype).unwrap().flip(0).unwrap(),
        Lay::Offset => {
            let numel: usize = shape.iter().product();
            let flat = empty_any(&[numel + 1], dtype).unwrap();
            let spec: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
            flat.narrow(0, 1, numel).unwrap().view(&spec).unwrap()
        }
        _ => empty_any(shape, dtype).unwrap(),
    }
}

/// An uninitialised contiguous tensor of any dtype: a quantized one with scale 1 and zero
/// point 0 (its values are its integers).
pub fn empty_any(shape: &[usize], dtype: DType) -> tensor_ops::Result<Tensor> {
    empty_on(shape, dtype, Device::Cpu)
}

/// [`empty_any`] on `device`.
pub fn empty_on(shape: &[usize], dtype: DType, device: Device) -> tensor_ops::Result<Tensor> {
    if dtype.is_quantized() {
        let q = tensor_ops::Quantizer::per_tensor(dtype, 1.0, 0)?;
        return Tensor::empty_quantized(shape, &q, device);
    }
    Tensor::empty(shape, dtype, device)
}

/// Zeros of any dtype on `device` (a quantized one as [`empty_any`]).
#[allow(dead_code)]
pub fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> tensor_ops::Result<Tensor> {
    let t = empty_on(shape, dtype, device)?;
    t.fill_(0)?;
    Ok(t)
}

/// A tensor holding `vals` (logical order) in layout `lay`.
/// Deterministic values of `dtype` (`gen_values`) laid out as `lay`.
pub fn input(dtype: DType, shape: &[usize], lay: Lay, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    make(&gen_values(dtype, n, seed), shape, dtype, lay)
}

/// Params for a generic op test: 0.25, 3.0, 0.25, ... (converted to each param's type).
pub fn params_for(spec: &tensor_core::registry::OpSpec) -> Vec<Scalar> {
    spec.params.iter().enumerate().map(|(i, _)| [Scalar::Float(0.25), Scalar::Float(3.0)][i % 2]).collect()
}

pub fn make(vals: &[V], shape: &[usize], dtype: DType, lay: Lay) -> Tensor {
    let c = from_values(vals, shape, dtype);
    let t = empty_with(lay, shape, dtype);
    t.copy_(&c).unwrap();
    assert_close(&values(&t), &values(&c), dtype, true, &format!("layout {lay:?} construction"));
    t
}

/// Fills with a poison value so unwritten elements show up.
pub fn poison(t: &Tensor) {
    let p = match t.dtype() {
        DType::Bool => Scalar::Bool(true),
        d if d.is_float() => Scalar::Float(f64::NAN),
        _ => Scalar::Int(0x5A),
    };
    t.fill_(p).unwrap();
}

/// Relative and absolute tolerance for inexact float results of `dtype`.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F64 => (1e-12, 1e-13),
        DType::F32 => (4e-6, 1e-6),
        DType::F16 => (2e-3, 1e-3),
        DType::BF16 => (1.6e-2, 1e-2),
        // one ulp of 3 (E4M3) or 2 (E5M2) mantissa bits, and the smallest subnormals
        DType::F8E4M3 => (0.13, 4e-3),
        DType::F8E5M2 => (0.26, 1e-4),
        _ => (0.0, 0.0),
    }
}

/// Rounds a widened reference value to what a tensor of `dtype` can hold.
pub fn round_to(v: V, dtype: DType) -> V {
    match (v, dtype) {
        (V::F(x), DType::F8E4M3) => V::F(F8E4M3::from_f64(x).to_f64()),
        (V::F(x), DType::F8E5M2) => V::F(F8E5M2::from_f64(x).to_f64()),
        (V::F(x), DType::F16) => V::F(f16::from_f64(x).to_f64()),
        (V::F(x), DType::BF16) => V::F(bf16::from_f64(x).to_f64()),
        (V::F(x), DType::F32) => V::F(x as f32 as f64),
        (v, _) => v,
    }
}

/// Asserts `got` matches `want` (exact, or within the dtype's tolerance for floats when
/// `exact` is false; NaN matches NaN; ±inf must match exactly).
pub fn assert_close(got: &[V], want: &[V], dtype: DType, exact: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let (rt, at) = tolerance(dtype);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match (g, w) {
            (V::F(g), V::F(w)) => {
                if w.is_nan() {
                    g.is_nan()
                } else if w.is_infinite() || exact && matches!(dtype, DType::F32 | DType::F64) {
                    g == w
                } else if exact {
                    // f16/bf16/f8 compute in f32 then round: at most one ulp from the exact
                    // value (the f8 bound also covers their subnormals' absolute ulp).
                    match dtype {
                        DType::F16 => (g - w).abs() <= w.abs() * 1e-3,
                        DType::F8E4M3 => (g - w).abs() <= w.abs() * 0.126 + 2f64.powi(-9),
                        DType::F8E5M2 => (g - w).abs() <= w.abs() * 0.251 + 2f64.powi(-16),
                        _ => (g - w).abs() <= w.abs() * 8e-3,
                    }
                } else {
                    (g - w).abs() <= at + rt * w.abs()
                }
            }
            (g, w) => g == w,
        };
        assert!(ok, "{what}: element {i}: got {g:?}, want {w:?} ({dtype})");
    }
}

/// Every (op, dtype, row) registered for `Device::Cuda` whose kernel is of kind `K`
/// (`CudaMapKernel`, `CudaReduceKernel`), sorted by op name and dtype.
pub fn cuda_rows_of<K: 'static>(
) -> Vec<(&'static tensor_core::registry::OpSpec, DType, &'static tensor_core::registry::KernelRow)> {
    use tensor_core::registry::registry;
    use tensor_core::DeviceKind;
    let mut v = Vec::new();
    for (op, device, layout, dtypes) in registry().entries() {
        // (the rows under the sparse layouts hold the strided rows' kernels)
        if device != DeviceKind::Cuda || layout != tensor_core::Layout::Strided {
            continue;
        }
        let set = registry().row_set(op, device, layout).unwrap();
        for d in dtypes {
            let row = set.get(d).unwrap();
            if row.kernel.as_any().is::<K>() {
                v.push((set.op, d, row));
            }
        }
    }
    v.sort_by_key(|(op, d, _)| (op.name, *d));
    v
}

/// The raw bits of every element in logical order (for bit-for-bit comparisons).
pub fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F8E4M3 => t.to_vec::<F8E4M3>().unwrap().into_iter().map(|x| x.to_bits() as u64).collect(),
        DType::F8E5M2 => t.to_vec::<F8E5M2>().unwrap().into_iter().map(|x| x.to_bits() as u64).collect(),
        DType::F16 => t.to_vec::<f16>().unwrap().into_iter().map(|x| x.to_bits() as u64).collect(),
        DType::BF16 => t.to_vec::<bf16>().unwrap().into_iter().map(|x| x.to_bits() as u64).collect(),
        DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(|x| x.to_bits() as u64).collect(),
        DType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        // The stored integers.
        d if d.is_quantized() => bits(&t.int_repr().unwrap()),
        _ => values(t)
            .into_iter()
            .map(|v| match v {
                V::B(b) => b as u64,
                V::I(i) => i as u64,
                V::F(f) => f.to_bits(),
            })
            .collect(),
    }
}
