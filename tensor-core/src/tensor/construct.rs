//! Making tensors: from host data, filled, ranges, scalars.

use super::Tensor;
use crate::{shape, DType, Device, Element, Error, Result, Scalar, Storage};

impl Tensor {
    /// Adopts `data` (row-major) without copying.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    /// assert_eq!(t.shape(), &[2, 3]);
    /// assert!(Tensor::from_vec(vec![1i64, 2], &[3]).is_err());
    /// ```
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let numel = shape::checked_numel("from_vec", shape, T::DTYPE)?;
        if numel != data.len() {
            return Err(Error::shape(
                "from_vec",
                format!("shape {shape:?} has {numel} elements but the vector holds {}", data.len()),
            ));
        }
        Tensor::from_storage(Storage::from_vec(data), shape)
    }

    /// Copies `data` (row-major) into a new tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_slice(&[1u8, 2, 3], &[3]).unwrap();
    /// assert_eq!(t.to_vec::<u8>().unwrap(), vec![1, 2, 3]);
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        let numel = shape::checked_numel("from_slice", shape, T::DTYPE)?;
        if numel != data.len() {
            return Err(Error::shape(
                "from_slice",
                format!("shape {shape:?} has {numel} elements but the slice holds {}", data.len()),
            ));
        }
        let mut v = Vec::new();
        v.try_reserve_exact(numel).map_err(|_| {
            Error::out_of_memory(
                "from_slice",
                numel * T::DTYPE.size(),
                Device::Cpu,
                format!("a {shape:?} {} tensor", T::DTYPE),
            )
        })?;
        v.extend_from_slice(data);
        Tensor::from_vec(v, shape)
    }

    /// A tensor of unspecified values whose buffer is allocated lazily at first access: its
    /// elements are then zero, or whatever a recycled block held (never undefined memory;
    /// `Bool` elements read as `false`). Use [`Tensor::zeros`] for zeros.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::empty(&[1000, 1000], DType::F64, Device::Cpu).unwrap();
    /// assert!(!t.storage().is_allocated());
    /// ```
    pub fn empty(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::empty_for("empty", shape, dtype, device)
    }

    /// [`Tensor::empty`] with `op` named in its errors (an op's new output).
    pub(crate) fn empty_for(op: &'static str, shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        if dtype.is_quantized() {
            return Err(Error::DType {
                op,
                msg: format!(
                    "a {dtype} tensor needs its quantizer: use Tensor::empty_quantized(shape, &Quantizer::per_tensor({dtype}, scale, zero_point)?, device), or quantize_per_tensor"
                ),
            });
        }
        let numel = shape::checked_numel(op, shape, dtype)?;
        let storage = Storage::new_lazy_uninit(dtype, numel, device)?;
        // `numel` elements fit `storage` (made for them) and isize (checked): every offset
        // of the dense strides lies in it.
        Ok(Tensor::from_parts_unchecked(storage, shape::Dims::from_slice(shape), shape::dense_strides(shape), 0))
    }

    /// [`Tensor::empty_for`] with the buffer allocated now, and its base address: the
    /// caller, holding the only handle, may write the elements through it without the
    /// storage's lock until it shares the tensor (see `Storage::new_uninit_now`).
    pub(crate) fn empty_now_for(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<(Tensor, *mut u8)> {
        let numel = shape::checked_numel(op, shape, dtype)?;
        let (storage, base) = Storage::new_uninit_now(dtype, numel, device)
            .map_err(|e| e.allocating(op, || format!("a {shape:?} {dtype} tensor")))?;
        // As in `empty_for`: the dense strides of `shape` stay inside `numel` elements.
        let t = Tensor::from_parts_unchecked(storage, shape::Dims::from_slice(shape), shape::dense_strides(shape), 0);
        Ok((t, base))
    }

    /// A tensor filled with `value` cast to `dtype`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::full(&[2], 2.7, DType::I32, Device::Cpu).unwrap();
    /// assert_eq!(t.to_vec::<i32>().unwrap(), vec![2, 2]);
    /// ```
    pub fn full(shape: &[usize], value: impl Into<Scalar>, dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full_named("full", shape, value.into(), dtype, device)
    }

    /// `full`, with shape errors naming `op`.
    fn full_named(op: &'static str, shape: &[usize], value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
        let numel = shape::checked_numel(op, shape, dtype)?;
        let t = Tensor::from_storage(Storage::new_lazy_uninit(dtype, numel, device)?, shape)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// Zeros.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[2], DType::BF16, Device::Cpu).unwrap();
    /// assert_eq!(t.to_vec::<half::bf16>().unwrap(), vec![half::bf16::ZERO; 2]);
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full_named("zeros", shape, Scalar::Int(0), dtype, device)
    }

    /// Ones.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::ones(&[2], DType::Bool, Device::Cpu).unwrap();
    /// assert_eq!(t.to_vec::<bool>().unwrap(), vec![true, true]);
    /// ```
    pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full_named("ones", shape, Scalar::Int(1), dtype, device)
    }

    /// A 0-dim tensor holding `value` cast to `dtype`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType};
    /// let s = Tensor::scalar(3, DType::F32).unwrap();
    /// assert_eq!(s.ndim(), 0);
    /// assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0]);
    /// ```
    pub fn scalar(value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        Tensor::full(&[], value, dtype, Device::Cpu)
    }

    /// `[start, start + step, ...)` up to (excluding) `end`, like `torch.arange`.
    /// Integer dtypes step in exact integer arithmetic when all three values are integers
    /// (no overflow on the way: `arange(i64::MIN, i64::MAX, i64::MAX)` is
    /// `[i64::MIN, -1, i64::MAX - 1]`).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::arange(0, 10, 3, DType::I64, Device::Cpu).unwrap();
    /// assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 3, 6, 9]);
    /// let f = Tensor::arange(0.0, 1.0, 0.25, DType::F32, Device::Cpu).unwrap();
    /// assert_eq!(f.to_vec::<f32>().unwrap(), vec![0.0, 0.25, 0.5, 0.75]);
    /// ```
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let host = match (start, end, step) {
            (Scalar::Int(a), Scalar::Int(b), Scalar::Int(s)) => arange_int(a, b, s, dtype)?,
            _ => arange_float(start.to_f64(), end.to_f64(), step.to_f64(), dtype)?,
        };
        host.to_device(device)
    }
}

fn arange_len(len: f64, dtype: DType) -> Result<usize> {
    if !len.is_finite() || len > isize::MAX as f64 {
        return Err(Error::Overflow { op: "arange", shape: vec![usize::MAX], dtype });
    }
    Ok(len.max(0.0) as usize)
}

fn arange_int(start: i64, end: i64, step: i64, dtype: DType) -> Result<Tensor> {
    if step == 0 {
        return Err(Error::invalid("arange", "step must be non-zero"));
    }
    let span = end as i128 - start as i128;
    let n = if (span > 0) == (step > 0) && span != 0 {
        (span.abs() + step.unsigned_abs() as i128 - 1) / step.unsigned_abs() as i128
    } else {
        0
    };
    let n = usize::try_from(n).ok().filter(|&n| n <= isize::MAX as usize).ok_or_else(|| Error::Overflow {
        op: "arange",
        shape: vec![usize::MAX],
        dtype,
    })?;
    shape::checked_numel("arange", &[n], dtype)?;
    crate::with_dtype!(dtype, T => {
        let mut v: Vec<T> = Vec::new();
        v.try_reserve_exact(n).map_err(|_| Error::out_of_memory("arange", n * dtype.size(), Device::Cpu, format!("a [{n}] {dtype} tensor")))?;
        // Every value lies in [start, end), so it fits in i64; the product `i * step` on the
        // way may not (e.g. start i64::MIN, step i64::MAX): compute it in i128.
        v.extend((0..n as i128).map(|i| ((start as i128 + i * step as i128) as i64).cast::<T>()));
        Tensor::from_vec(v, &[n])
    })
}

fn arange_float(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
        return Err(Error::invalid(
            "arange",
            format!("start {start}, end {end} and step {step} must be finite and step non-zero"),
        ));
    }
    let n = arange_len(((end - start) / step).ceil(), dtype)?;
    shape::checked_numel("arange", &[n], dtype)?;
    crate::with_dtype!(dtype, T => {
        let mut v: Vec<T> = Vec::new();
        v.try_reserve_exact(n).map_err(|_| Error::out_of_memory("arange", n * dtype.size(), Device::Cpu, format!("a [{n}] {dtype} tensor")))?;
        v.extend((0..n).map(|i| (start + i as f64 * step).cast::<T>()));
        Tensor::from_vec(v, &[n])
    })
}
