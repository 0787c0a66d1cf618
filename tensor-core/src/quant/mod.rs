//! Affine quantization: the [`Quantizer`] a tensor of a quantized dtype carries, the one
//! rounding rule ([`Affine`]), and how views carry a per-channel quantizer along.
//!
//! A quantized tensor stores integers `q` of its dtype's [`DType::repr`] (`i8`, `u8`,
//! `i32`); its values are `(q - zero_point) * scale`. **The rule**, PyTorch's (checked
//! against PyTorch 2.15 on 12 M values, `tests/tests/quantized.rs` keeps its cases):
//!
//! - quantize: `q = clamp(round_half_even(x * (1 / scale)) + zero_point, qmin, qmax)`,
//!   computed in f32 (`1 / scale` rounded to f32 once); NaN gives `qmax` for qint8/quint8
//!   and `i32::MIN` for qint32, as PyTorch's kernels do; ±∞ saturate.
//! - dequantize: `(q - zero_point) * scale` in f32 (one rounding).
//!
//! Elementwise ops on quantized tensors dequantize each input as it is loaded, compute in
//! f32 and quantize once into the output's quantizer: no f32 tensor in memory.

mod reference;
mod tensor;
mod view;

pub use tensor::{quantize_per_channel, quantize_per_tensor};

use crate::{DType, Error, Result};
use std::sync::Arc;

/// How a quantized tensor's integers map to values.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{DType, Quantizer};
/// let q = Quantizer::per_tensor(DType::QUInt8, 0.5, 10).unwrap();
/// assert_eq!((q.dtype(), q.scale(0), q.zero_point(0)), (DType::QUInt8, 0.5, 10));
/// assert!(Quantizer::per_tensor(DType::QUInt8, 0.5, 300).is_err()); // zero point out of 0..=255
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Quantizer {
    /// One scale and zero point for every element.
    PerTensor {
        /// The quantized dtype.
        dtype: DType,
        /// The step between neighbouring integers (> 0).
        scale: f64,
        /// The integer that stands for 0.0.
        zero_point: i64,
    },
    /// One scale and zero point per index along `axis`.
    PerChannel {
        /// The quantized dtype.
        dtype: DType,
        /// The channel dim.
        axis: usize,
        /// Per channel: the step (> 0).
        scales: Arc<[f64]>,
        /// Per channel: the integer that stands for 0.0.
        zero_points: Arc<[i64]>,
    },
}

impl Quantizer {
    /// A per-tensor quantizer, checked: `dtype` is quantized, `scale` finite and > 0 (also
    /// as f32), `zero_point` within the dtype's integers.
    pub fn per_tensor(dtype: DType, scale: f64, zero_point: i64) -> Result<Quantizer> {
        check_params("quantize_per_tensor", dtype, scale, zero_point)?;
        Ok(Quantizer::PerTensor { dtype, scale, zero_point })
    }

    /// A per-channel quantizer along `axis`, checked like [`Quantizer::per_tensor`] for
    /// every channel; `scales` and `zero_points` have one entry per channel.
    pub fn per_channel(dtype: DType, axis: usize, scales: Vec<f64>, zero_points: Vec<i64>) -> Result<Quantizer> {
        let op = "quantize_per_channel";
        if scales.len() != zero_points.len() {
            return Err(Error::shape(
                op,
                format!("{} scales but {} zero points: give one of each per channel", scales.len(), zero_points.len()),
            ));
        }
        for (&s, &z) in scales.iter().zip(&zero_points) {
            check_params(op, dtype, s, z)?;
        }
        Ok(Quantizer::PerChannel { dtype, axis, scales: scales.into(), zero_points: zero_points.into() })
    }

    /// The quantized dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Quantizer::PerTensor { dtype, .. } | Quantizer::PerChannel { dtype, .. } => *dtype,
        }
    }

    /// The channel axis of a per-channel quantizer.
    pub fn axis(&self) -> Option<usize> {
        match self {
            Quantizer::PerTensor { .. } => None,
            Quantizer::PerChannel { axis, .. } => Some(*axis),
        }
    }

    /// Channels (1 for a per-tensor quantizer).
    pub fn channels(&self) -> usize {
        match self {
            Quantizer::PerTensor { .. } => 1,
            Quantizer::PerChannel { scales, .. } => scales.len(),
        }
    }

    /// The scale of channel `c` (any `c` for a per-tensor quantizer). `c` < `channels()`.
    pub fn scale(&self, c: usize) -> f64 {
        match self {
            Quantizer::PerTensor { scale, .. } => *scale,
            Quantizer::PerChannel { scales, .. } => scales[c],
        }
    }

    /// The zero point of channel `c` (any `c` for a per-tensor quantizer).
    pub fn zero_point(&self, c: usize) -> i64 {
        match self {
            Quantizer::PerTensor { zero_point, .. } => *zero_point,
            Quantizer::PerChannel { zero_points, .. } => zero_points[c],
        }
    }

    /// The per-tensor quantizer of channel `c` (itself for a per-tensor quantizer).
    pub fn channel(&self, c: usize) -> Quantizer {
        Quantizer::PerTensor { dtype: self.dtype(), scale: self.scale(c), zero_point: self.zero_point(c) }
    }

    /// The arithmetic of channel `c`.
    pub fn affine(&self, c: usize) -> Affine {
        Affine::new(self.dtype(), self.scale(c), self.zero_point(c))
    }
}

impl std::fmt::Display for Quantizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quantizer::PerTensor { dtype, scale, zero_point } => {
                write!(f, "{dtype} per tensor (scale {scale}, zero point {zero_point})")
            }
            Quantizer::PerChannel { dtype, axis, scales, zero_points } => {
                write!(f, "{dtype} per channel along dim {axis} (scales {scales:?}, zero points {zero_points:?})")
            }
        }
    }
}

fn check_params(op: &'static str, dtype: DType, scale: f64, zero_point: i64) -> Result<()> {
    let Some((lo, hi)) = dtype.quant_range() else {
        return Err(Error::DType {
            op,
            msg: format!("{dtype} is not a quantized dtype (valid: qint8, quint8, qint32)"),
        });
    };
    if !(scale.is_finite() && scale > 0.0 && (scale as f32) > 0.0 && (scale as f32).is_finite()) {
        return Err(Error::invalid(op, format!("scale must be finite and > 0 (also as f32), got {scale}")));
    }
    if zero_point < lo || zero_point > hi {
        return Err(Error::invalid(op, format!("zero point {zero_point} is outside {dtype}'s {lo}..={hi}")));
    }
    Ok(())
}

/// The f32 arithmetic of one scale and zero point: what kernels apply on load and store.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{quant::Affine, DType};
/// let a = Affine::new(DType::QInt8, 1.0, 0);
/// assert_eq!([0.5, 1.5, 2.5, 300.0, f32::NAN].map(|x| a.quantize(x)), [0.0, 2.0, 2.0, 127.0, 127.0]);
/// assert_eq!(a.dequantize(-3.0), -3.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    /// The scale, as f32.
    pub scale: f32,
    /// `1 / scale` rounded to f32 (quantizing multiplies by it, as PyTorch does).
    pub inv_scale: f32,
    /// The zero point, as f32 (exact for qint8/quint8; qint32's are rounded).
    pub zero_point: f32,
    /// The smallest stored integer, as f32.
    pub qmin: f32,
    /// The largest stored integer as f32 (qint32's rounds up to 2³¹: its f32 → i32 store
    /// saturates to `i32::MAX`).
    pub qmax: f32,
    /// What NaN quantizes to.
    pub nan: f32,
}

impl Affine {
    /// The arithmetic of `scale` and `zero_point` for the quantized `dtype`.
    pub fn new(dtype: DType, scale: f64, zero_point: i64) -> Affine {
        let (lo, hi) = dtype.quant_range().unwrap_or((i32::MIN as i64, i32::MAX as i64));
        let scale = scale as f32;
        let nan = if dtype == DType::QInt32 { lo as f32 } else { hi as f32 };
        Affine { scale, inv_scale: 1.0 / scale, zero_point: zero_point as f32, qmin: lo as f32, qmax: hi as f32, nan }
    }

    /// The stored integer (as an integral f32 within `qmin..=qmax`) for `x`.
    #[inline(always)]
    pub fn quantize(&self, x: f32) -> f32 {
        let v = (x * self.inv_scale).round_ties_even() + self.zero_point;
        if v.is_nan() {
            self.nan
        } else {
            v.clamp(self.qmin, self.qmax)
        }
    }

    /// The value of the stored integer `q` (given as f32).
    #[inline(always)]
    pub fn dequantize(&self, q: f32) -> f32 {
        (q - self.zero_point) * self.scale
    }

    /// [`Affine::quantize`] stored as a byte: the bits of the i8 (`signed`: qint8) or u8
    /// (quint8) integer, for an affine of that dtype.
    ///
    /// ```
    /// use tensor_core::{quant::Affine, DType};
    /// let a = Affine::new(DType::QInt8, 0.5, 0);
    /// assert_eq!(a.quantize_byte(-1.0, true), (-2i8) as u8);
    /// assert_eq!(a.quantize_byte(f32::NAN, true), 127);
    /// assert_eq!(Affine::new(DType::QUInt8, 1.0, 10).quantize_byte(300.0, false), 255);
    /// ```
    #[inline(always)]
    pub fn quantize_byte(&self, x: f32, signed: bool) -> u8 {
        // integral and within the byte's range (the affine's qmin..=qmax)
        let q = self.quantize(x);
        if signed {
            q as i8 as u8
        } else {
            q as u8
        }
    }

    /// The value of a stored byte: [`Affine::dequantize`] of its i8 (`signed`) or u8
    /// integer.
    ///
    /// ```
    /// use tensor_core::{quant::Affine, DType};
    /// let a = Affine::new(DType::QInt8, 0.5, 0);
    /// assert_eq!(a.dequantize_byte((-2i8) as u8, true), -1.0);
    /// ```
    #[inline(always)]
    pub fn dequantize_byte(&self, b: u8, signed: bool) -> f32 {
        self.dequantize(if signed { b as i8 as f32 } else { b as f32 })
    }
}

/// What a map's operands need on load or store: per operand (the output first, then the
/// inputs), the arithmetic of its quantizer, `None` for a plain operand. Carried by
/// [`crate::registry::CallExtra::Quantized`].
pub type OperandAffines = [Option<Affine>; crate::MAX_INPUTS + 1];

pub(crate) use view::ViewChange;
