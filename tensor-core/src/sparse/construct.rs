//! The validating constructors: `Tensor::sparse_coo` and `Tensor::sparse_csr`.
//!
//! Every check reads the index components once (on the host: a CUDA tensor's indices are
//! brought over) before the tensor exists, so no kernel ever sees an index out of range.

use super::Parts;
use crate::{shape, DType, Error, Result, Tensor};

/// `Err` unless `t` is a strided tensor of dtype I64 (what `what` names).
fn index_tensor(op: &'static str, what: &str, t: &Tensor) -> Result<()> {
    t.strided_only(op)?;
    if t.dtype() != DType::I64 {
        return Err(Error::DType {
            op,
            msg: format!("{what} must be i64, got {} (convert with to_dtype(DType::I64))", t.dtype()),
        });
    }
    Ok(())
}

/// `Err` unless `values` is strided, on `indices`' device, with `nnz` rows and dense dims
/// `dense` (the shape's tail).
fn check_values(op: &'static str, values: &Tensor, index: &Tensor, nnz: usize, dense: &[usize]) -> Result<()> {
    values.strided_only(op)?;
    index.check_same_device(op, values)?;
    let want: Vec<usize> = std::iter::once(nnz).chain(dense.iter().copied()).collect();
    if values.shape() != want.as_slice() {
        return Err(Error::shape(
            op,
            format!("values must have shape [nnz, *dense_dims] = {want:?} (nnz {nnz}, dense dims {dense:?} from the shape), got {:?}", values.shape()),
        ));
    }
    Ok(())
}

impl Tensor {
    /// A COO tensor of `shape` from `indices` (I64 `[sparse_dims, nnz]`, each row `d` in
    /// `0..shape[d]`) and `values` (`[nnz, *shape[sparse_dims..]]`, any dtype, on the same
    /// device). Duplicate indices are allowed (they add up: see `coalesce`). The components
    /// are kept as contiguous tensors (no copy when they already are).
    ///
    /// Errors (each names `sparse_coo`, the shapes and what would be valid): indices not
    /// I64 or not 2-D, `sparse_dims` 0 or above the shape's rank, values of the wrong shape,
    /// an index out of range, operands on two devices, a sparse component.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Layout, Tensor};
    /// // a 2x3 matrix with 1 at (0, 2) and 2 at (1, 0)
    /// let i = Tensor::from_vec(vec![0i64, 1, 2, 0], &[2, 2]).unwrap();
    /// let v = Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap();
    /// let s = Tensor::sparse_coo(&i, &v, &[2, 3]).unwrap();
    /// assert_eq!((s.layout(), s.shape(), s.nnz().unwrap()), (Layout::SparseCoo, &[2, 3][..], 2));
    /// // an index past the size is refused
    /// let bad = Tensor::from_vec(vec![0i64, 1, 3, 0], &[2, 2]).unwrap();
    /// assert!(Tensor::sparse_coo(&bad, &v, &[2, 3]).unwrap_err().to_string().contains("out of range"));
    /// ```
    pub fn sparse_coo(indices: &Tensor, values: &Tensor, shape: &[usize]) -> Result<Tensor> {
        const OP: &str = "sparse_coo";
        values.not_quantized(OP)?;
        index_tensor(OP, "indices", indices)?;
        if indices.ndim() != 2 {
            return Err(Error::shape(
                OP,
                format!("indices must be 2-D [sparse_dims, nnz], got shape {:?}", indices.shape()),
            ));
        }
        let (sd, nnz) = (indices.shape()[0], indices.shape()[1]);
        if sd == 0 || sd > shape.len() {
            return Err(Error::shape(
                OP,
                format!(
                    "indices {:?} give {sd} sparse dims; a shape of rank {} takes 1..={}",
                    indices.shape(),
                    shape.len(),
                    shape.len()
                ),
            ));
        }
        check_values(OP, values, indices, nnz, &shape[sd..])?;
        shape::checked_numel(OP, shape, values.dtype())?;
        let idx = indices.to_vec::<i64>()?;
        for d in 0..sd {
            let size = shape[d];
            if let Some(j) = idx[d * nnz..(d + 1) * nnz].iter().position(|&v| v < 0 || v as u64 >= size as u64) {
                return Err(Error::out_of_bounds(
                    OP,
                    format!(
                        "indices[{d}, {j}] = {} is out of range for dim {d} of shape {shape:?} (valid: 0..{size})",
                        idx[d * nnz + j]
                    ),
                ));
            }
        }
        // Already sorted row-major and unique: coalesced (one pass over what was read).
        let idx = &idx;
        let column = |j: usize| (0..sd).map(move |d| idx[d * nnz + j]);
        let coalesced = (1..nnz).all(|j| column(j - 1).cmp(column(j)).is_lt());
        let parts = Parts::Coo { indices: indices.contiguous()?, values: values.contiguous()?, coalesced };
        Ok(Tensor::from_sparse_parts(parts, shape))
    }

    /// A CSR tensor of `shape` (`[*batch, rows, cols, *dense_dims]`) from `crow` (
    /// `[*batch, rows + 1]`: in each batch `crow[0] == 0`, non-decreasing, `crow[rows] ==
    /// nnz`), `col` (`[*batch, nnz]`, each in `0..cols`) and `values` (`[*batch, nnz,
    /// *dense_dims]`, any dtype, on the same device). `crow` and `col` are both I64 or both
    /// I32 (as PyTorch; I32 components keep their dtype and make `spmm`/`spmv` read 4 bytes
    /// less per entry; conversions to COO widen them, COO indices being I64). Row `r`'s entries are
    /// `crow[r]..crow[r + 1]`; columns within a row need not be sorted or unique
    /// (duplicates add up). Batched CSR (PyTorch's): the batch dims lead the shape and every
    /// batch has the same `nnz` (`nnz()` is that per-batch count).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{Layout, Tensor};
    /// // [[0, 7], [8, 9]]
    /// let crow = Tensor::from_vec(vec![0i64, 1, 3], &[3]).unwrap();
    /// let col = Tensor::from_vec(vec![1i64, 0, 1], &[3]).unwrap();
    /// let v = Tensor::from_vec(vec![7i32, 8, 9], &[3]).unwrap();
    /// let s = Tensor::sparse_csr(&crow, &col, &v, &[2, 2]).unwrap();
    /// assert_eq!(s.layout(), Layout::SparseCsr);
    /// // row pointers must not decrease
    /// let bad = Tensor::from_vec(vec![0i64, 2, 1], &[3]).unwrap();
    /// assert!(Tensor::sparse_csr(&bad, &col, &v, &[2, 2]).is_err());
    /// // a batch of two 2x2 matrices with one entry each
    /// let crow = Tensor::from_vec(vec![0i64, 1, 1, 0, 0, 1], &[2, 3]).unwrap();
    /// let col = Tensor::from_vec(vec![0i64, 1], &[2, 1]).unwrap();
    /// let v = Tensor::from_vec(vec![5f32, 6.], &[2, 1]).unwrap();
    /// let b = Tensor::sparse_csr(&crow, &col, &v, &[2, 2, 2]).unwrap();
    /// assert_eq!((b.nnz().unwrap(), b.sparse_dim().unwrap(), b.dense_dim().unwrap()), (1, 2, 0));
    /// ```
    pub fn sparse_csr(crow: &Tensor, col: &Tensor, values: &Tensor, shape: &[usize]) -> Result<Tensor> {
        const OP: &str = "sparse_csr";
        values.not_quantized(OP)?;
        crow.strided_only(OP)?;
        col.strided_only(OP)?;
        if !matches!(crow.dtype(), DType::I32 | DType::I64) || col.dtype() != crow.dtype() {
            return Err(Error::DType {
                op: OP,
                msg: format!(
                    "crow_indices and col_indices must both be i64 or both i32, got {} and {} (convert with to_dtype)",
                    crow.dtype(),
                    col.dtype()
                ),
            });
        }
        let batch = crow.ndim().saturating_sub(1);
        if crow.ndim() == 0 || shape.len() < batch + 2 {
            return Err(Error::shape(
                OP,
                format!(
                    "the shape must be [*batch, rows, cols, *dense_dims] (rank >= 2 + {batch} batch dims, from \
                     crow_indices {:?}), got {shape:?}",
                    crow.shape()
                ),
            ));
        }
        let (batch_shape, rows, cols) = (&shape[..batch], shape[batch], shape[batch + 1]);
        let want_crow: Vec<usize> = batch_shape.iter().copied().chain([rows + 1]).collect();
        if crow.shape() != want_crow.as_slice() {
            return Err(Error::shape(
                OP,
                format!(
                    "crow_indices must have shape [*batch, rows + 1] = {want_crow:?} for shape {shape:?}, got {:?}",
                    crow.shape()
                ),
            ));
        }
        if col.ndim() != batch + 1 || &col.shape()[..batch] != batch_shape {
            return Err(Error::shape(
                OP,
                format!("col_indices must have shape [*batch, nnz] with batch {batch_shape:?}, got {:?}", col.shape()),
            ));
        }
        crow.check_same_device(OP, col)?;
        let nnz = col.shape()[batch];
        let want_values: Vec<usize> =
            batch_shape.iter().copied().chain([nnz]).chain(shape[batch + 2..].iter().copied()).collect();
        values.strided_only(OP)?;
        col.check_same_device(OP, values)?;
        if values.shape() != want_values.as_slice() {
            return Err(Error::shape(
                OP,
                format!(
                    "values must have shape [*batch, nnz, *dense_dims] = {want_values:?} (nnz {nnz}, dense dims {:?} from the shape), got {:?}",
                    &shape[batch + 2..],
                    values.shape()
                ),
            ));
        }
        shape::checked_numel(OP, shape, values.dtype())?;
        let (c, k) = (crow.to_dtype(DType::I64)?.to_vec::<i64>()?, col.to_dtype(DType::I64)?.to_vec::<i64>()?);
        let mut coalesced = true;
        let batches: usize = batch_shape.iter().product();
        for b in 0..batches {
            let (c, k) = (&c[b * (rows + 1)..(b + 1) * (rows + 1)], &k[b * nnz..(b + 1) * nnz]);
            let at = if batch == 0 { String::new() } else { format!(" (batch {b})") };
            if c[0] != 0 || c[rows] != nnz as i64 {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "crow_indices must start at 0 and end at nnz = {nnz}{at}, got first {} and last {}",
                        c[0], c[rows]
                    ),
                ));
            }
            if let Some(r) = c.windows(2).position(|w| w[1] < w[0]) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "crow_indices must not decrease, but crow_indices[{}] = {} > crow_indices[{}] = {}{at}",
                        r,
                        c[r],
                        r + 1,
                        c[r + 1]
                    ),
                ));
            }
            if let Some(j) = k.iter().position(|&v| v < 0 || v as u64 >= cols as u64) {
                return Err(Error::out_of_bounds(
                    OP,
                    format!(
                        "col_indices[{j}] = {} is out of range for {cols} columns of shape {shape:?} (valid: 0..{cols}){at}",
                        k[j]
                    ),
                ));
            }
            // Columns strictly increasing within every row: no duplicates.
            coalesced &= c.windows(2).all(|w| k[w[0] as usize..w[1] as usize].windows(2).all(|p| p[0] < p[1]));
        }
        let parts =
            Parts::Csr { crow: crow.contiguous()?, col: col.contiguous()?, values: values.contiguous()?, coalesced };
        Ok(Tensor::from_sparse_parts(parts, shape))
    }
}
