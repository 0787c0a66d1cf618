//! softmax / log_softmax of a sparse tensor along a sparse dim, PyTorch's
//! `torch.sparse.softmax` rule: unspecified entries are −∞, so they take no share and the
//! result has the input's pattern. The entries are grouped on the other sparse dims
//! (`coalesce`'s sort and segments over those index rows) and each group's softmax is one
//! step (`sparse_segment_softmax`, in f64). Along a dense dim the softmax is the dense
//! one of `values` (tensor-ops' `softmax` does that, with [`Tensor::with_values`]).

use super::pattern::group;
use super::Parts;
use crate::call::sparse::{coalesced_coo, in_layout, run_components, with_values};
use crate::registry::sparse::SEGMENT_SOFTMAX;
use crate::registry::ReduceOutput;
use crate::{DType, Error, Layout, Result, Scalar, Tensor};

impl Tensor {
    /// softmax (`log`: log_softmax) of a sparse tensor along the sparse dim `dim`, with
    /// unspecified entries taken as −∞: the result has this tensor's pattern (coalesced;
    /// CSR stays CSR). Bool/integer values compute in f32; f16/bf16/f32/f64 keep their
    /// dtype (computed in f64). `Err` for a strided tensor or a dense dim (`tensor_ops::
    /// softmax` handles both).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// // [[1, _, 1], [_, 5, _]]
    /// let i = Tensor::from_vec(vec![0i64, 0, 1, 0, 2, 1], &[2, 3])?;
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 1., 5.], &[3])?, &[2, 3])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_segment_softmax", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCoo).is_some() {
    /// let p = s.sparse_softmax(1, false)?;
    /// assert_eq!(p.values()?.to_vec::<f32>()?, vec![0.5, 0.5, 1.0]);
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn sparse_softmax(&self, dim: usize, log: bool) -> Result<Tensor> {
        let op = if log { "log_softmax" } else { "softmax" };
        let layout = self.layout();
        self.sparse_parts(op)?;
        // Dims before the dense ones are sparse (batched CSR's batch dims included).
        let sd = self.ndim() - self.dense_dim()?;
        if dim >= self.ndim() {
            return Err(Error::DimOutOfRange { op, dim, ndim: self.ndim() });
        }
        if dim >= sd {
            return Err(Error::Layout {
                op,
                layout,
                msg: format!(
                    "dim {dim} is a dense dim (sparse dims: 0..{sd}): tensor_ops::{op} maps the values along it"
                ),
            });
        }
        let coo = coalesced_coo(self)?;
        let (indices, values) = (coo.indices()?, coo.values()?);
        let values = values.to_dtype(ReduceOutput::Float.result(values.dtype()))?;
        let out = Tensor::empty(values.shape(), values.dtype(), values.device())?;
        if values.shape()[0] > 0 {
            let keys = Tensor::empty(&[sd - 1, indices.shape()[1]], DType::I64, self.device())?;
            for (k, d) in (0..sd).filter(|&d| d != dim).enumerate() {
                keys.select(0, k)?.copy_(&indices.select(0, d)?)?;
            }
            let groups = group(op, &keys)?;
            run_components(
                &SEGMENT_SOFTMAX,
                Layout::SparseCoo,
                values.dtype(),
                &out,
                &[&values, &groups.perm, &groups.seg],
                &[Scalar::Bool(log)],
            )
            .map_err(|e| e.renamed(op))?;
        }
        in_layout(with_values(&coo, out)?, layout == Layout::SparseCsr)
    }

    /// This sparse tensor's pattern with other `values` (`[nnz, *dense_sizes]`, any dtype,
    /// on this tensor's device): indices and the coalesced flag are shared, nothing is
    /// checked but the values' shape and device. `Err` for a strided tensor.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![1i64, 3], &[1, 2])?;
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2.], &[2])?, &[4])?;
    /// let t = s.with_values(&Tensor::from_vec(vec![7i32, 8], &[2])?)?;
    /// assert_eq!(t.values()?.to_vec::<i32>()?, vec![7, 8]);
    /// assert!(s.with_values(&Tensor::from_vec(vec![7i32], &[1])?).is_err());
    /// # Ok(()) }
    /// ```
    pub fn with_values(&self, values: &Tensor) -> Result<Tensor> {
        const OP: &str = "with_values";
        let parts: &Parts = self.sparse_parts(OP)?;
        let own = parts.values();
        if values.shape() != own.shape() {
            return Err(Error::shape(
                OP,
                format!("the values must have shape {:?} ([nnz, *dense_sizes]), got {:?}", own.shape(), values.shape()),
            ));
        }
        self.check_same_device(OP, values)?;
        with_values(self, values.contiguous()?)
    }
}
