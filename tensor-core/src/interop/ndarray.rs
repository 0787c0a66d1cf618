//! [`ndarray`] interop (feature `ndarray`): adopt an `ArrayD` without copying, read or write a
//! tensor through a borrowed `ArrayViewD`/`ArrayViewMutD` under the storage's lock, or copy
//! out an owned `ArrayD`.

use crate::{Access, Device, Element, Error, Result, Storage, Tensor};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder};

impl Tensor {
    /// Adopts `array`'s buffer without copying: the tensor has the array's shape and
    /// strides (any layout an owned ndarray can have, negative strides included, since the
    /// core expresses them all) and frees the buffer when its last view goes.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let a = ndarray::ArrayD::from_shape_vec(vec![2, 3], (0..6).map(|x| x as f32).collect()).unwrap();
    /// let ptr = a.as_ptr();
    /// let t = tensor_ops::Tensor::from_ndarray(a).unwrap();
    /// assert_eq!(t.shape(), &[2, 3]);
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![0., 1., 2., 3., 4., 5.]);
    /// assert_eq!(t.with_ndarray_view::<f32, _>(|v| v.as_ptr()).unwrap(), ptr); // no copy
    /// ```
    pub fn from_ndarray<T: Element>(array: ArrayD<T>) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        let strides = array.strides().to_vec();
        let (data, offset) = array.into_raw_vec_and_offset();
        let len = data.len();
        let whole = Tensor::from_storage(Storage::from_vec(data), &[len])?;
        whole.as_strided(&shape, &strides, offset.unwrap_or(0))
    }

    /// A copy of the elements as an owned `ArrayD` in row-major order.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
    /// let a = t.t().unwrap().to_ndarray::<i32>().unwrap();
    /// assert_eq!(a, ndarray::arr2(&[[1, 3], [2, 4]]).into_dyn());
    /// ```
    pub fn to_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        let data = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(self.shape()), data)
            .map_err(|e| Error::shape("to_ndarray", format!("shape {:?}: {e}", self.shape())))
    }

    /// Runs `f` on a borrowed `ArrayViewD` of this tensor (no copy: the view has the
    /// tensor's strides), holding the storage's read lock for the whole closure, so no write
    /// through another view can race with it. CPU tensors of dtype `T` only.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![1f64, 2., 3.], &[3]).unwrap();
    /// let sum = t.flip(0).unwrap().with_ndarray_view::<f64, _>(|v| v[[0]] * 10.0 + v.sum()).unwrap();
    /// assert_eq!(sum, 36.0);
    /// ```
    pub fn with_ndarray_view<T: Element, R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> Result<R> {
        let op = "with_ndarray_view";
        self.check_interop::<T>(op, Access::Read)?;
        let guard = self.storage().read_for(op)?;
        let (ptr, shape, strides, flipped) = self.lowest_address_layout(guard.as_ptr() as *mut u8);
        // SAFETY: `ptr` is the lowest-address element of this view inside its storage, which
        // holds `T` (checked) and stays read-locked by `guard` for as long as the view lives
        // (the closure); stepping `ptr` by the non-negative `strides` over `shape` reaches
        // exactly the view's elements (the view invariant), all initialized.
        let mut view = unsafe { ArrayViewD::from_shape_ptr(IxDyn(&shape).strides(IxDyn(&strides)), ptr as *const T) };
        for axis in flipped {
            view.invert_axis(Axis(axis));
        }
        Ok(f(view))
    }

    /// Runs `f` on a borrowed `ArrayViewMutD` of this tensor (no copy), holding the storage's
    /// write lock for the whole closure. CPU tensors of dtype `T` whose elements do not
    /// overlap, on a writable storage.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::zeros(&[2, 2], tensor_ops::DType::I64, tensor_ops::Device::Cpu).unwrap();
    /// t.t().unwrap().with_ndarray_view_mut::<i64, _>(|mut v| v[[0, 1]] = 7).unwrap();
    /// assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 0, 7, 0]);
    /// ```
    pub fn with_ndarray_view_mut<T: Element, R>(&self, f: impl FnOnce(ArrayViewMutD<'_, T>) -> R) -> Result<R> {
        let op = "with_ndarray_view_mut";
        self.check_interop::<T>(op, Access::Write)?;
        let mut guard = self.storage().write_for(op)?;
        let (ptr, shape, strides, flipped) = self.lowest_address_layout(guard.as_mut_ptr());
        // SAFETY: as in `with_ndarray_view`, under the exclusive lock held by `guard` for the
        // closure; no element is reachable through two indices (checked), so the mutable
        // view aliases nothing.
        let mut view = unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(&shape).strides(IxDyn(&strides)), ptr as *mut T) };
        for axis in flipped {
            view.invert_axis(Axis(axis));
        }
        Ok(f(view))
    }

    /// Checks device, dtype (and for writes, overlap) for an ndarray view of `T`.
    fn check_interop<T: Element>(&self, op: &'static str, access: Access) -> Result<()> {
        if self.device() != Device::Cpu {
            return Err(Error::invalid(
                op,
                format!(
                    "ndarray views need a CPU tensor, this one is on {}; use to_device(Device::Cpu) first",
                    self.device()
                ),
            ));
        }
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op, expected: self.dtype(), got: T::DTYPE });
        }
        if access == Access::Write {
            let overlap = self.internal_overlap();
            if overlap.is_overlapping() {
                return Err(Error::invalid_output(op, overlap.describe("the tensor", self.shape(), self.strides())));
            }
        }
        Ok(())
    }

    /// The address of the lowest-address element (from `base`, the storage's locked
    /// address), the shape, the absolute strides, and the axes whose stride is negative
    /// (to be inverted on the view).
    fn lowest_address_layout(&self, base: *mut u8) -> (*mut u8, Vec<usize>, Vec<usize>, Vec<usize>) {
        let mut offset = self.storage_offset() as isize;
        let mut flipped = Vec::new();
        if self.numel() > 0 {
            for (d, (&n, &s)) in self.shape().iter().zip(self.strides()).enumerate() {
                if s < 0 {
                    offset += (n as isize - 1) * s;
                    flipped.push(d);
                }
            }
        }
        let strides = self.strides().iter().map(|s| s.unsigned_abs()).collect();
        (base.wrapping_add(offset.max(0) as usize * self.elem_size()), self.shape().to_vec(), strides, flipped)
    }
}
