//! Sparse tensors: the COO and CSR layouts.
//!
//! # Representation
//! A sparse tensor is a [`Tensor`] whose `sparse` field holds its components ([`Parts`]);
//! the components are ordinary strided, contiguous tensors on the sparse tensor's device:
//!
//! - **COO** (hybrid, as PyTorch): `indices` (I64 `[sparse_dims, nnz]`), `values`
//!   (`[nnz, *dense_dims]`, any dtype), the full shape `[*sparse_sizes, *dense_sizes]` and a
//!   *coalesced* flag (indices sorted row-major and unique: set by `coalesce`, by the
//!   conversions that produce such indices, and by the constructor when it finds them so —
//!   it reads the indices anyway —; never taken from a user).
//! - **CSR** (2-D, optionally with dense dims): `crow_indices` (I64 `[rows + 1]`, monotone,
//!   from 0 to nnz), `col_indices` (I64 `[nnz]`), `values` (`[nnz, *dense_dims]`), and the
//!   same flag inside (columns strictly increasing within each row; not public).
//!
//! Duplicates are allowed and add up (`to_dense`). An op that is not additive (any map but
//! a linear one) would be wrong applied to each duplicate, so maps and sums coalesce an
//! uncoalesced input first (`call::sparse`).
//!
//! The strided fields of a sparse tensor are a stand-in (its full shape, zero strides, never
//! contiguous, a data-less storage of its values' dtype and device): `shape()`, `dtype()`,
//! `device()`, `numel()` answer for the sparse tensor without a branch, and every strided
//! path that takes a lock on it gets an `Error::Layout` from that storage — a missed check
//! is an `Err`, never a read. Strided-only methods (views, `to_vec`, `fill_`, growth) say
//! so first, by name ([`Tensor::strided_only`]). The call path asks the layout once, where it
//! looks a row up (`call/launch.rs`): a call with a sparse operand is looked up under that
//! layout, so an op with no sparse rows is `Error::NoKernel` naming the layouts it has.
//! Layout-specific kernels (to_dense, coalesce, the CSR conversions) are rows keyed by the
//! sparse layout, run on the components by `call::run_components`.

mod construct;
mod convert;
mod csr;
mod display;
pub(crate) mod pattern;
mod product;
mod softmax;

use crate::{Error, Layout, Result, Tensor};

/// A sparse tensor's components (see the module docs).
#[derive(Debug, Clone)]
pub(crate) enum Parts {
    /// Coordinate format.
    Coo {
        /// I64 `[sparse_dims, nnz]`, contiguous.
        indices: Tensor,
        /// `[nnz, *dense_dims]`, contiguous.
        values: Tensor,
        /// Indices sorted (row-major) and unique.
        coalesced: bool,
    },
    /// Compressed sparse rows.
    Csr {
        /// I64 `[rows + 1]`, contiguous.
        crow: Tensor,
        /// I64 `[nnz]`, contiguous.
        col: Tensor,
        /// `[nnz, *dense_dims]`, contiguous.
        values: Tensor,
        /// Columns strictly increasing within each row (no duplicates): what COO calls
        /// coalesced. Not public (PyTorch has no such query for CSR); maps read it.
        coalesced: bool,
    },
}

impl Parts {
    /// The layout these components make.
    pub(crate) fn layout(&self) -> Layout {
        match self {
            Parts::Coo { .. } => Layout::SparseCoo,
            Parts::Csr { .. } => Layout::SparseCsr,
        }
    }
    /// Whether the pattern has no duplicates (COO: sorted unique indices; CSR: strictly
    /// increasing columns within each row).
    pub(crate) fn coalesced(&self) -> bool {
        match self {
            Parts::Coo { coalesced, .. } | Parts::Csr { coalesced, .. } => *coalesced,
        }
    }
    /// Leading batch dims (batched CSR; 0 for COO and plain CSR).
    pub(crate) fn batch_dims(&self) -> usize {
        match self {
            Parts::Coo { .. } => 0,
            Parts::Csr { crow, .. } => crow.ndim() - 1,
        }
    }
    /// The specified entries (per batch for batched CSR).
    pub(crate) fn nnz(&self) -> usize {
        match self {
            Parts::Coo { values, .. } => values.shape()[0],
            Parts::Csr { col, .. } => col.shape()[col.ndim() - 1],
        }
    }
    /// The values tensor.
    pub(crate) fn values(&self) -> &Tensor {
        match self {
            Parts::Coo { values, .. } | Parts::Csr { values, .. } => values,
        }
    }
}

impl Tensor {
    /// Wraps checked components into a sparse tensor of `shape` (no validation here).
    pub(crate) fn from_sparse_parts(parts: Parts, shape: &[usize]) -> Tensor {
        let values = parts.values();
        let storage = crate::Storage::no_data(values.dtype(), values.device(), parts.layout());
        let mut t = Tensor::from_parts_unchecked(storage, shape, vec![0isize; shape.len()], 0);
        t.contiguous = false;
        t.sparse = Some(std::sync::Arc::new(parts));
        t
    }

    /// The components, or an `Error::Layout` naming `op` for a strided tensor.
    pub(crate) fn sparse_parts(&self, op: &'static str) -> Result<&Parts> {
        self.sparse.as_deref().ok_or_else(|| Error::Layout {
            op,
            layout: Layout::Strided,
            msg: "needs a sparse tensor (make one with sparse_coo, sparse_csr, to_sparse or to_sparse_csr)".into(),
        })
    }

    /// True for a sparse (COO or CSR) tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// let t = tensor_ops::Tensor::from_vec(vec![1f32], &[1]).unwrap();
    /// assert!(!t.is_sparse());
    /// ```
    pub fn is_sparse(&self) -> bool {
        self.sparse.is_some()
    }

    /// A COO tensor's indices, I64 `[sparse_dims, nnz]` (a handle to the component, not a
    /// copy). `Err` for any other layout.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![0i64, 1, 1, 0], &[2, 2]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![5i32, 6], &[2]).unwrap(), &[2, 2]).unwrap();
    /// assert_eq!(s.indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 1, 0]);
    /// assert!(i.indices().is_err());
    /// ```
    pub fn indices(&self) -> Result<Tensor> {
        match self.sparse_parts("indices")? {
            Parts::Coo { indices, .. } => Ok(indices.clone()),
            p => Err(Error::Layout { op: "indices", layout: p.layout(), msg: "needs a sparse_coo tensor".into() }),
        }
    }

    /// A sparse tensor's values, `[nnz, *dense_dims]` (a handle to the component).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![3i64], &[1, 1]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![2.5f64], &[1]).unwrap(), &[5]).unwrap();
    /// assert_eq!(s.values().unwrap().to_vec::<f64>().unwrap(), vec![2.5]);
    /// ```
    pub fn values(&self) -> Result<Tensor> {
        Ok(self.sparse_parts("values")?.values().clone())
    }

    /// A CSR tensor's row pointers, `[*batch, rows + 1]`, I64 (or I32 when it was built from
    /// I32 components). `Err` for any other layout.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let crow = Tensor::from_vec(vec![0i64, 1, 1], &[3]).unwrap();
    /// let col = Tensor::from_vec(vec![2i64], &[1]).unwrap();
    /// let s = Tensor::sparse_csr(&crow, &col, &Tensor::from_vec(vec![1f32], &[1]).unwrap(), &[2, 3]).unwrap();
    /// assert_eq!(s.crow_indices().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 1]);
    /// ```
    pub fn crow_indices(&self) -> Result<Tensor> {
        match self.sparse_parts("crow_indices")? {
            Parts::Csr { crow, .. } => Ok(crow.clone()),
            p => Err(Error::Layout { op: "crow_indices", layout: p.layout(), msg: "needs a sparse_csr tensor".into() }),
        }
    }

    /// A CSR tensor's column indices, `[*batch, nnz]`, of the row pointers' dtype. `Err` for
    /// any other layout.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let crow = Tensor::from_vec(vec![0i64, 1, 1], &[3]).unwrap();
    /// let col = Tensor::from_vec(vec![2i64], &[1]).unwrap();
    /// let s = Tensor::sparse_csr(&crow, &col, &Tensor::from_vec(vec![1f32], &[1]).unwrap(), &[2, 3]).unwrap();
    /// assert_eq!(s.col_indices().unwrap().to_vec::<i64>().unwrap(), vec![2]);
    /// ```
    pub fn col_indices(&self) -> Result<Tensor> {
        match self.sparse_parts("col_indices")? {
            Parts::Csr { col, .. } => Ok(col.clone()),
            p => Err(Error::Layout { op: "col_indices", layout: p.layout(), msg: "needs a sparse_csr tensor".into() }),
        }
    }

    /// The number of specified entries (duplicates of an uncoalesced COO tensor count
    /// each; per batch for batched CSR). `Err` for a strided tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![1i64, 1], &[1, 2]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1u8, 2], &[2]).unwrap(), &[3]).unwrap();
    /// assert_eq!(s.nnz().unwrap(), 2);
    /// ```
    pub fn nnz(&self) -> Result<usize> {
        Ok(self.sparse_parts("nnz")?.nnz())
    }

    /// How many dims are sparse (COO: `indices` rows, leading; CSR: 2, after any batch
    /// dims). `Err` for a strided tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![1i64], &[1, 1]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2.], &[1, 2]).unwrap(), &[3, 2]).unwrap();
    /// assert_eq!((s.sparse_dim().unwrap(), s.dense_dim().unwrap()), (1, 1));
    /// ```
    pub fn sparse_dim(&self) -> Result<usize> {
        let parts = self.sparse_parts("sparse_dim")?;
        Ok(self.ndim() + 1 - parts.values().ndim())
    }

    /// How many trailing dims are dense (the values' dims after the entries' dim). `Err`
    /// for a strided tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![1i64], &[1, 1]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32], &[1]).unwrap(), &[3]).unwrap();
    /// assert_eq!(s.dense_dim().unwrap(), 0);
    /// ```
    pub fn dense_dim(&self) -> Result<usize> {
        let parts = self.sparse_parts("dense_dim")?;
        Ok(parts.values().ndim() - 1 - parts.batch_dims())
    }

    /// True for a COO tensor known to have sorted, unique indices (made by `coalesce`,
    /// `to_sparse`, a conversion that guarantees it, or a constructor given such indices).
    /// `Err` for any other layout.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![2i64, 0], &[1, 2]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap(), &[3]).unwrap();
    /// assert!(!s.is_coalesced().unwrap());
    /// ```
    pub fn is_coalesced(&self) -> Result<bool> {
        match self.sparse_parts("is_coalesced")? {
            Parts::Coo { coalesced, .. } => Ok(*coalesced),
            p => Err(Error::Layout { op: "is_coalesced", layout: p.layout(), msg: "needs a sparse_coo tensor".into() }),
        }
    }
}

impl Tensor {
    /// The same sparse tensor with `values` mapped by `on_values` and each index component
    /// by `on_index` (to_dtype, to_device, deep_clone).
    pub(crate) fn map_sparse_parts(
        &self,
        parts: &Parts,
        on_values: impl Fn(&Tensor) -> Result<Tensor>,
        on_index: impl Fn(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let parts = match parts {
            Parts::Coo { indices, values, coalesced } => {
                Parts::Coo { indices: on_index(indices)?, values: on_values(values)?, coalesced: *coalesced }
            }
            Parts::Csr { crow, col, values, coalesced } => Parts::Csr {
                crow: on_index(crow)?,
                col: on_index(col)?,
                values: on_values(values)?,
                coalesced: *coalesced,
            },
        };
        Ok(Tensor::from_sparse_parts(parts, self.shape()))
    }
}
