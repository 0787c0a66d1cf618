//! Conversions between the layouts and `coalesce`, as sequences of the layouts' steps
//! (`registry::sparse`), each a registry row run by `call::sparse::run_components`: the
//! core sizes every output (reading one count back from the device where a size depends on
//! the data) and a backend computes it.

use super::Parts;
use crate::call::sparse::run_components;
use crate::registry::sparse::{
    COO_SEGMENTS, COO_SEGMENT_SUM, COO_SORT, COO_TO_DENSE, COO_UNIQUE_INDICES, DENSE_COUNT, DENSE_INDICES, DENSE_VALUES,
};
use crate::{shape, DType, Error, Layout, Result, Scalar, Tensor};

/// The last element of a non-empty I64 tensor (a count), read from any device.
fn last_count(op: &'static str, t: &Tensor) -> Result<usize> {
    let n = t.numel();
    let v = t.select(0, n - 1)?.item()?.to::<i64>();
    usize::try_from(v).map_err(|_| Error::invalid(op, format!("a count of {v} came back from the device")))
}

/// `[n, *tail]`.
fn with_rows(n: usize, tail: &[usize]) -> Vec<usize> {
    std::iter::once(n).chain(tail.iter().copied()).collect()
}

impl Tensor {
    /// The dense (strided, row-major) tensor of the same shape, dtype and device: each
    /// specified entry added into zeros, so duplicates of an uncoalesced COO tensor sum
    /// (bool: or). A strided tensor is returned as it is (the same view).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// # let _ = tensor_ops::tensor_core::registry(); // (a backend registers the rows)
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![0i64, 1, 1, 2, 0, 0], &[2, 3])?; // (0,2), (1,0), (1,0)
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2., 3.], &[3])?, &[2, 3])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_coo_to_dense", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCoo).is_some() {
    /// assert_eq!(s.to_dense()?.to_vec::<f32>()?, vec![0., 0., 1., 5., 0., 0.]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn to_dense(&self) -> Result<Tensor> {
        match self.sparse.as_deref() {
            None => Ok(self.clone()),
            Some(Parts::Coo { indices, values, coalesced }) => {
                // The step zeros the output itself (on the CPU, block by block as it fills).
                let out = Tensor::empty_for("to_dense", self.shape(), self.dtype(), self.device())?;
                let params = [Scalar::Bool(*coalesced)];
                run_components(&COO_TO_DENSE, Layout::SparseCoo, self.dtype(), &out, &[indices, values], &params)?;
                Ok(out)
            }
            Some(Parts::Csr { .. }) => self.to_sparse_coo()?.to_dense(),
        }
    }

    /// The COO tensor with sorted (row-major), unique indices: duplicates' values summed
    /// (bool: or), in their original order. An already coalesced tensor is returned as it
    /// is. `Err` for another layout.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![2i64, 0, 2], &[1, 3])?;
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1i32, 2, 3], &[3])?, &[4])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_coo_sort", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCoo).is_some() {
    /// let c = s.coalesce()?;
    /// assert!(c.is_coalesced()?);
    /// assert_eq!(c.indices()?.to_vec::<i64>()?, vec![0, 2]);
    /// assert_eq!(c.values()?.to_vec::<i32>()?, vec![2, 4]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn coalesce(&self) -> Result<Tensor> {
        const OP: &str = "coalesce";
        let Parts::Coo { indices, values, coalesced } = self.sparse_parts(OP)? else {
            return Err(Error::Layout { op: OP, layout: self.layout(), msg: "needs a sparse_coo tensor".into() });
        };
        let (sd, nnz) = (indices.shape()[0], indices.shape()[1]);
        if *coalesced || nnz <= 1 {
            let parts = Parts::Coo { indices: indices.clone(), values: values.clone(), coalesced: true };
            return Ok(Tensor::from_sparse_parts(parts, self.shape()));
        }
        let device = self.device();
        let coo = |spec, dtype, out: &Tensor, inputs: &[&Tensor]| {
            run_components(spec, Layout::SparseCoo, dtype, out, inputs, &[]).map_err(|e| e.renamed(OP))
        };
        let perm = Tensor::empty(&[nnz], DType::I64, device)?;
        coo(&COO_SORT, DType::I64, &perm, &[indices])?;
        let seg = Tensor::empty(&[nnz], DType::I64, device)?;
        coo(&COO_SEGMENTS, DType::I64, &seg, &[indices, &perm])?;
        let n = last_count(OP, &seg)? + 1;
        let new_indices = Tensor::empty(&[sd, n], DType::I64, device)?;
        coo(&COO_UNIQUE_INDICES, DType::I64, &new_indices, &[indices, &perm, &seg])?;
        let new_values = Tensor::zeros(&with_rows(n, &values.shape()[1..]), values.dtype(), device)?;
        coo(&COO_SEGMENT_SUM, values.dtype(), &new_values, &[values, &perm, &seg])?;
        let parts = Parts::Coo { indices: new_indices, values: new_values, coalesced: true };
        Ok(Tensor::from_sparse_parts(parts, self.shape()))
    }

    /// A coalesced COO tensor of this strided tensor whose first `sparse_dims` dims are
    /// sparse: a position is specified when any element of its dense slice is nonzero
    /// (`-0.0` counts as zero, NaN as nonzero). `sparse_dims` must be in `1..=ndim`. A COO
    /// tensor with that many sparse dims is returned as it is; CSR goes through COO.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// let d = Tensor::from_vec(vec![0f32, 3., 0., 0., 0., 4.], &[2, 3])?;
    /// # if tensor_ops::tensor_core::registry().row_set("dense_to_sparse_count", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCoo).is_some() {
    /// let s = d.to_sparse(2)?;
    /// assert_eq!(s.indices()?.to_vec::<i64>()?, vec![0, 1, 1, 2]);
    /// assert_eq!(s.values()?.to_vec::<f32>()?, vec![3., 4.]);
    /// // one sparse dim: rows are specified whole
    /// assert_eq!(d.to_sparse(1)?.values()?.shape(), &[2, 3]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn to_sparse(&self, sparse_dims: usize) -> Result<Tensor> {
        const OP: &str = "to_sparse";
        self.not_quantized(OP)?;
        match self.layout() {
            Layout::Strided => {}
            Layout::SparseCoo if self.sparse_dim()? == sparse_dims => return Ok(self.clone()),
            Layout::SparseCsr if sparse_dims == 2 => return self.to_sparse_coo(),
            layout => {
                return Err(Error::Layout {
                    op: OP,
                    layout,
                    msg: format!(
                        "changing the number of sparse dims ({} to {sparse_dims}) is not supported",
                        self.sparse_dim()?
                    ),
                })
            }
        }
        if sparse_dims == 0 || sparse_dims > self.ndim() {
            return Err(Error::invalid(
                OP,
                format!("sparse_dims must be in 1..={} for shape {:?}, got {sparse_dims}", self.ndim(), self.shape()),
            ));
        }
        let dense = self.contiguous()?;
        let (device, dtype) = (self.device(), self.dtype());
        let positions: usize = self.shape()[..sparse_dims].iter().product();
        shape::checked_numel(OP, &[positions], DType::I64)?;
        let run = |spec, out: &Tensor, inputs: &[&Tensor], params: &[Scalar]| {
            run_components(spec, Layout::SparseCoo, dtype, out, inputs, params).map_err(|e| e.renamed(OP))
        };
        let counts = Tensor::empty(&[positions], DType::I64, device)?;
        run(&DENSE_COUNT, &counts, &[&dense], &[Scalar::Int(sparse_dims as i64)])?;
        let nnz = if positions == 0 { 0 } else { last_count(OP, &counts)? };
        let indices = Tensor::empty(&[sparse_dims, nnz], DType::I64, device)?;
        run(&DENSE_INDICES, &indices, &[&counts, &dense], &[])?;
        let values = Tensor::empty(&with_rows(nnz, &self.shape()[sparse_dims..]), dtype, device)?;
        run(&DENSE_VALUES, &values, &[&counts, &dense], &[])?;
        Ok(Tensor::from_sparse_parts(Parts::Coo { indices, values, coalesced: true }, self.shape()))
    }

    /// This tensor as COO: CSR's rows expanded (uncoalesced: columns within a row keep
    /// their order), a strided tensor with every dim sparse (`to_sparse(ndim)`), COO as it
    /// is.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::{Layout, Tensor};
    /// let crow = Tensor::from_vec(vec![0i64, 1, 3], &[3])?;
    /// let col = Tensor::from_vec(vec![1i64, 0, 1], &[3])?;
    /// let s = Tensor::sparse_csr(&crow, &col, &Tensor::from_vec(vec![7i32, 8, 9], &[3])?, &[2, 2])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_crow_to_rows", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// let c = s.to_sparse_coo()?;
    /// assert_eq!(c.layout(), Layout::SparseCoo);
    /// assert_eq!(c.indices()?.to_vec::<i64>()?, vec![0, 1, 1, 1, 0, 1]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn to_sparse_coo(&self) -> Result<Tensor> {
        const OP: &str = "to_sparse_coo";
        match self.sparse.as_deref() {
            None => self.to_sparse(self.ndim()),
            Some(Parts::Coo { .. }) => Ok(self.clone()),
            Some(parts @ Parts::Csr { .. }) => self.csr_to_coo(OP, parts),
        }
    }

    /// This tensor as CSR, as PyTorch's `to_sparse_csr()`: a strided tensor of rank ≥ 2 with
    /// every dim sparse — its last two dims the rows and columns, any leading dims batch dims
    /// (batched CSR: every batch must hold the same nnz, else `Err`; see
    /// [`Tensor::to_sparse_csr_hybrid`] for dense trailing dims) —; a COO tensor through
    /// `coalesce` (so columns are sorted and unique within each row; with more than two
    /// sparse dims the leading ones become batch dims, under the same rule); CSR as it is.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// let d = Tensor::from_vec(vec![0f64, 7., 8., 9.], &[2, 2])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_rows_to_crow", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// let s = d.to_sparse_csr()?;
    /// assert_eq!(s.crow_indices()?.to_vec::<i64>()?, vec![0, 1, 3]);
    /// assert_eq!(s.col_indices()?.to_vec::<i64>()?, vec![1, 0, 1]);
    /// assert_eq!(s.to_dense()?.to_vec::<f64>()?, vec![0., 7., 8., 9.]);
    /// // a batch of two 1x2 matrices with one entry each
    /// let b = Tensor::from_vec(vec![0f64, 7., 8., 0.], &[2, 1, 2])?.to_sparse_csr()?;
    /// assert_eq!(b.crow_indices()?.shape(), &[2, 2]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn to_sparse_csr(&self) -> Result<Tensor> {
        const OP: &str = "to_sparse_csr";
        self.not_quantized(OP)?;
        match self.layout() {
            Layout::SparseCsr => return Ok(self.clone()),
            Layout::Strided => {
                if self.ndim() < 2 {
                    return Err(Error::shape(
                        OP,
                        format!("needs rank >= 2 ([*batch, rows, cols]), got shape {:?}", self.shape()),
                    ));
                }
                return self.to_sparse(self.ndim())?.to_sparse_csr();
            }
            _ => {}
        }
        if self.sparse_dim()? < 2 {
            return Err(Error::Layout {
                op: OP,
                layout: Layout::SparseCoo,
                msg: format!(
                    "needs at least 2 sparse dims (rows, cols; more lead as batch dims), this tensor has {}",
                    self.sparse_dim()?
                ),
            });
        }
        self.coalesce()?.coalesced_coo_to_csr(OP)
    }

    /// A strided tensor as CSR with its last `dense_dim` dims dense (hybrid values
    /// `[*batch, nnz, *dense]`), as PyTorch's `to_sparse_csr(dense_dim)`: the two dims before
    /// them are the rows and columns, any leading dims batch dims (every batch must hold the
    /// same nnz). A position is specified when any element of its dense slice is nonzero.
    /// `Err` for a sparse tensor (convert it with `to_dense()` first) or when fewer than two
    /// dims are left for the rows and columns.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_rows_to_crow", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// // a 2x2 matrix of pairs: rows 0 and 1 each have one nonzero pair
    /// let d = Tensor::from_vec(vec![0f32, 0., 1., 2., 3., 0., 0., 0.], &[2, 2, 2])?;
    /// let s = d.to_sparse_csr_hybrid(1)?;
    /// assert_eq!((s.nnz()?, s.values()?.shape()), (2, &[2usize, 2][..]));
    /// assert_eq!(s.to_dense()?.to_vec::<f32>()?, d.to_vec::<f32>()?);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn to_sparse_csr_hybrid(&self, dense_dim: usize) -> Result<Tensor> {
        const OP: &str = "to_sparse_csr_hybrid";
        self.not_quantized(OP)?;
        if self.layout() != Layout::Strided {
            return Err(Error::Layout {
                op: OP,
                layout: self.layout(),
                msg: "needs a strided tensor (convert a sparse one with to_dense() first, or use to_sparse_csr())"
                    .into(),
            });
        }
        // (`dense_dim + 2` overflows for a `-1 as usize` dense_dim: compared without it)
        if self.ndim() < 2 || self.ndim() - 2 < dense_dim {
            return Err(Error::shape(
                OP,
                format!(
                    "needs rank >= dense_dim + 2 (rows, cols, then {dense_dim} dense dims), got shape {:?}",
                    self.shape()
                ),
            ));
        }
        self.to_sparse(self.ndim() - dense_dim)?.to_sparse_csr().map_err(|e| e.renamed(OP))
    }
}
