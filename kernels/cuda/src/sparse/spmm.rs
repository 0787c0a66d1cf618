//! `sparse_csr_spmm` on the device (`spmm`/`spmv`: CSR `[m, k]` × dense `[k, n]` → dense
//! `[m, n]`): a thread per output element summing its row's entries in entry order, with
//! the CPU row's arithmetic (products and sums rounded separately, f16/bf16 in f32 rounded
//! once), so results equal the CPU's bit for bit. The components are not trusted: the
//! kernel checks `crow`'s ends (from 0 to nnz) and every row pointer and column it reads,
//! and the step reads both flags back as the CPU row's errors.

use tensor_core::{DType, Error, Result};

use super::exec::{args, download_i64s, strided_over, upload_i64s, Exec};
use super::Operand;
use crate::sparse_codegen::{spmv_lanes, SparseKernel};

/// `sparse_csr_spmm`: `out[i, :] = Σ values[j] * dense[col[j], :]` over `j` in
/// `crow[i]..crow[i + 1]`. Shapes and dtypes are checked as the CPU row checks them; `crow`
/// not running from 0 to nnz is `Error::invalid`, a falling row pointer or a column outside
/// `0..k` `Error::out_of_bounds` (rows and columns are only checked when `m * n > 0`, as on
/// the CPU).
///
/// # Safety
/// The operands address memory of `e` holding what their shapes and dtypes say; `out` is
/// disjoint from the inputs.
pub(super) unsafe fn spmm(
    e: &impl Exec,
    op: &'static str,
    out: &Operand<'_>,
    [crow, col, vals, dense]: [&Operand<'_>; 4],
) -> Result<()> {
    let index = crow.dtype;
    if !matches!(index, DType::I32 | DType::I64) {
        return Err(Error::DType { op, msg: format!("crow_indices and col_indices must be i32 or i64, got {index}") });
    }
    if col.dtype != index {
        return Err(Error::DTypeMismatch { op, expected: index, got: col.dtype });
    }
    let dtype = vals.dtype;
    if !dtype.is_float() {
        return Err(Error::invalid(op, format!("needs float values, got {dtype}")));
    }
    for t in [dense, out] {
        if t.dtype != dtype {
            return Err(Error::DTypeMismatch { op, expected: dtype, got: t.dtype });
        }
    }
    let shapes_ok = match (crow.shape, col.shape, vals.shape, dense.shape, out.shape) {
        (&[r1], &[nc], &[nv], &[_, dn], &[m, n]) => nc == nv && r1 == m + 1 && dn == n,
        _ => false,
    };
    if !shapes_ok {
        return Err(Error::shape(
            op,
            format!(
                "needs crow [m + 1], col [nnz], values [nnz], dense [k, n], out [m, n]; got {:?}, {:?}, {:?}, {:?}, {:?}",
                crow.shape, col.shape, vals.shape, dense.shape, out.shape
            ),
        ));
    }
    let (m, n, k, nnz) = (out.shape[0], out.shape[1], dense.shape[0], vals.shape[0]);
    // err[0]: a bad row pointer or column; err[1]: crow's ends.
    let flags = upload_i64s(e, &[0, 0])?;
    let items = (m * n).max(1);
    let ptrs = [out.addr, crow.addr, col.addr, vals.addr, dense.addr, flags.at(0)];
    let a = args(&ptrs, items, &[m as i64, n as i64, k as i64, nnz as i64]);
    let steps = if n == 1 && m > 0 {
        // spmv: a group of lanes a row (entries loaded together, summed in entry order)
        let lanes = spmv_lanes(nnz as f64 / m as f64);
        strided_over(e, SparseKernel::CsrSpmvRows(dtype, index, lanes), a, m.saturating_mul(usize::from(lanes)))
    } else {
        strided_over(e, SparseKernel::CsrSpmm(dtype, index), a, items)
    };
    // SAFETY: the caller's contract: every operand holds its shape; `flags` holds 2 i64s.
    let (ends, bounds) = unsafe {
        e.run(&steps)?;
        match download_i64s(e, flags.addr, 2)?[..] {
            [bounds, ends] => (ends, bounds),
            _ => (1, 1),
        }
    };
    if ends != 0 {
        return Err(Error::invalid(op, format!("crow_indices must rise from 0 to nnz = {nnz}")));
    }
    if bounds != 0 {
        return Err(Error::out_of_bounds(
            op,
            format!("crow_indices must rise from 0 to nnz = {nnz} and every col index must be in 0..{k}"),
        ));
    }
    Ok(())
}
