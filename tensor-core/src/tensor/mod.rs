//! The strided [`Tensor`]: a view (sizes, strides, offset) over a shared [`Storage`].

mod construct;
mod display;
mod growth;
mod read;
mod views;

use crate::shape::{Dims, Strides};
use crate::{shape, DType, Device, Error, Layout, Result, Storage};

/// A strided view over refcounted storage.
///
/// Cloning a `Tensor` is cheap and makes another handle to the same view, sharing its
/// storage (writes through one are seen by the other); [`Tensor::deep_clone`] makes a copy
/// with a storage of its own (PyTorch's `clone()`), and `copy_` copies into an existing
/// tensor. ([`Tensor::contiguous`] is not a copy when the view is already contiguous.) Ops that write element values
/// (`fill_`, `copy_`, `add_`...) take `&self`: the bytes are shared by every view and guarded
/// by the storage's lock, exactly as in PyTorch. Ops that change this handle's own metadata
/// or storage (`resize_`, `extend_`, `shrink_to`, `share_data`, `reserve`) take `&mut self`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::{Tensor, DType, Device};
/// let t = Tensor::from_vec(vec![0f32, 1., 2., 3., 4., 5.], &[2, 3]).unwrap();
/// let tt = t.t().unwrap();
/// assert_eq!(tt.shape(), &[3, 2]);
/// assert_eq!(tt.strides(), &[1, 3]);
/// assert!(!tt.is_contiguous());
/// assert_eq!(tt.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
/// assert!(tt.shares_storage(&t));
/// ```
#[derive(Clone)]
pub struct Tensor {
    storage: Storage,
    shape: Dims,
    strides: Strides,
    offset: usize,
    /// `shape::is_contiguous(shape, strides)`, kept with them (every call's dense check
    /// asks it of each operand); always false for a sparse tensor.
    pub(crate) contiguous: bool,
    /// A sparse tensor's components (`None` for a strided tensor). A sparse tensor's
    /// strided fields are a stand-in: its full shape, zero strides, no contiguity, and a
    /// data-less storage of its values' dtype and device (`Storage::no_data`) whose every
    /// lock is an `Error::Layout` — so strided code that reaches it gets an `Err`, never
    /// bytes. See `crate::sparse`.
    pub(crate) sparse: Option<std::sync::Arc<crate::sparse::Parts>>,
    /// The quantizer of a quantized tensor (whose storage holds the dtype's integers).
    pub(crate) quant: Option<std::sync::Arc<crate::Quantizer>>,
}

impl Tensor {
    /// Assembles a view. Callers guarantee every reachable offset lies in the storage.
    pub(crate) fn from_parts_unchecked(
        storage: Storage,
        shape: impl Into<Dims>,
        strides: impl Into<Strides>,
        offset: usize,
    ) -> Tensor {
        let (shape, strides) = (shape.into(), strides.into());
        debug_assert_eq!(shape.len(), strides.len());
        let contiguous = shape::is_contiguous(&shape, &strides);
        Tensor { storage, shape, strides, offset, contiguous, sparse: None, quant: None }
    }

    /// A contiguous tensor over `storage` starting at element 0.
    pub fn from_storage(storage: Storage, shape: &[usize]) -> Result<Tensor> {
        if storage.dtype().is_quantized() {
            return Err(Error::DType {
                op: "from_storage",
                msg: format!(
                    "a {} storage has no quantizer: make the storage of its integer dtype ({}) and use Tensor::empty_quantized, or quantize_per_tensor",
                    storage.dtype(),
                    storage.dtype().repr()
                ),
            });
        }
        let numel = shape::checked_numel("from_storage", shape, storage.dtype())?;
        if numel > storage.capacity_elems() {
            return Err(Error::out_of_bounds(
                "from_storage",
                format!("shape {shape:?} needs {numel} elements but the storage holds {}", storage.capacity_elems()),
            ));
        }
        Ok(Tensor::from_parts_unchecked(storage, Dims::from_slice(shape), shape::dense_strides(shape), 0))
    }

    /// Sizes of each dim.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Alias of [`Tensor::shape`].
    pub fn dims(&self) -> &[usize] {
        &self.shape
    }
    /// Size of one dim.
    pub fn size(&self, dim: usize) -> Result<usize> {
        crate::error::check_dim("size", dim, self.ndim())?;
        Ok(self.shape[dim])
    }
    /// Strides of each dim, in elements (may be 0 or negative). A sparse tensor has none to
    /// give: its strides read as zeros (its data is in its components).
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }
    /// Offset of element `[0, 0, ...]` in the storage, in elements.
    pub fn storage_offset(&self) -> usize {
        self.offset
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        match &self.quant {
            None => self.storage.dtype(),
            Some(q) => q.dtype(),
        }
    }
    /// Where the data lives.
    pub fn device(&self) -> Device {
        self.storage.device()
    }
    /// The layout: [`Layout::Strided`], or a sparse layout for a tensor made by
    /// [`Tensor::sparse_coo`] / [`Tensor::sparse_csr`] (or converted to one).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Layout, Tensor};
    /// let i = Tensor::from_vec(vec![0i64, 2], &[1, 2]).unwrap();
    /// let v = Tensor::from_vec(vec![1f32, 3.], &[2]).unwrap();
    /// assert_eq!(v.layout(), Layout::Strided);
    /// assert_eq!(Tensor::sparse_coo(&i, &v, &[4]).unwrap().layout(), Layout::SparseCoo);
    /// ```
    #[inline]
    pub fn layout(&self) -> Layout {
        match &self.sparse {
            None => Layout::Strided,
            Some(parts) => parts.layout(),
        }
    }
    /// `Err(Error::Layout)` naming `op` unless this tensor is strided: the first line of
    /// every strided-only method (views, data, growth).
    #[inline]
    pub(crate) fn strided_only(&self, op: &'static str) -> Result<()> {
        match &self.sparse {
            None => Ok(()),
            Some(parts) => Err(Error::not_strided(op, parts.layout())),
        }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// Number of dims.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Alias of [`Tensor::ndim`].
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Bytes per element.
    pub fn elem_size(&self) -> usize {
        self.dtype().size()
    }
    /// Row-major contiguous, ignoring size-1 dims (as PyTorch).
    pub fn is_contiguous(&self) -> bool {
        // Every test build checks the kept flag against the layout it describes.
        debug_assert!(self.sparse.is_some() || self.contiguous == shape::is_contiguous(&self.shape, &self.strides));
        self.contiguous
    }
    /// True when both views use the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        self.storage.same(&other.storage)
    }
    /// The storage behind this view (for a sparse tensor a data-less stand-in whose locks
    /// are `Err`s: its data is in its components).
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    /// True when some element is reachable through two different indices (a stride 0 on a
    /// dim of size > 1, or strides that interleave so two indices meet). Exact; see
    /// [`crate::overlap`] for the rule.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[3, 8, 3], DType::F32, Device::Cpu).unwrap();
    /// assert!(!t.slice(1, 0, 8, 2).unwrap().has_internal_overlap());
    /// assert!(t.select(0, 0).unwrap().unsqueeze(0).unwrap().expand(&[2, 8, 3]).unwrap().has_internal_overlap());
    /// ```
    pub fn has_internal_overlap(&self) -> bool {
        self.internal_overlap().is_overlapping()
    }
    /// How this view overlaps itself, if it does (see [`crate::overlap::Overlap`]).
    pub fn internal_overlap(&self) -> crate::overlap::Overlap {
        crate::overlap::internal_overlap(&self.shape, &self.strides)
    }
    /// Lowest and highest storage element offsets this view reaches (`None` if empty).
    pub fn storage_span(&self) -> Option<(usize, usize)> {
        shape::offset_range(&self.shape, &self.strides)
            .map(|(lo, hi)| ((self.offset as isize + lo) as usize, (self.offset as isize + hi) as usize))
    }
    /// True when the two views may touch a common element of the same storage.
    pub fn may_overlap(&self, other: &Tensor) -> bool {
        if !self.shares_storage(other) {
            return false;
        }
        match (self.storage_span(), other.storage_span()) {
            (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
            _ => false,
        }
    }
    /// True when both are the very same view (same storage, offset, shape, strides).
    pub fn is_same_view(&self, other: &Tensor) -> bool {
        self.shares_storage(other)
            && self.offset == other.offset
            && self.shape == other.shape
            && self.strides == other.strides
    }
    /// Checks `self` and `other` are on one device, naming `op` if not.
    pub fn check_same_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.device() == other.device() {
            Ok(())
        } else {
            Err(Error::DeviceMismatch { op, lhs: self.device(), rhs: other.device() })
        }
    }
}
