//! Reading and writing element values: `to_vec`, `copy_`, `fill_`, `contiguous`,
//! `to_dtype`, `to_device`. Copy and fill run through the one call path ([`crate::call`]):
//! the registered copy/fill rows (a backend's engines, or the core's reference kernels).

use super::Tensor;
use crate::iter::StridedOffsets;
use crate::registry::RawTensor;
use crate::{DType, Device, Element, Error, Result, Scalar};

impl Tensor {
    /// The kernel-facing view of this tensor given its storage's locked base address.
    pub fn raw(&self, base: *mut u8) -> RawTensor<'_> {
        RawTensor {
            ptr: base.wrapping_add(self.storage_offset() * self.elem_size()),
            // The stored dtype (a quantized tensor's integers).
            dtype: self.storage().dtype(),
            shape: self.shape(),
            strides: self.strides(),
            device: self.device(),
        }
    }

    /// The elements in logical row-major order, whatever the strides.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Error};
    /// let t = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    /// assert_eq!(t.flip(0).unwrap().to_vec::<i32>().unwrap(), vec![3, 2, 1]);
    /// assert!(matches!(t.to_vec::<f32>(), Err(Error::DTypeMismatch { .. })));
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.strided_only("to_vec")?;
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op: "to_vec", expected: self.dtype(), got: T::DTYPE });
        }
        let n = self.numel();
        let mut out: Vec<T> = Vec::new();
        out.try_reserve_exact(n).map_err(|_| {
            Error::out_of_memory(
                "to_vec",
                n * self.elem_size(),
                Device::Cpu,
                format!("a Vec of the {} elements of a {:?} {} tensor", n, self.shape(), self.dtype()),
            )
        })?;
        if n == 0 {
            return Ok(out);
        }
        if !self.device().is_cpu() {
            let dense = self.contiguous()?;
            let rt = crate::runtime_for(self.device())?;
            let size = self.elem_size();
            let mut bytes: Vec<u8> = Vec::new();
            bytes.try_reserve_exact(n * size).map_err(|_| {
                Error::out_of_memory(
                    "to_vec",
                    n * size,
                    Device::Cpu,
                    format!("staging a {:?} {} tensor from {}", self.shape(), self.dtype(), self.device()),
                )
            })?;
            bytes.resize(n * size, 0);
            {
                let guard = dense.storage().read_for("to_vec")?;
                let src = guard.as_ptr().wrapping_add(dense.storage_offset() * size);
                // SAFETY: the dense view's n elements lie in its storage, locked by `guard`.
                unsafe { rt.copy_to_host(self.device(), src, &mut bytes)? };
            }
            // Device bool storage is not zeroed at allocation (as in PyTorch), so its bytes
            // are read as u8 and normalised rather than trusted to be 0/1.
            for chunk in bytes.chunks_exact(size) {
                out.push(if T::DTYPE == DType::Bool {
                    T::from_scalar(Scalar::Bool(chunk[0] != 0))
                } else {
                    // SAFETY: `chunk` holds `size == size_of::<T>()` bytes and every bit
                    // pattern is a valid value of the non-bool element types.
                    unsafe { (chunk.as_ptr() as *const T).read_unaligned() }
                });
            }
            return Ok(out);
        }
        let guard = self.storage().read_for("to_vec")?;
        if T::DTYPE == DType::Bool {
            // Bool bytes are read as u8 and tested `!= 0`, never trusted to be 0/1.
            let base = guard.as_ptr();
            for off in StridedOffsets::new(self.shape(), self.strides()) {
                let idx = (self.storage_offset() as isize + off) as usize;
                // SAFETY: as below; every byte of a storage is initialized, so reading it
                // as u8 is valid whatever its value.
                let byte = unsafe { base.add(idx).read() };
                out.push(T::from_scalar(Scalar::Bool(byte != 0)));
            }
            return Ok(out);
        }
        let base = guard.as_ptr() as *const T;
        for off in StridedOffsets::new(self.shape(), self.strides()) {
            let idx = (self.storage_offset() as isize + off) as usize;
            // SAFETY: the view invariant keeps every reachable element inside the storage,
            // which holds T (dtype checked above; not bool, handled above, so every bit
            // pattern is a valid T) and is read-locked by `guard`.
            out.push(unsafe { base.add(idx).read() });
        }
        Ok(out)
    }

    /// A copy of this view's elements in a new storage of its own: row-major, contiguous,
    /// writable (also when this storage is read-only), same dtype and device — what
    /// PyTorch calls `clone()`. [`Clone::clone`] of a `Tensor` only makes another handle to
    /// the same storage, and [`Tensor::contiguous`] returns this very view when it is
    /// already contiguous: use `deep_clone` whenever writes must not reach the original.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]).unwrap();
    /// t.storage().set_read_only();
    /// let c = t.deep_clone().unwrap();
    /// assert!(!c.shares_storage(&t));
    /// c.fill_(0.0).unwrap(); // the copy is writable; the original is untouched
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 2., 3., 4.]);
    /// assert_eq!(t.t().unwrap().deep_clone().unwrap().to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
    /// ```
    pub fn deep_clone(&self) -> Result<Tensor> {
        if let Some(parts) = &self.sparse {
            return self.map_sparse_parts(parts, Tensor::deep_clone, Tensor::deep_clone);
        }
        let out = self.empty_like_for("deep_clone", self.device())?;
        out.copy_(self).map_err(|e| e.renamed("deep_clone"))?;
        Ok(out)
    }

    /// Row-major data as a contiguous tensor: this same view (no copy, the same storage)
    /// when already contiguous, else a copy. For a copy in every case, use
    /// [`Tensor::deep_clone`].
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]).unwrap();
    /// assert!(t.contiguous().unwrap().shares_storage(&t));
    /// let c = t.t().unwrap().contiguous().unwrap();
    /// assert!(!c.shares_storage(&t) && c.is_contiguous());
    /// assert_eq!(c.to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
    /// ```
    pub fn contiguous(&self) -> Result<Tensor> {
        self.strided_only("contiguous")?;
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let out = self.empty_like_for("contiguous", self.device())?;
        out.copy_(self)?;
        Ok(out)
    }

    /// A copy converted to `dtype` (Rust `as` rules); the same view if already `dtype`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType};
    /// let t = Tensor::from_vec(vec![1.7f32, -2.5], &[2]).unwrap();
    /// assert_eq!(t.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -2]);
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        if let Some(parts) = &self.sparse {
            return self.map_sparse_parts(parts, |t| t.to_dtype(dtype), |t| Ok(t.clone()));
        }
        let out = Tensor::empty(self.shape(), dtype, self.device())?;
        out.copy_(self)?;
        Ok(out)
    }

    /// A copy on `device` (the same view if already there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        if let Some(parts) = &self.sparse {
            return self.map_sparse_parts(parts, |t| t.to_device(device), |t| t.to_device(device));
        }
        let out = self.empty_like_for("to_device", device)?;
        out.copy_(self)?;
        Ok(out)
    }

    /// Copies `src` into this view, broadcasting `src` to this shape and casting its dtype.
    /// Works through any strides, across CPU↔CUDA, and when `src` overlaps this view.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let dst = Tensor::zeros(&[2, 3], DType::F64, Device::Cpu).unwrap();
    /// let row = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    /// dst.t().unwrap().t().unwrap().copy_(&row).unwrap();
    /// assert_eq!(dst.to_vec::<f64>().unwrap(), vec![1., 2., 3., 1., 2., 3.]);
    /// ```
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.strided_only("copy_")?;
        if src.is_sparse() {
            // Into a strided destination: the sparse layout's scatter, then a dense copy.
            return self.copy_(&src.to_dense()?);
        }
        if self.quant.is_some() || src.quant.is_some() {
            return crate::call::quantized::copy(self, src);
        }
        if self.device() != src.device() {
            // (The same-device path checks in `call::copy`.)
            self.check_writable("copy_")?;
            let src = src.broadcast_to(self.shape()).map_err(|_| {
                Error::shape(
                    "copy_",
                    format!(
                        "source shape {:?} cannot be broadcast to destination shape {:?}",
                        src.shape(),
                        self.shape()
                    ),
                )
            })?;
            if self.numel() == 0 {
                // Nothing to move: an empty tensor crosses devices as freely as a full one.
                return Ok(());
            }
            let overlap = self.internal_overlap();
            if overlap.is_overlapping() {
                return Err(Error::invalid_output(
                    "copy_",
                    overlap.describe("the destination", self.shape(), self.strides()),
                ));
            }
            return self.copy_across_devices(&src);
        }
        crate::call::copy(self, src)
    }

    fn copy_across_devices(&self, src: &Tensor) -> Result<()> {
        let (host_src, dev) = match (src.device(), self.device()) {
            (Device::Cpu, d @ Device::Cuda(_)) => (src.to_dtype(self.dtype())?.contiguous()?, d),
            (Device::Cuda(_), Device::Cpu) => {
                // Bring it over in its own dtype, then cast on the host.
                let bytes = crate::with_dtype!(src.dtype(), T => Tensor::from_vec(src.to_vec::<T>()?, src.shape())?);
                return self.copy_(&bytes);
            }
            _ => {
                // Device to device on different GPUs: stage through the host.
                return self.copy_(&src.to_device(Device::Cpu)?);
            }
        };
        let staged = if self.is_contiguous() { self.clone() } else { Tensor::empty(self.shape(), self.dtype(), dev)? };
        {
            let rt = crate::runtime_for(dev)?;
            let src_guard = host_src.storage().read_for("copy_")?;
            let mut dst_guard = staged.storage().write_for("copy_")?;
            let n = self.numel() * self.elem_size();
            let src_ptr = src_guard.as_ptr().wrapping_add(host_src.storage_offset() * self.elem_size());
            // SAFETY: host_src is contiguous with n bytes from src_ptr, read-locked.
            let bytes = unsafe { std::slice::from_raw_parts(src_ptr, n) };
            let dst_ptr = dst_guard.as_mut_ptr().wrapping_add(staged.storage_offset() * self.elem_size());
            // SAFETY: staged is contiguous, n bytes from dst_ptr on `dev`, write-locked.
            unsafe { rt.copy_from_host(dev, bytes, dst_ptr)? };
        }
        if !staged.is_same_view(self) {
            self.copy_(&staged)?;
        }
        Ok(())
    }

    /// `Err(ReadOnly)` naming `op` when this view's storage refuses writes: the first check
    /// of every write path, so an empty write or a copy onto itself is refused too.
    pub(crate) fn check_writable(&self, op: &'static str) -> Result<()> {
        if self.storage().is_read_only() {
            return Err(Error::ReadOnly { op });
        }
        Ok(())
    }

    /// Writes `value` (cast to this dtype with `as` rules) into every element.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[2, 2], DType::U8, Device::Cpu).unwrap();
    /// t.select(0, 1).unwrap().fill_(7).unwrap();
    /// assert_eq!(t.to_vec::<u8>().unwrap(), vec![0, 0, 7, 7]);
    /// ```
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<()> {
        self.strided_only("fill_")?;
        crate::call::fill(self, value.into())
    }

    /// Reads the single element of a 1-element tensor as a [`Scalar`].
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![2.5f64], &[1]).unwrap();
    /// assert_eq!(t.item().unwrap(), tensor_ops::Scalar::Float(2.5));
    /// ```
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::shape("item", format!("needs exactly one element, the shape is {:?}", self.shape())));
        }
        if self.quant.is_some() {
            return self.dequantize()?.item();
        }
        crate::with_dtype!(self.dtype(), T => Ok(self.to_vec::<T>()?[0].to_scalar()))
    }
}
