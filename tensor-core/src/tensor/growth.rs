//! Caffe2-style growth: `resize_`, `reserve`, `extend_`, `shrink_to`, `share_data`.
//!
//! These change *this handle's* storage and metadata, so they take `&mut self`; other
//! handles (clones, views) of the old storage keep seeing the old storage and their own
//! shapes. All of them require a contiguous tensor (they reason about "the first `numel`
//! elements from the storage offset") and say so when it isn't.
//!
//! # When data is kept
//!
//! | call | storage kept when | on reallocation |
//! |---|---|---|
//! | [`Tensor::resize_`] | `offset + new numel` fits the capacity, unless it is a big shrink (see [`Tensor::KEEP_ON_SHRINK_MAX_BYTES`]) | new **lazy** storage, data **not** kept (Caffe2) |
//! | [`Tensor::reserve`] | the capacity from the offset already holds `bytes` | new storage, the current elements copied to its start |
//! | [`Tensor::extend_`] | the grown tensor fits the capacity | new storage of the amortized capacity, current elements copied |
//! | [`Tensor::shrink_to`] | always (never reallocates) | — |
//! | [`Tensor::share_data`] | — (takes the source's storage) | — |
//!
//! When the storage is kept, the bytes are reinterpreted row-major in the new shape; the
//! elements beyond the old `numel` hold whatever the storage held (zeros for a fresh
//! buffer). Copies go through [`Tensor::copy_`], so they take the storage locks; a storage
//! that was never allocated is not touched (its replacement stays lazy too, and reads as
//! zeros just as the old one would have).

use super::Tensor;
use crate::shape::{Dims, Strides};
use crate::{shape, Error, Result, Storage};

impl Tensor {
    /// A shrinking [`Tensor::resize_`] keeps the storage unless the storage is larger than
    /// this many bytes **and** the resized tensor would use less than half of it; then it
    /// reallocates (lazily) so that a big buffer is not pinned by a small tensor.
    pub const KEEP_ON_SHRINK_MAX_BYTES: usize = 1 << 20;

    /// Replaces this handle's metadata. Callers guarantee every reachable offset lies in
    /// the storage.
    fn set_layout(&mut self, shape: impl Into<Dims>, strides: impl Into<Strides>, offset: usize) {
        let (shape, strides) = (shape.into(), strides.into());
        debug_assert_eq!(shape.len(), strides.len());
        self.contiguous = shape::is_contiguous(&shape, &strides);
        self.shape = shape;
        self.strides = strides;
        self.offset = offset;
    }

    /// Growth ops change what this handle's storage holds: a read-only storage refuses them.
    fn require_writable(&self, op: &'static str) -> Result<()> {
        if let Some(axis) = self.quantizer().and_then(|q| q.axis()) {
            return Err(Error::invalid(
                op,
                format!("a per-channel quantized tensor cannot change shape in place (its scales are per index of dim {axis}); dequantize() first"),
            ));
        }
        if self.storage().is_read_only() {
            Err(Error::ReadOnly { op })
        } else {
            Ok(())
        }
    }

    fn require_contiguous(&self, op: &'static str) -> Result<()> {
        if self.is_contiguous() {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                format!(
                    "requires a contiguous tensor, got shape {:?} with strides {:?}; call contiguous() first",
                    self.shape(),
                    self.strides()
                ),
            ))
        }
    }

    /// Capacity of the storage counted from this tensor's offset, in elements.
    fn capacity_from_offset(&self) -> usize {
        self.storage().capacity_elems().saturating_sub(self.storage_offset())
    }

    /// Moves this handle to a fresh storage of `capacity` elements (at least `numel`),
    /// copying the current elements to its start (if the old storage was ever allocated).
    fn reallocate_keeping(&mut self, op: &'static str, capacity: usize) -> Result<()> {
        let numel = self.numel();
        debug_assert!(capacity >= numel);
        let storage = Storage::new_lazy(self.storage().dtype(), capacity, self.device())
            .map_err(|_| Error::Overflow { op, shape: vec![capacity], dtype: self.dtype() })?;
        let mut fresh =
            Tensor::from_parts_unchecked(storage, self.shape().to_vec(), shape::contiguous_strides(self.shape()), 0);
        fresh.quant = self.quant.clone();
        if numel > 0 && self.storage().is_allocated() {
            fresh.copy_(self)?;
        }
        *self = fresh;
        Ok(())
    }

    /// Changes the shape to `shape` (row-major, contiguous strides), Caffe2 style.
    ///
    /// The storage is kept when `storage_offset + numel(shape)` elements fit its capacity,
    /// except for a big shrink: when the capacity exceeds
    /// [`Tensor::KEEP_ON_SHRINK_MAX_BYTES`] and the tensor would use less than half of it.
    /// Then, or when the capacity is too small, this handle gets a new **lazy** storage of
    /// exactly `numel(shape)` elements at offset 0 and the old data is **not** kept (as
    /// Caffe2's `Resize`; use [`Tensor::extend_`] or [`Tensor::reserve`] to keep data).
    /// Works on shared storage too: a reallocation detaches only this handle.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let mut t = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap();
    /// t.resize_(&[3, 2]).unwrap(); // fits: same storage, same bytes
    /// assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    /// t.resize_(&[4]).unwrap(); // shrink: kept
    /// assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3]);
    /// t.resize_(&[10]).unwrap(); // too big: new lazy storage, data dropped
    /// assert!(!t.storage().is_allocated());
    /// assert!(t.t().unwrap().resize_(&[1]).is_ok()); // 1-D: t() is the same view
    /// ```
    pub fn resize_(&mut self, shape: &[usize]) -> Result<()> {
        self.strided_only("resize_")?;
        self.require_writable("resize_")?;
        self.require_contiguous("resize_")?;
        let dtype = self.dtype();
        let numel = shape::checked_numel("resize_", shape, dtype)?;
        let cap = self.storage().capacity_elems();
        let needed = self.storage_offset().checked_add(numel);
        let fits = needed.is_some_and(|n| n <= cap);
        let big_shrink = self.storage().capacity_bytes() > Self::KEEP_ON_SHRINK_MAX_BYTES
            && needed.is_some_and(|n| n.saturating_mul(dtype.size()) < self.storage().capacity_bytes() / 2);
        let strides = shape::contiguous_strides(shape);
        if fits && !big_shrink {
            self.set_layout(shape.to_vec(), strides, self.storage_offset());
        } else {
            let storage = Storage::new_lazy(self.storage().dtype(), numel, self.device())?;
            let quant = self.quant.take();
            *self = Tensor::from_parts_unchecked(storage, shape.to_vec(), strides, 0);
            self.quant = quant;
        }
        Ok(())
    }

    /// Makes sure this tensor can grow to `bytes` bytes (counted from its storage offset)
    /// without reallocating. If the storage is already big enough nothing happens;
    /// otherwise this handle moves to a new storage of `ceil(bytes / elem_size)` elements
    /// holding the current elements at its start (data kept, offset becomes 0).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let mut t = Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap();
    /// t.reserve(64).unwrap();
    /// assert_eq!(t.storage().capacity_bytes(), 64);
    /// assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 2.]);
    /// ```
    pub fn reserve(&mut self, bytes: usize) -> Result<()> {
        self.strided_only("reserve")?;
        self.require_writable("reserve")?;
        self.require_contiguous("reserve")?;
        let size = self.elem_size();
        let elems = bytes.div_ceil(size);
        if elems <= self.capacity_from_offset() {
            return Ok(());
        }
        let elems = elems.max(self.numel());
        self.reallocate_keeping("reserve", elems)
    }

    /// Appends `n` rows to dim 0, keeping the data (Caffe2's `Extend`).
    ///
    /// When the grown tensor fits the storage (from this tensor's offset) only the shape
    /// changes. Otherwise this handle moves to a new storage of
    /// `max(needed, old_capacity * (100 + growth_pct) / 100)` elements (rounded up; the
    /// old capacity is counted from the offset), with the current elements copied to its
    /// start, so a sequence of `extend_` calls with `growth_pct > 0` costs amortized O(1)
    /// per row. The new rows hold unspecified values (zeros for a fresh buffer). Errors on
    /// a 0-dim or non-contiguous tensor and on overflow.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let mut t = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
    /// t.extend_(1, 50).unwrap();
    /// assert_eq!(t.shape(), &[3, 2]);
    /// assert_eq!(&t.to_vec::<i64>().unwrap()[..4], &[1, 2, 3, 4]);
    /// assert_eq!(t.storage().capacity_elems(), 6); // max(6, 4 * 1.5)
    /// ```
    pub fn extend_(&mut self, n: usize, growth_pct: usize) -> Result<()> {
        self.strided_only("extend_")?;
        self.require_writable("extend_")?;
        self.require_contiguous("extend_")?;
        if self.ndim() == 0 {
            return Err(Error::shape("extend_", "needs a tensor with at least 1 dim, got a 0-dim tensor"));
        }
        let dtype = self.dtype();
        let mut new_shape = self.shape().to_vec();
        new_shape[0] = new_shape[0].checked_add(n).ok_or_else(|| Error::Overflow {
            op: "extend_",
            shape: self.shape().to_vec(),
            dtype,
        })?;
        let needed = shape::checked_numel("extend_", &new_shape, dtype)?;
        let old_cap = self.capacity_from_offset();
        if needed > old_cap {
            let grown = old_cap
                .checked_mul(growth_pct.saturating_add(100))
                .map(|x| x.div_ceil(100))
                .unwrap_or(usize::MAX)
                .min(isize::MAX as usize / dtype.size());
            self.reallocate_keeping("extend_", needed.max(grown))?;
        }
        let strides = shape::contiguous_strides(&new_shape);
        self.set_layout(new_shape, strides, self.storage_offset());
        Ok(())
    }

    /// Shrinks dim 0 to `outer` rows, keeping the data and the storage (never
    /// reallocates; Caffe2's `ShrinkTo`). Errors when `outer` exceeds the current size,
    /// on a 0-dim or non-contiguous tensor, and when the storage is shared with another
    /// handle (`storage().use_count() > 1`), since other views may rely on the rows.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let mut t = Tensor::from_vec(vec![1u8, 2, 3, 4, 5, 6], &[3, 2]).unwrap();
    /// t.shrink_to(1).unwrap();
    /// assert_eq!(t.to_vec::<u8>().unwrap(), vec![1, 2]);
    /// assert!(t.shrink_to(2).is_err());
    /// ```
    pub fn shrink_to(&mut self, outer: usize) -> Result<()> {
        self.strided_only("shrink_to")?;
        self.require_writable("shrink_to")?;
        self.require_contiguous("shrink_to")?;
        if self.ndim() == 0 {
            return Err(Error::shape("shrink_to", "needs a tensor with at least 1 dim, got a 0-dim tensor"));
        }
        if !self.storage().is_unique() {
            return Err(Error::invalid(
                "shrink_to",
                format!(
                    "the storage is shared by {} handles; shrink_to needs sole ownership (drop the other views or use narrow)",
                    self.storage().use_count()
                ),
            ));
        }
        let size = self.shape()[0];
        if outer > size {
            return Err(Error::shape(
                "shrink_to",
                format!("new outer size {outer} exceeds the current size {size} of dim 0 (shape {:?})", self.shape()),
            ));
        }
        let mut new_shape = self.shape().to_vec();
        new_shape[0] = outer;
        let strides = shape::contiguous_strides(&new_shape);
        self.set_layout(new_shape, strides, self.storage_offset());
        Ok(())
    }

    /// Makes this tensor view `src`'s storage from `src`'s offset, keeping this tensor's
    /// shape with contiguous strides (Caffe2's `ShareData`). Both must be contiguous and
    /// have the same number of elements. Like Caffe2, the dtype (and device) become
    /// `src`'s: they belong to the storage. This handle's old storage is released.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let src = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[4]).unwrap();
    /// let mut t = Tensor::empty(&[2, 2], DType::F32, Device::Cpu).unwrap();
    /// t.share_data(&src).unwrap();
    /// assert!(t.shares_storage(&src));
    /// assert_eq!(t.shape(), &[2, 2]);
    /// assert!(t.share_data(&Tensor::from_vec(vec![1f32], &[1]).unwrap()).is_err());
    /// ```
    pub fn share_data(&mut self, src: &Tensor) -> Result<()> {
        self.strided_only("share_data")?;
        src.strided_only("share_data")?;
        self.require_contiguous("share_data")?;
        if !src.is_contiguous() {
            return Err(Error::invalid(
                "share_data",
                format!(
                    "requires a contiguous source, got shape {:?} with strides {:?}; call contiguous() first",
                    src.shape(),
                    src.strides()
                ),
            ));
        }
        if src.numel() != self.numel() {
            return Err(Error::shape(
                "share_data",
                format!(
                    "source shape {:?} has {} elements but this tensor (shape {:?}) has {}; they must match",
                    src.shape(),
                    src.numel(),
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        if src.quantizer().is_some_and(|q| q.axis().is_some()) && src.shape() != self.shape() {
            return Err(Error::shape(
                "share_data",
                format!(
                    "a per-channel quantized source (shape {:?}) is shared only by a tensor of its shape, got {:?}",
                    src.shape(),
                    self.shape()
                ),
            ));
        }
        let strides = shape::contiguous_strides(self.shape());
        *self =
            Tensor::from_parts_unchecked(src.storage().clone(), self.shape().to_vec(), strides, src.storage_offset());
        self.quant = src.quant.clone();
        Ok(())
    }
}
