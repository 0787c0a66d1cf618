//! Printing a sparse tensor as PyTorch does: its components, size, nnz and layout.

use super::Parts;
use crate::Tensor;
use std::fmt;

impl Tensor {
    /// `tensor(indices=…, values=…, size=[…], nnz=…, layout=sparse_coo)` (CSR:
    /// `crow_indices=…, col_indices=…, values=…`); `{:#}` prints the components
    /// multi-line.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![0i64, 2], &[1, 2]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap(), &[3]).unwrap();
    /// assert_eq!(
    ///     s.to_string(),
    ///     "tensor(indices=tensor([[0, 2]], dtype=i64), values=tensor([1., 2.], dtype=f32), size=[3], nnz=2, layout=sparse_coo)"
    /// );
    /// ```
    pub(crate) fn fmt_sparse(&self, parts: &Parts, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if f.alternate() { ",\n       " } else { ", " };
        let comp = |f: &mut fmt::Formatter<'_>, name: &str, t: &Tensor| {
            if f.alternate() {
                write!(f, "{name}={t:#}")
            } else {
                write!(f, "{name}={t}")
            }
        };
        f.write_str("tensor(")?;
        match parts {
            Parts::Coo { indices, values, .. } => {
                comp(f, "indices", indices)?;
                f.write_str(sep)?;
                comp(f, "values", values)?;
            }
            Parts::Csr { crow, col, values, .. } => {
                comp(f, "crow_indices", crow)?;
                f.write_str(sep)?;
                comp(f, "col_indices", col)?;
                f.write_str(sep)?;
                comp(f, "values", values)?;
            }
        }
        write!(f, "{sep}size={:?}, nnz={}, layout={})", self.shape(), parts.nnz(), parts.layout())
    }
}
