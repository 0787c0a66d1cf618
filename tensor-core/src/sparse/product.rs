//! Sparse × dense products: `spmm` (CSR `[m, k]` × dense `[k, n]` → dense `[m, n]`) and
//! `spmv` (CSR `[m, k]` × vector `[k]` → vector `[m]`), both one step (`CSR_SPMM`) run by
//! `call::sparse::run_components` on the CSR components and a contiguous dense operand.
//!
//! **Rules.** The sparse operand is CSR with two sparse dims and scalar values (a COO
//! tensor with two sparse dims is converted with `to_sparse_csr()`, which coalesces it;
//! dense dims, i.e. hybrid values, are an `Err`). The dense operand is any strided tensor
//! (copied to contiguous when it is not). Dtypes: the float dtypes only (f16, bf16, f32,
//! f64; f16/bf16 accumulate in f32 and round once per output element), and the two
//! operands' dtypes must be equal — no promotion (as `torch.sparse.mm`; convert one with
//! `to_dtype` first). Both on one device. Each violation is an `Err` naming the op, the
//! shapes/dtypes/layouts given and what is valid.

use super::Parts;
use crate::call::sparse::run_components;
use crate::registry::sparse::CSR_SPMM;
use crate::{DType, Error, Layout, Result, Tensor};

/// The CSR components of `s` (converting COO), checked for a product with a dense operand:
/// `(crow, col, values, m, k)`.
fn csr_operand(op: &'static str, s: &Tensor) -> Result<(Tensor, Tensor, Tensor, usize, usize)> {
    let csr = match s.layout() {
        Layout::SparseCsr => s.clone(),
        Layout::SparseCoo if s.sparse_dim()? == 2 => s.to_sparse_csr()?,
        layout => {
            return Err(Error::Layout {
                op,
                layout,
                msg: format!(
                "the first operand must be a sparse CSR (or COO with 2 sparse dims) matrix [m, k], got a {} tensor \
                     of shape {:?}{}",
                layout.name(),
                s.shape(),
                if layout == Layout::Strided {
                    " (convert it with to_sparse_csr(), or use a dense matmul)"
                } else {
                    ""
                }
            ),
            })
        }
    };
    if csr.ndim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "the sparse operand must be a matrix [m, k] with scalar values, got shape {:?} with {} dense dim(s) \
                 (hybrid values are not supported)",
                s.shape(),
                csr.ndim() - 2
            ),
        ));
    }
    let Some(Parts::Csr { crow, col, values, .. }) = csr.sparse.as_deref() else {
        return Err(Error::invalid(op, "to_sparse_csr returned a tensor that is not CSR"));
    };
    let dtype = values.dtype();
    if !dtype.is_float() {
        return Err(Error::DType {
            op,
            msg: format!(
                "needs float values (f8e4m3, f8e5m2, f16, bf16, f32, f64), got {dtype} (convert with to_dtype first)"
            ),
        });
    }
    Ok((crow.clone(), col.clone(), values.clone(), csr.shape()[0], csr.shape()[1]))
}

/// `Err` unless `dense` is strided, of `dtype`, on `s`'s device.
fn check_dense(op: &'static str, s: &Tensor, dense: &Tensor, dtype: DType, what: &str) -> Result<()> {
    if dense.layout() != Layout::Strided {
        return Err(Error::Layout {
            op,
            layout: dense.layout(),
            msg: format!("the {what} must be a strided (dense) tensor; convert it with to_dense() first"),
        });
    }
    if dense.dtype() != dtype {
        return Err(Error::DType {
            op,
            msg: format!(
                "the sparse operand is {dtype} but the {what} is {}: the dtypes must be equal (no promotion; convert \
                 one with to_dtype)",
                dense.dtype()
            ),
        });
    }
    s.check_same_device(op, dense)
}

/// `Err` unless `out` is a strided tensor of `shape`, `dtype`, on `device`'s device.
fn check_out(op: &'static str, out: &Tensor, shape: &[usize], like: &Tensor) -> Result<()> {
    if out.layout() != Layout::Strided || out.shape() != shape || out.dtype() != like.dtype() {
        return Err(Error::invalid_output(
            op,
            format!(
                "out must be a strided {} tensor of shape {shape:?}, got a {} {} tensor of shape {:?}",
                like.dtype(),
                out.layout().name(),
                out.dtype(),
                out.shape()
            ),
        ));
    }
    like.check_same_device(op, out)
}

/// `csr @ dense` for a contiguous `[k, n]` dense operand: a new `[m, n]` tensor.
fn product(op: &'static str, parts: (Tensor, Tensor, Tensor, usize, usize), dense: &Tensor) -> Result<Tensor> {
    let (crow, col, values, m, _) = parts;
    let n = dense.shape()[1];
    let dense = dense.contiguous()?;
    let out = Tensor::empty(&[m, n], values.dtype(), values.device())?;
    run_components(&CSR_SPMM, Layout::SparseCsr, values.dtype(), &out, &[&crow, &col, &values, &dense], &[])
        .map_err(|e| e.renamed(op))?;
    Ok(out)
}

impl Tensor {
    /// The product of this sparse matrix (CSR `[m, k]`, or COO with 2 sparse dims, which is
    /// converted with `to_sparse_csr()`) and the dense matrix `dense` (`[k, n]`, any
    /// strides): a dense `[m, n]` tensor of the same dtype and device. Float dtypes only
    /// (f16/bf16 accumulate in f32), equal dtypes (no promotion), one device; each row is
    /// summed in the order of its stored entries. Hybrid values, a dense operand of another
    /// shape, dtype, layout or device are `Err`s saying what is valid.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// // [[0, 2], [3, 0], [0, 0]] as CSR
    /// let crow = Tensor::from_vec(vec![0i64, 1, 2, 2], &[4])?;
    /// let col = Tensor::from_vec(vec![1i64, 0], &[2])?;
    /// let a = Tensor::sparse_csr(&crow, &col, &Tensor::from_vec(vec![2f32, 3.], &[2])?, &[3, 2])?;
    /// let b = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_csr_spmm", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// assert_eq!(a.spmm(&b)?.to_vec::<f32>()?, vec![8., 10., 12., 3., 6., 9., 0., 0., 0.]);
    /// # }
    /// assert!(a.spmm(&b.to_dtype(tensor_ops::DType::F64)?).is_err()); // dtypes must match
    /// # Ok(()) }
    /// ```
    pub fn spmm(&self, dense: &Tensor) -> Result<Tensor> {
        const OP: &str = "spmm";
        let parts = csr_operand(OP, self)?;
        check_dense(OP, self, dense, parts.2.dtype(), "dense operand")?;
        if dense.ndim() != 2 || dense.shape()[0] != parts.4 {
            return Err(Error::shape(
                OP,
                format!(
                    "the dense operand must be [k, n] with k = {} (the sparse operand is {:?}), got {:?}",
                    parts.4,
                    self.shape(),
                    dense.shape()
                ),
            ));
        }
        product(OP, parts, dense)
    }

    /// [`Tensor::spmm`] written into `out` (strided, `[m, n]`, the result's dtype and
    /// device; any strides). The product is computed into a new tensor and copied into `out`,
    /// so `out` may overlap the dense operand.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::{DType, Device, Tensor};
    /// let a = Tensor::from_vec(vec![0f64, 2., 3., 0.], &[2, 2])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_csr_spmm", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// let a = a.to_sparse_csr()?;
    /// let out = Tensor::zeros(&[2, 1], DType::F64, Device::Cpu)?;
    /// a.spmm_out(&Tensor::from_vec(vec![1f64, 10.], &[2, 1])?, &out)?;
    /// assert_eq!(out.to_vec::<f64>()?, vec![20., 3.]);
    /// assert!(a.spmm_out(&Tensor::from_vec(vec![1f64, 10.], &[2, 1])?, &Tensor::zeros(&[3, 1], DType::F64, Device::Cpu)?).is_err());
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn spmm_out(&self, dense: &Tensor, out: &Tensor) -> Result<()> {
        let r = self.spmm(dense)?;
        check_out("spmm_out", out, r.shape(), &r)?;
        out.copy_(&r).map_err(|e| e.renamed("spmm_out"))
    }

    /// The product of this sparse matrix (CSR `[m, k]`, or COO with 2 sparse dims) and the
    /// vector `v` (`[k]`, any stride): a dense `[m]` tensor. The rules are
    /// [`Tensor::spmm`]'s (it is the `n = 1` case, with its own loop in the kernels).
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// # fn main() -> tensor_ops::Result<()> {
    /// use tensor_ops::Tensor;
    /// let i = Tensor::from_vec(vec![0i64, 1, 1, 0, 0, 1], &[2, 3])?; // (0,0) (1,0) (1,1)
    /// let a = Tensor::sparse_coo(&i, &Tensor::from_vec(vec![1f32, 2., 3.], &[3])?, &[2, 2])?;
    /// # if tensor_ops::tensor_core::registry().row_set("sparse_csr_spmm", tensor_ops::tensor_core::DeviceKind::Cpu, tensor_ops::Layout::SparseCsr).is_some() {
    /// assert_eq!(a.spmv(&Tensor::from_vec(vec![10f32, 100.], &[2])?)?.to_vec::<f32>()?, vec![10., 320.]);
    /// # }
    /// assert!(a.spmv(&Tensor::from_vec(vec![1f32, 2., 3.], &[3])?).is_err()); // k = 2
    /// # Ok(()) }
    /// ```
    pub fn spmv(&self, v: &Tensor) -> Result<Tensor> {
        const OP: &str = "spmv";
        let parts = csr_operand(OP, self)?;
        check_dense(OP, self, v, parts.2.dtype(), "vector")?;
        if v.ndim() != 1 || v.shape()[0] != parts.4 {
            return Err(Error::shape(
                OP,
                format!(
                    "the vector must be [k] with k = {} (the sparse operand is {:?}), got {:?}",
                    parts.4,
                    self.shape(),
                    v.shape()
                ),
            ));
        }
        let (m, k) = (parts.3, parts.4);
        let column = v.contiguous()?.reshape(&[k as isize, 1])?;
        product(OP, parts, &column)?.reshape(&[m as isize])
    }

    /// [`Tensor::spmv`] written into `out` (strided `[m]`, the result's dtype and device),
    /// through a new tensor as [`Tensor::spmm_out`].
    pub fn spmv_out(&self, v: &Tensor, out: &Tensor) -> Result<()> {
        let r = self.spmv(v)?;
        check_out("spmv_out", out, r.shape(), &r)?;
        out.copy_(&r).map_err(|e| e.renamed("spmv_out"))
    }
}
