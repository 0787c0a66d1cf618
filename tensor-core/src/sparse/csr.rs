//! CSR ↔ COO, batched CSR included. A batched CSR tensor (PyTorch's) has shape
//! `[*batch, rows, cols, *dense]`, `crow` `[*batch, rows + 1]`, `col` `[*batch, nnz]` and
//! `values` `[*batch, nnz, *dense]`: every batch holds the same `nnz`. As COO it has
//! `batch + 2` sparse dims. Each batch's row pointers go through the layout's steps
//! (`sparse_crow_to_rows`, `sparse_rows_to_crow`) one batch at a time.

use super::Parts;
use crate::call::sparse::run_components;
use crate::registry::sparse::{CROW_TO_ROWS, ROWS_TO_CROW};
use crate::{DType, Error, Layout, Result, Tensor};

/// `shape` as `isize`s, for `reshape`.
fn isize_shape(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// The multi-index of flat position `b` in `shape` (row-major).
fn unravel(mut b: usize, shape: &[usize]) -> Vec<i64> {
    let mut idx = vec![0i64; shape.len()];
    for (d, &size) in shape.iter().enumerate().rev() {
        idx[d] = (b % size.max(1)) as i64;
        b /= size.max(1);
    }
    idx
}

impl Tensor {
    /// The COO form of this CSR tensor (`parts`): indices `[batch + 2, batches * nnz]`.
    pub(super) fn csr_to_coo(&self, op: &'static str, parts: &Parts) -> Result<Tensor> {
        let Parts::Csr { crow, col, values, coalesced } = parts else {
            return Err(Error::invalid(op, "needs a CSR tensor"));
        };
        let (device, batch, nnz) = (self.device(), parts.batch_dims(), parts.nnz());
        let batch_shape = &self.shape()[..batch];
        let batches: usize = batch_shape.iter().product();
        let rows = self.shape()[batch];
        let total = batches * nnz;
        let indices = Tensor::empty(&[batch + 2, total], DType::I64, device)?;
        // I32 components are widened: COO indices (and the row steps) are I64.
        let (crow, col) = (crow.to_dtype(DType::I64)?, col.to_dtype(DType::I64)?);
        let (crow, col) = (crow.reshape(&[batches as isize, rows as isize + 1])?, col.reshape(&[-1])?);
        for b in 0..batches {
            let out = indices.select(0, batch)?.narrow(0, b * nnz, nnz)?;
            run_components(&CROW_TO_ROWS, Layout::SparseCsr, DType::I64, &out, &[&crow.select(0, b)?], &[])
                .map_err(|e| e.renamed(op))?;
            for (d, i) in unravel(b, batch_shape).into_iter().enumerate() {
                indices.select(0, d)?.narrow(0, b * nnz, nnz)?.fill_(i)?;
            }
        }
        indices.select(0, batch + 1)?.copy_(&col)?;
        let dense = &values.shape()[batch + 1..];
        let flat: Vec<usize> = std::iter::once(total).chain(dense.iter().copied()).collect();
        // Batches in order, rows sorted within each: strictly increasing columns within
        // rows make the indices sorted and unique.
        let parts = Parts::Coo { indices, values: values.reshape(&isize_shape(&flat))?, coalesced: *coalesced };
        Ok(Tensor::from_sparse_parts(parts, self.shape()))
    }

    /// The (batched, when `sparse_dim > 2`) CSR form of this coalesced COO tensor: its
    /// first `sparse_dim - 2` dims are batch dims, each batch must hold the same number of
    /// entries (PyTorch's rule; else `Err` naming the counts).
    pub(super) fn coalesced_coo_to_csr(&self, op: &'static str) -> Result<Tensor> {
        let Some(Parts::Coo { indices, values, .. }) = self.sparse.as_deref() else {
            return Err(Error::invalid(op, "needs a coalesced COO tensor"));
        };
        let (device, sd, total) = (self.device(), indices.shape()[0], indices.shape()[1]);
        let batch = sd - 2;
        let batch_shape = &self.shape()[..batch];
        let batches: usize = batch_shape.iter().product();
        let rows = self.shape()[batch];
        // Each batch's entries, from the (host-read) batch index rows: sorted, so each
        // batch is one run.
        let mut counts = vec![0usize; batches];
        if batch > 0 && total > 0 {
            let lead = indices.narrow(0, 0, batch)?.to_vec::<i64>()?;
            for j in 0..total {
                let b = (0..batch).fold(0usize, |acc, d| acc * batch_shape[d] + lead[d * total + j] as usize);
                counts[b] += 1;
            }
        } else if let Some(c) = counts.first_mut() {
            *c = total;
        }
        let nnz = counts.first().copied().unwrap_or(0);
        if counts.iter().any(|&c| c != nnz) {
            return Err(Error::invalid(
                op,
                format!("batched CSR needs the same nnz in every batch, got {counts:?} (keep it as COO)"),
            ));
        }
        let crow_shape: Vec<usize> = batch_shape.iter().copied().chain([rows + 1]).collect();
        let crow = Tensor::empty(&crow_shape, DType::I64, device)?;
        let flat_crow = crow.reshape(&[batches as isize, rows as isize + 1])?;
        let row_index = indices.select(0, batch)?;
        for b in 0..batches {
            let out = flat_crow.select(0, b)?;
            let rows_of_b = row_index.narrow(0, b * nnz, nnz)?;
            run_components(&ROWS_TO_CROW, Layout::SparseCsr, DType::I64, &out, &[&rows_of_b], &[])
                .map_err(|e| e.renamed(op))?;
        }
        let col_shape: Vec<usize> = batch_shape.iter().copied().chain([nnz]).collect();
        let col = indices.select(0, batch + 1)?.contiguous()?.reshape(&isize_shape(&col_shape))?;
        let values_shape: Vec<usize> =
            batch_shape.iter().copied().chain([nnz]).chain(values.shape()[1..].iter().copied()).collect();
        let values = values.reshape(&isize_shape(&values_shape))?;
        Ok(Tensor::from_sparse_parts(Parts::Csr { crow, col, values, coalesced: true }, self.shape()))
    }
}

impl Tensor {
    /// This CSR tensor with its `crow_indices`/`col_indices` converted to `index` (I32 or
    /// I64; the values are shared). I32 components make `spmm`/`spmv` read 12 bytes per
    /// stored f32 entry instead of 16 (scipy's default). `Err` for another layout, another
    /// dtype, or I32 when nnz or the column count exceed `i32::MAX`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::{DType, Tensor};
    /// let crow = Tensor::from_vec(vec![0i64, 1, 2], &[3]).unwrap();
    /// let col = Tensor::from_vec(vec![1i64, 0], &[2]).unwrap();
    /// let s = Tensor::sparse_csr(&crow, &col, &Tensor::from_vec(vec![7f32, 8.], &[2]).unwrap(), &[2, 2]).unwrap();
    /// let narrow = s.with_index_dtype(DType::I32).unwrap();
    /// assert_eq!(narrow.col_indices().unwrap().to_vec::<i32>().unwrap(), vec![1, 0]);
    /// ```
    pub fn with_index_dtype(&self, index: DType) -> Result<Tensor> {
        const OP: &str = "with_index_dtype";
        let Some(Parts::Csr { crow, col, values, coalesced }) = self.sparse.as_deref() else {
            return Err(Error::Layout {
                op: OP,
                layout: self.layout(),
                msg: "needs a sparse_csr tensor (COO indices are always i64)".into(),
            });
        };
        if !matches!(index, DType::I32 | DType::I64) {
            return Err(Error::DType { op: OP, msg: format!("CSR index components are i32 or i64, got {index}") });
        }
        let cols = self.shape()[crow.ndim()];
        if index == DType::I32 && (col.shape()[col.ndim() - 1] > i32::MAX as usize || cols > i32::MAX as usize) {
            return Err(Error::invalid(
                OP,
                format!(
                    "i32 components need nnz and the column count <= {}, got nnz {} and {cols} columns",
                    i32::MAX,
                    col.shape()[col.ndim() - 1]
                ),
            ));
        }
        let parts = Parts::Csr {
            crow: crow.to_dtype(index)?,
            col: col.to_dtype(index)?,
            values: values.clone(),
            coalesced: *coalesced,
        };
        Ok(Tensor::from_sparse_parts(parts, self.shape()))
    }
}
