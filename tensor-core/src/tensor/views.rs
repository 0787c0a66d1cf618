//! View ops: new sizes/strides/offset over the same storage, never a copy
//! (except `reshape`, which copies when no view is possible).

use super::Tensor;
use crate::error::check_dim;
use crate::quant::ViewChange;
use crate::shape::{Dims, Strides};
use crate::{shape, Error, Result};

impl Tensor {
    /// A view of this storage (a plain tensor's) or of this quantized tensor, its quantizer
    /// carried through `change` (see [`crate::quant`]).
    fn with_layout(
        &self,
        op: &'static str,
        change: ViewChange<'_>,
        shape: impl Into<Dims>,
        strides: impl Into<Strides>,
        offset: usize,
    ) -> Result<Tensor> {
        let mut t = Tensor::from_parts_unchecked(self.storage().clone(), shape, strides, offset);
        if let Some(q) = &self.quant {
            t.quant = Some(match q.axis() {
                None => q.clone(),
                Some(_) => std::sync::Arc::new(q.through(op, change)?),
            });
        }
        Ok(t)
    }

    /// Resolves one `-1` in `spec` against this tensor's element count.
    fn infer_shape(&self, op: &'static str, spec: &[isize]) -> Result<Vec<usize>> {
        let numel = self.numel();
        let mut known: usize = 1;
        let mut infer = None;
        for (i, &d) in spec.iter().enumerate() {
            match d {
                -1 if infer.is_none() => infer = Some(i),
                -1 => return Err(Error::shape(op, format!("only one dim may be -1, got {spec:?}"))),
                d if d < 0 => {
                    return Err(Error::shape(op, format!("invalid size {d} in {spec:?} (sizes are >= 0 or one -1)")))
                }
                d => {
                    known = known.checked_mul(d as usize).ok_or(Error::Overflow {
                        op,
                        shape: spec.iter().map(|&x| x.max(0) as usize).collect(),
                        dtype: self.dtype(),
                    })?
                }
            }
        }
        let mut out: Vec<usize> = spec.iter().map(|&d| d.max(0) as usize).collect();
        let mismatch = || {
            Error::shape(
                op,
                format!("shape {spec:?} is invalid for a tensor of shape {:?} ({numel} elements)", self.shape()),
            )
        };
        match infer {
            Some(i) => {
                if numel.checked_rem(known) != Some(0) {
                    return Err(mismatch());
                }
                out[i] = numel / known;
            }
            None if known != numel => return Err(mismatch()),
            None => {}
        }
        Ok(out)
    }

    /// Strides that let `new_shape` view this tensor's elements in row-major order, if any
    /// (the same algorithm as PyTorch's `computeStride`).
    fn view_strides(&self, new_shape: &[usize]) -> Option<Vec<isize>> {
        if self.numel() == 0 || self.is_contiguous() {
            return Some(shape::contiguous_strides(new_shape));
        }
        let (old_shape, old_strides) = (self.shape(), self.strides());
        let mut new_strides = vec![0isize; new_shape.len()];
        let mut view_d = new_shape.len() as isize - 1;
        let mut chunk_base_stride = *old_strides.last().unwrap_or(&1);
        let mut tensor_numel: usize = 1;
        let mut view_numel: usize = 1;
        // Products are checked: `as_strided` can put huge strides on size-1 dims, and a
        // product that overflows cannot equal (or be) a usable stride.
        let times = |n: usize, stride: isize| isize::try_from(n).ok().and_then(|n| n.checked_mul(stride));
        for tensor_d in (0..old_shape.len()).rev() {
            tensor_numel *= old_shape[tensor_d];
            let chunk_end = tensor_d == 0
                || (old_shape[tensor_d - 1] != 1
                    && Some(old_strides[tensor_d - 1]) != times(tensor_numel, chunk_base_stride));
            if chunk_end {
                while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = match times(view_numel, chunk_base_stride) {
                        Some(stride) => stride,
                        // A size-1 dim's stride addresses nothing: any value will do.
                        None if new_shape[view_d as usize] == 1 => isize::MAX,
                        None => return None,
                    };
                    view_numel *= new_shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(new_strides)
    }

    /// The same elements with a new shape (one dim may be `-1`); an error when the strides
    /// don't allow a view (use [`Tensor::reshape`] to copy then).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap();
    /// assert_eq!(t.view(&[3, -1]).unwrap().shape(), &[3, 2]);
    /// assert!(t.t().unwrap().view(&[6]).is_err());
    /// ```
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        self.strided_only("view")?;
        let new_shape = self.infer_shape("view", shape)?;
        let strides = self.view_strides(&new_shape).ok_or_else(|| {
            Error::shape(
                "view",
                format!(
                    "shape {shape:?} is incompatible with the strides {:?} of shape {:?}; use reshape (copies) or contiguous() first",
                    self.strides(),
                    self.shape()
                ),
            )
        })?;
        let change = ViewChange::Reshape { from: self.shape(), to: &new_shape };
        self.with_layout("view", change, new_shape.clone(), strides, self.storage_offset())
    }

    /// Like [`Tensor::view`], but copies to a contiguous tensor when a view is impossible.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap();
    /// let r = t.t().unwrap().reshape(&[-1]).unwrap();
    /// assert_eq!(r.to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    /// ```
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        self.strided_only("reshape")?;
        let new_shape = self.infer_shape("reshape", shape)?;
        match self.view_strides(&new_shape) {
            Some(strides) => {
                let change = ViewChange::Reshape { from: self.shape(), to: &new_shape };
                self.with_layout("reshape", change, new_shape.clone(), strides, self.storage_offset())
            }
            None => {
                let c = self.contiguous()?;
                let change = ViewChange::Reshape { from: self.shape(), to: &new_shape };
                c.with_layout(
                    "reshape",
                    change,
                    new_shape.clone(),
                    shape::contiguous_strides(&new_shape),
                    c.storage_offset(),
                )
            }
        }
    }

    /// Swaps two dims.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[1, 2, 3]).unwrap();
    /// let u = t.transpose(0, 2).unwrap();
    /// assert_eq!((u.shape(), u.strides()), (&[3, 2, 1][..], &[1, 3, 6][..]));
    /// assert!(t.transpose(0, 3).is_err());
    /// ```
    pub fn transpose(&self, d0: usize, d1: usize) -> Result<Tensor> {
        self.strided_only("transpose")?;
        check_dim("transpose", d0, self.ndim())?;
        check_dim("transpose", d1, self.ndim())?;
        let (mut sh, mut st) = (Dims::from_slice(self.shape()), Strides::from_slice(self.strides()));
        sh.swap(d0, d1);
        st.swap(d0, d1);
        self.with_layout("transpose", ViewChange::Transpose(d0, d1), sh, st, self.storage_offset())
    }

    /// Matrix transpose of a 2-D tensor; 0-D and 1-D tensors come back unchanged.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let v = Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap();
    /// assert!(v.t().unwrap().is_same_view(&v));
    /// assert_eq!(v.view(&[1, 2]).unwrap().t().unwrap().shape(), &[2, 1]);
    /// assert!(v.view(&[1, 1, 2]).unwrap().t().is_err());
    /// ```
    pub fn t(&self) -> Result<Tensor> {
        self.strided_only("t")?;
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            n => Err(Error::shape(
                "t",
                format!("expects a tensor of at most 2 dims, got {n} dims (shape {:?}); use transpose", self.shape()),
            )),
        }
    }

    /// Reorders dims: output dim `i` is input dim `perm[i]`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[2, 3, 4], DType::F32, Device::Cpu).unwrap();
    /// assert_eq!(t.permute(&[2, 0, 1]).unwrap().shape(), &[4, 2, 3]);
    /// assert!(t.permute(&[0, 0, 1]).is_err());
    /// ```
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        self.strided_only("permute")?;
        let n = self.ndim();
        let mut seen: smallvec::SmallVec<[bool; shape::INLINE_DIMS]> = smallvec::smallvec![false; n];
        if perm.len() != n || perm.iter().any(|&p| p >= n || std::mem::replace(&mut seen[p], true)) {
            return Err(Error::shape(
                "permute",
                format!("{perm:?} is not a permutation of 0..{n} for a tensor of shape {:?}", self.shape()),
            ));
        }
        let sh: Dims = perm.iter().map(|&p| self.shape()[p]).collect();
        let st: Strides = perm.iter().map(|&p| self.strides()[p]).collect();
        self.with_layout("permute", ViewChange::Permute(perm), sh, st, self.storage_offset())
    }

    /// Elements `start..start + len` of `dim`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i64>>(), &[2, 3]).unwrap();
    /// assert_eq!(t.narrow(1, 1, 2).unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 4, 5]);
    /// assert!(t.narrow(1, 2, 2).is_err());
    /// ```
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        self.strided_only("narrow")?;
        check_dim("narrow", dim, self.ndim())?;
        let size = self.shape()[dim];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::out_of_bounds(
                "narrow",
                format!("start {start} + length {len} exceeds size {size} of dim {dim} (shape {:?})", self.shape()),
            ));
        }
        let mut sh = Dims::from_slice(self.shape());
        sh[dim] = len;
        let offset = self.offset_if_nonempty(&sh, start, dim);
        let change = ViewChange::Slice { dim, start, len, step: 1 };
        self.with_layout("narrow", change, sh, Strides::from_slice(self.strides()), offset)
    }

    /// The storage offset after moving `index` steps along `dim`, for a result of shape
    /// `result`. An empty result keeps the current offset: nothing is reachable, and the
    /// strides of an empty view may be arbitrary (the product could overflow).
    fn offset_if_nonempty(&self, result: &[usize], index: usize, dim: usize) -> usize {
        if result.contains(&0) {
            return self.storage_offset();
        }
        // In range: the element at `index` of `dim` is reachable (the view invariant).
        (self.storage_offset() as isize + index as isize * self.strides()[dim]) as usize
    }

    /// Index `index` of `dim`, dropping that dim.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i64>>(), &[2, 3]).unwrap();
    /// assert_eq!(t.select(0, 1).unwrap().to_vec::<i64>().unwrap(), vec![3, 4, 5]);
    /// assert!(t.select(0, 2).is_err());
    /// ```
    pub fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        self.strided_only("select")?;
        check_dim("select", dim, self.ndim())?;
        let size = self.shape()[dim];
        if index >= size {
            return Err(Error::out_of_bounds(
                "select",
                format!("index {index} is out of range for dim {dim} of size {size} (shape {:?})", self.shape()),
            ));
        }
        let offset = self.offset_if_nonempty(self.shape(), index, dim);
        let (mut sh, mut st) = (Dims::from_slice(self.shape()), Strides::from_slice(self.strides()));
        sh.remove(dim);
        st.remove(dim);
        self.with_layout("select", ViewChange::Select { dim, index }, sh, st, offset)
    }

    /// Elements `start, start + step, ...` below `end` (clamped to the size) of `dim`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..10).collect::<Vec<i64>>(), &[10]).unwrap();
    /// assert_eq!(t.slice(0, 1, 100, 3).unwrap().to_vec::<i64>().unwrap(), vec![1, 4, 7]);
    /// ```
    pub fn slice(&self, dim: usize, start: usize, end: usize, step: usize) -> Result<Tensor> {
        self.strided_only("slice")?;
        check_dim("slice", dim, self.ndim())?;
        if step == 0 {
            return Err(Error::invalid(
                "slice",
                format!("step must be >= 1, got 0 (dim {dim}, shape {:?})", self.shape()),
            ));
        }
        let size = self.shape()[dim];
        let end = end.min(size);
        let start = start.min(end);
        let len = (end - start).div_ceil(step);
        let mut sh = Dims::from_slice(self.shape());
        let mut st = Strides::from_slice(self.strides());
        sh[dim] = len;
        let offset = self.offset_if_nonempty(&sh, start, dim);
        // In a non-empty view with two or more elements along `dim` the stepped stride is
        // reachable, so it fits; otherwise it never addresses anything (saturate).
        st[dim] = st[dim].saturating_mul(step as isize);
        self.with_layout("slice", ViewChange::Slice { dim, start, len, step }, sh, st, offset)
    }

    /// Broadcasts to `shape` (NumPy rules: leading dims added, size-1 dims stretched with
    /// stride 0). `expand` and `broadcast_to` are the same op.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1u8, 2], &[2, 1]).unwrap();
    /// let e = t.expand(&[3, 2, 4]).unwrap();
    /// assert_eq!(e.strides(), &[0, 1, 0]);
    /// assert!(t.expand(&[3, 3]).is_err());
    /// ```
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        self.strided_only("expand")?;
        self.broadcast_impl("expand", shape)
    }

    /// Alias of [`Tensor::expand`].
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1i8, 2], &[2]).unwrap();
    /// assert_eq!(t.broadcast_to(&[2, 2]).unwrap().to_vec::<i8>().unwrap(), vec![1, 2, 1, 2]);
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        self.strided_only("broadcast_to")?;
        self.broadcast_impl("broadcast_to", shape)
    }

    fn broadcast_impl(&self, op: &'static str, target: &[usize]) -> Result<Tensor> {
        let st = self.broadcast_strides_for(op, target)?;
        let change = ViewChange::Broadcast { from: self.shape(), to: target };
        self.with_layout(op, change, Dims::from_slice(target), st, self.storage_offset())
    }

    /// The strides this tensor has when broadcast to `target` (NumPy rules: 0 on the
    /// dims it is broadcast along), without building the view.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1f32, 2., 3.], &[3, 1]).unwrap();
    /// assert_eq!(&t.broadcast_strides(&[2, 3, 4]).unwrap()[..], &[0, 1, 0]);
    /// assert!(t.broadcast_strides(&[2, 4]).is_err());
    /// ```
    pub fn broadcast_strides(&self, target: &[usize]) -> Result<Strides> {
        self.strided_only("broadcast_strides")?;
        self.broadcast_strides_for("broadcast_to", target)
    }

    fn broadcast_strides_for(&self, op: &'static str, target: &[usize]) -> Result<Strides> {
        let n = target.len();
        let bad = || {
            Error::shape(
                op,
                format!("cannot broadcast shape {:?} to {target:?} (each dim must match or be 1)", self.shape()),
            )
        };
        if self.ndim() > n {
            return Err(bad());
        }
        shape::checked_numel(op, target, self.dtype())?;
        let lead = n - self.ndim();
        let mut st = Strides::from_elem(0, n);
        for i in 0..n {
            if i < lead {
                continue;
            }
            let (d, s) = (self.shape()[i - lead], self.strides()[i - lead]);
            st[i] = if d == target[i] {
                s
            } else if d == 1 {
                0
            } else {
                return Err(bad());
            };
        }
        Ok(st)
    }

    /// Removes `dim` if its size is 1; otherwise returns the same view (as PyTorch).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[2, 1], DType::F32, Device::Cpu).unwrap();
    /// assert_eq!(t.squeeze(1).unwrap().shape(), &[2]);
    /// assert_eq!(t.squeeze(0).unwrap().shape(), &[2, 1]); // size 2: no-op
    /// ```
    pub fn squeeze(&self, dim: usize) -> Result<Tensor> {
        self.strided_only("squeeze")?;
        check_dim("squeeze", dim, self.ndim())?;
        if self.shape()[dim] != 1 {
            return Ok(self.clone());
        }
        let (mut sh, mut st) = (Dims::from_slice(self.shape()), Strides::from_slice(self.strides()));
        sh.remove(dim);
        st.remove(dim);
        self.with_layout("squeeze", ViewChange::Squeeze(dim), sh, st, self.storage_offset())
    }

    /// Inserts a size-1 dim at `dim` (`0..=ndim`).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType, Device};
    /// let t = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    /// assert_eq!(t.unsqueeze(2).unwrap().shape(), &[2, 3, 1]);
    /// assert!(t.unsqueeze(3).is_err());
    /// ```
    pub fn unsqueeze(&self, dim: usize) -> Result<Tensor> {
        self.strided_only("unsqueeze")?;
        check_dim("unsqueeze", dim, self.ndim() + 1)?;
        let (mut sh, mut st) = (Dims::from_slice(self.shape()), Strides::from_slice(self.strides()));
        // The stride of a size-1 dim never addresses anything; saturate rather than
        // overflow on exotic (empty or as_strided) views.
        let stride = if dim < self.ndim() { st[dim].saturating_mul(sh[dim] as isize) } else { 1 };
        sh.insert(dim, 1);
        st.insert(dim, stride);
        self.with_layout("unsqueeze", ViewChange::Unsqueeze(dim), sh, st, self.storage_offset())
    }

    /// One dim holding every element (a view when possible, else a copy); a 0-dim
    /// tensor becomes shape `[1]`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Tensor, DType};
    /// let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    /// assert_eq!(t.t().unwrap().flatten().unwrap().to_vec::<u8>().unwrap(), vec![1, 3, 2, 4]);
    /// assert_eq!(Tensor::scalar(5, DType::U8).unwrap().flatten().unwrap().shape(), &[1]);
    /// ```
    pub fn flatten(&self) -> Result<Tensor> {
        self.strided_only("flatten")?;
        self.reshape(&[-1]).and_then(|t| {
            if self.ndim() == 0 {
                t.with_layout("flatten", ViewChange::Unsqueeze(0), vec![1], vec![1], t.storage_offset())
            } else {
                Ok(t)
            }
        })
    }

    /// Reverses `dim` (negative stride, no copy).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec(vec![1, 2, 3, 4i32], &[2, 2]).unwrap();
    /// let f = t.flip(1).unwrap();
    /// assert_eq!(f.strides(), &[2, -1]);
    /// assert_eq!(f.to_vec::<i32>().unwrap(), vec![2, 1, 4, 3]);
    /// ```
    pub fn flip(&self, dim: usize) -> Result<Tensor> {
        self.strided_only("flip")?;
        check_dim("flip", dim, self.ndim())?;
        let size = self.shape()[dim];
        let mut st = Strides::from_slice(self.strides());
        let offset = self.offset_if_nonempty(self.shape(), size.saturating_sub(1), dim);
        // Wrapping: only `isize::MIN` wraps, and only on a dim that addresses nothing.
        st[dim] = st[dim].wrapping_neg();
        self.with_layout("flip", ViewChange::Flip(dim), Dims::from_slice(self.shape()), st, offset)
    }

    /// A view with explicit sizes, strides and absolute storage offset (as PyTorch),
    /// rejected if any reachable element lies outside the storage.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let t = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[6]).unwrap();
    /// let w = t.as_strided(&[2, 2], &[1, 2], 1).unwrap();
    /// assert_eq!(w.to_vec::<i32>().unwrap(), vec![1, 3, 2, 4]);
    /// assert!(t.as_strided(&[2], &[5], 2).is_err());
    /// ```
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
        self.strided_only("as_strided")?;
        if shape.len() != strides.len() {
            return Err(Error::shape(
                "as_strided",
                format!("shape {shape:?} and strides {strides:?} must have the same length"),
            ));
        }
        shape::checked_numel("as_strided", shape, self.dtype())?;
        let cap = self.storage().capacity_elems();
        if let Some((lo, hi)) = exact_offset_range(shape, strides) {
            let first = offset as i128 + lo;
            let last = offset as i128 + hi;
            if first < 0 || last >= cap as i128 {
                return Err(Error::out_of_bounds(
                    "as_strided",
                    format!(
                        "shape {shape:?}, strides {strides:?}, offset {offset} reach elements {first}..={last}, outside the storage of {cap} elements"
                    ),
                ));
            }
        } else if offset > cap {
            return Err(Error::out_of_bounds(
                "as_strided",
                format!("offset {offset} is past the storage of {cap} elements"),
            ));
        }
        let change =
            if shape == self.shape() { ViewChange::Reshape { from: shape, to: shape } } else { ViewChange::AsStrided };
        self.with_layout("as_strided", change, shape.to_vec(), strides.to_vec(), offset)
    }
}

/// Reachable offset range in i128 (no saturation), `None` if empty.
fn exact_offset_range(shape: &[usize], strides: &[isize]) -> Option<(i128, i128)> {
    if shape.contains(&0) {
        return None;
    }
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&d, &s) in shape.iter().zip(strides) {
        let span = (d as i128 - 1) * s as i128;
        if span < 0 {
            lo += span
        } else {
            hi += span
        }
    }
    Some((lo, hi))
}
