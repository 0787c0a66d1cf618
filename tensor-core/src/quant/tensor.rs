//! Quantized tensors: making them (`empty_quantized`, [`quantize_per_tensor`],
//! [`quantize_per_channel`]), reading them back (`dequantize`, `int_repr`) and their
//! quantizer's accessors (`q_scale`, `q_zero_point`, `q_per_channel_*`).

use super::Quantizer;
use crate::{shape, DType, Device, Error, Result, Storage, Tensor};
use std::sync::Arc;

/// `x` quantized with one `scale` and `zero_point` into `dtype` (qint8, quint8 or qint32),
/// rounding half to even and saturating ([`crate::quant`] has the rule). `x` may be any
/// real dtype (computed in f32) and any view; the result is contiguous.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{quantize_per_tensor, DType, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32, 1.5, 2.5, 300.0, -3.0], &[5]).unwrap();
/// let q = quantize_per_tensor(&x, 1.0, 10, DType::QUInt8).unwrap();
/// assert_eq!(q.int_repr().unwrap().to_vec::<u8>().unwrap(), vec![10, 12, 12, 255, 7]);
/// assert_eq!(q.dequantize().unwrap().to_vec::<f32>().unwrap(), vec![0.0, 2.0, 2.0, 245.0, -3.0]);
/// ```
pub fn quantize_per_tensor(x: &Tensor, scale: f64, zero_point: i64, dtype: DType) -> Result<Tensor> {
    let q = Quantizer::per_tensor(dtype, scale, zero_point)?;
    quantize_with(x, q, "quantize_per_tensor")
}

/// `x` quantized with one scale and zero point per index along `axis`: `scales` (any real
/// dtype) and `zero_points` (any integer dtype) are 1-D tensors of `x.shape()[axis]`
/// entries. Views of the result carry the channel axis along (a transpose moves it, a slice
/// along it slices the scales).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{quantize_per_channel, DType, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let s = Tensor::from_vec(vec![0.5f64, 1.0], &[2]).unwrap();
/// let z = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
/// let q = quantize_per_channel(&w, &s, &z, 0, DType::QInt8).unwrap();
/// assert_eq!(q.int_repr().unwrap().to_vec::<i8>().unwrap(), vec![2, 4, 4, 5]);
/// assert_eq!(q.t().unwrap().q_per_channel_axis().unwrap(), 1);
/// ```
pub fn quantize_per_channel(
    x: &Tensor,
    scales: &Tensor,
    zero_points: &Tensor,
    axis: usize,
    dtype: DType,
) -> Result<Tensor> {
    let op = "quantize_per_channel";
    crate::error::check_dim(op, axis, x.ndim())?;
    let channels = x.shape()[axis];
    for (what, t) in [("scales", scales), ("zero_points", zero_points)] {
        if t.shape() != [channels] {
            return Err(Error::shape(
                op,
                format!(
                    "{what} must be 1-D with one entry per index of dim {axis} ({channels} for shape {:?}), got shape {:?}",
                    x.shape(),
                    t.shape()
                ),
            ));
        }
    }
    if !zero_points.dtype().is_int() {
        return Err(Error::DType {
            op,
            msg: format!("zero_points must have an integer dtype, got {}", zero_points.dtype()),
        });
    }
    let s = scales.to_device(Device::Cpu)?.to_dtype(DType::F64)?.to_vec::<f64>()?;
    let z = zero_points.to_device(Device::Cpu)?.to_dtype(DType::I64)?.to_vec::<i64>()?;
    quantize_with(x, Quantizer::per_channel(dtype, axis, s, z)?, op)
}

fn quantize_with(x: &Tensor, q: Quantizer, op: &'static str) -> Result<Tensor> {
    if x.dtype().is_quantized() || x.dtype() == DType::Bool {
        return Err(Error::DType { op, msg: format!("quantizes a real tensor (integer or float), got {}", x.dtype()) });
    }
    let out = Tensor::empty_quantized_for(op, x.shape(), q, x.device())?;
    out.copy_(x).map_err(|e| e.renamed(op))?;
    Ok(out)
}

impl Tensor {
    /// A quantized tensor of unspecified integers with `quantizer` (its dtype and scale(s)).
    /// Use it as the output of an op's `_out` form to choose the output's scale and zero
    /// point (PyTorch's `quantized::add(qa, qb, scale, zero_point)`).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{DType, Device, Quantizer, Tensor};
    /// let q = Quantizer::per_tensor(DType::QInt8, 0.1, 0).unwrap();
    /// let t = Tensor::empty_quantized(&[2, 3], &q, Device::Cpu).unwrap();
    /// t.fill_(0.26).unwrap(); // quantized: 3
    /// assert_eq!(t.int_repr().unwrap().to_vec::<i8>().unwrap(), vec![3; 6]);
    /// ```
    pub fn empty_quantized(shape: &[usize], quantizer: &Quantizer, device: Device) -> Result<Tensor> {
        Tensor::empty_quantized_for("empty_quantized", shape, quantizer.clone(), device)
    }

    pub(crate) fn empty_quantized_for(
        op: &'static str,
        shape: &[usize],
        quantizer: Quantizer,
        device: Device,
    ) -> Result<Tensor> {
        check_fits(op, shape, &quantizer)?;
        let repr = quantizer.dtype().repr();
        let numel = shape::checked_numel(op, shape, repr)?;
        let storage = Storage::new_lazy_uninit(repr, numel, device)?;
        let mut t = Tensor::from_storage(storage, shape)?;
        t.quant = Some(Arc::new(quantizer));
        Ok(t)
    }

    /// A new tensor of this one's shape, dtype and quantizer on `device`.
    pub(crate) fn empty_like_for(&self, op: &'static str, device: Device) -> Result<Tensor> {
        match &self.quant {
            None => Tensor::empty_for(op, self.shape(), self.dtype(), device),
            Some(q) => Tensor::empty_quantized_for(op, self.shape(), (**q).clone(), device),
        }
    }

    /// This tensor's integers (of `q`'s `repr` dtype, plain) read as quantized with `q`,
    /// sharing the storage (crate use: loading files).
    #[cfg(feature = "safetensors")]
    pub(crate) fn quantized_view(&self, q: Quantizer) -> Result<Tensor> {
        check_fits("quantized_view", self.shape(), &q)?;
        let mut t = self.clone();
        t.quant = Some(Arc::new(q));
        Ok(t)
    }

    /// The quantizer of a quantized tensor.
    pub fn quantizer(&self) -> Option<&Quantizer> {
        self.quant.as_deref()
    }

    /// This quantized tensor's values as a new f32 tensor (`(q - zero_point) * scale`).
    pub fn dequantize(&self) -> Result<Tensor> {
        self.quantized_only("dequantize")?;
        let out = Tensor::empty_for("dequantize", self.shape(), DType::F32, self.device())?;
        out.copy_(self).map_err(|e| e.renamed("dequantize"))?;
        Ok(out)
    }

    /// A new tensor of this quantized tensor's stored integers (i8, u8 or i32).
    pub fn int_repr(&self) -> Result<Tensor> {
        self.quantized_only("int_repr")?;
        self.repr_view().deep_clone()
    }

    /// The same elements as the stored integers, sharing the storage (crate use: byte-level
    /// copies and fills of quantized tensors).
    pub(crate) fn repr_view(&self) -> Tensor {
        let mut t = self.clone();
        t.quant = None;
        t
    }

    /// The scale of a per-tensor quantized tensor.
    pub fn q_scale(&self) -> Result<f64> {
        self.per_tensor_only("q_scale").map(|q| q.scale(0))
    }

    /// The zero point of a per-tensor quantized tensor.
    pub fn q_zero_point(&self) -> Result<i64> {
        self.per_tensor_only("q_zero_point").map(|q| q.zero_point(0))
    }

    /// The per-channel scales (f64, one per index of the channel axis).
    pub fn q_per_channel_scales(&self) -> Result<Tensor> {
        let q = self.per_channel_only("q_per_channel_scales")?;
        Tensor::from_vec((0..q.channels()).map(|c| q.scale(c)).collect(), &[q.channels()])
    }

    /// The per-channel zero points (i64).
    pub fn q_per_channel_zero_points(&self) -> Result<Tensor> {
        let q = self.per_channel_only("q_per_channel_zero_points")?;
        Tensor::from_vec((0..q.channels()).map(|c| q.zero_point(c)).collect(), &[q.channels()])
    }

    /// The channel axis of a per-channel quantized tensor.
    pub fn q_per_channel_axis(&self) -> Result<usize> {
        let q = self.per_channel_only("q_per_channel_axis")?;
        Ok(q.axis().unwrap_or(0))
    }

    /// `Err` naming `op` for a quantized tensor (paths that have no quantized form yet:
    /// the sparse layouts).
    pub(crate) fn not_quantized(&self, op: &'static str) -> Result<()> {
        match &self.quant {
            None => Ok(()),
            Some(q) => Err(Error::DType {
                op,
                msg: format!("{op} does not take a quantized tensor ({q}): dequantize() first"),
            }),
        }
    }

    fn quantized_only(&self, op: &'static str) -> Result<&Quantizer> {
        self.quant.as_deref().ok_or_else(|| Error::DType {
            op,
            msg: format!("needs a quantized tensor (qint8, quint8, qint32), got {}", self.dtype()),
        })
    }

    fn per_tensor_only(&self, op: &'static str) -> Result<&Quantizer> {
        let q = self.quantized_only(op)?;
        if q.axis().is_some() {
            return Err(Error::invalid(op, format!("the tensor is quantized per channel ({q}): use q_per_channel_*")));
        }
        Ok(q)
    }

    fn per_channel_only(&self, op: &'static str) -> Result<&Quantizer> {
        let q = self.quantized_only(op)?;
        if q.axis().is_none() {
            return Err(Error::invalid(
                op,
                format!("the tensor is quantized per tensor ({q}): use q_scale/q_zero_point"),
            ));
        }
        Ok(q)
    }
}

/// A per-channel quantizer's axis is a dim of `shape` with one index per channel.
fn check_fits(op: &'static str, shape: &[usize], q: &Quantizer) -> Result<()> {
    if let Some(axis) = q.axis()
        && (axis >= shape.len() || shape[axis] != q.channels())
    {
        return Err(Error::shape(
            op,
            format!(
                "a per-channel quantizer along dim {axis} with {} channels does not fit shape {shape:?}",
                q.channels()
            ),
        ));
    }
    Ok(())
}
