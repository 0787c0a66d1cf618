//! softmax / log_softmax along a dim: a log-sum-exp pass (stored in f64), then one
//! elementwise map `e^((x − hi) − lo)` (or `(x − hi) − lo`) in the input's compute dtype,
//! where `hi + lo` is the f64 log-sum-exp split into two f32s: the map runs at f32 speed
//! and loses nothing at large |x| (softmax of [1000, 1000] is exactly [0.5, 0.5]). Dense
//! rows along the last dim go to the backends' fused row kernels instead (the core's
//! `SOFTMAX_ROWS` / `LOG_SOFTMAX_ROWS` specs) where the device's row takes them.

use crate::call::{call_map_out, call_reduce_new};
use tensor_core::call::ReduceDims;
use tensor_core::registry::reductions::SOFTMAX_LSE;
use tensor_core::registry::{OpSpec, ReduceOutput, LOG_SOFTMAX_ROWS, SOFTMAX_ROWS};
use tensor_core::{DType, Error, Layout, Result, Scalar, Tensor};
use tensor_macros::tensor_op;

/// `e^((x − hi) − lo)`: softmax from a row's log-sum-exp `hi + lo`. The `+ (hi − hi)`
/// (0 for a finite `hi`, NaN for ±∞) makes a row holding +∞ all NaN, as the max-subtracted
/// form gives (`e^(x − ∞)` would be 0 beside the ∞'s own NaN).
#[doc(hidden)]
#[tensor_op(name = "softmax_from_lse", dtypes = [float])]
pub(crate) fn softmax_from_lse<T: Float>(x: T, hi: T, lo: T) -> T {
    (((x - hi) - lo) + (hi - hi)).exp()
}

/// `(x − hi) − lo`: log_softmax from a row's log-sum-exp `hi + lo` (a row holding +∞ all
/// NaN, as [`softmax_from_lse`]).
#[doc(hidden)]
#[tensor_op(name = "log_softmax_from_lse", dtypes = [float])]
pub(crate) fn log_softmax_from_lse<T: Float>(x: T, hi: T, lo: T) -> T {
    ((x - hi) - lo) + (hi - hi)
}

fn run(name: &'static str, a: &Tensor, dim: usize, out: &Tensor, log: bool) -> Result<()> {
    if a.dtype().is_quantized() {
        // Of the values the quantized tensor stands for (f32, the result dtype).
        return run(name, &a.dequantize()?, dim, out, log);
    }
    if dim >= a.ndim() {
        return Err(Error::DimOutOfRange { op: name, dim, ndim: a.ndim() });
    }
    if out.shape() != a.shape() {
        return Err(Error::invalid_output(
            name,
            format!("the out tensor has shape {:?} but {name} of shape {:?} has that shape", out.shape(), a.shape()),
        ));
    }
    // Dense rows along the last dim (the common case): one fused pass per row, in cache
    // (on CUDA a block per row, the row read from DRAM once, for rows that fit in cache),
    // where the device has a row kernel that takes rows this long.
    let spec = if log { &LOG_SOFTMAX_ROWS } else { &SOFTMAX_ROWS };
    let fused = dim + 1 == a.ndim()
        && a.dtype().is_float()
        && out.dtype() == a.dtype()
        && a.is_contiguous()
        && out.is_contiguous()
        && a.numel() > 0
        && takes_rows_of(spec, a, a.shape()[dim]);
    if fused {
        let len = Scalar::Int(a.shape()[dim] as i64);
        return call_map_out(spec, &[a], &[len], out).map_err(|e| e.renamed(name));
    }
    let lse = call_reduce_new(&SOFTMAX_LSE, a, ReduceDims::Dims(&[dim]), true, &[]).map_err(|e| e.renamed(name))?;
    if far_from_zero(&lse)? {
        return max_subtracted(name, a, dim, out, log);
    }
    // The f64 log-sum-exp as hi + lo in the map's dtype (f32 for everything but f64).
    let (hi, lo) = if a.dtype() == DType::F64 {
        (lse.clone(), Tensor::zeros(&[], DType::F64, a.device())?)
    } else {
        let hi = lse.to_dtype(DType::F32)?;
        let lo = crate::sub(&lse, &hi)?.to_dtype(DType::F32)?;
        (hi, lo)
    };
    let spec = if log { &__tensor_op_log_softmax_from_lse::SPEC } else { &__tensor_op_softmax_from_lse::SPEC };
    call_map_out(spec, &[a, &hi, &lo], &[], out).map_err(|e| e.renamed(name))
}

/// Log-sum-exps at or beyond this magnitude lose the sum's logarithm in one f64 (a row of
/// 130 × 1e30 has the log-sum-exp 1e30 + ln 130, which is 1e30 in f64); below it the f64
/// holds the logarithm to 2^-29 at least.
const FAR_LSE: f64 = (1u64 << 24) as f64;

/// Whether some row's log-sum-exp is finite and at least [`FAR_LSE`] in magnitude
/// (logits such as ±1e30 masks). Rows of ±∞ and NaN (an ∞ logit, an empty extent's −∞)
/// keep the one-pass form, whose answers for them are the specified ones.
fn far_from_zero(lse: &Tensor) -> Result<bool> {
    use crate::TensorReductions;
    let device = lse.device();
    let magnitude = crate::abs(lse)?;
    let far = crate::ge(&magnitude, &Tensor::full(&[], FAR_LSE, DType::F64, device)?)?;
    let finite = crate::lt(&magnitude, &Tensor::full(&[], f64::INFINITY, DType::F64, device)?)?;
    let dims: Vec<usize> = (0..lse.ndim()).collect();
    let any = crate::mul(&far, &finite)?.any(&dims, false)?;
    Ok(any.to_device(tensor_core::Device::Cpu)?.to_vec::<bool>()?.first() == Some(&true))
}

/// softmax / log_softmax max-subtracted in f64, for rows whose log-sum-exp is far from
/// zero: `z = x − max`, then `e^(z − ln Σ e^z)` (or `z − ln Σ e^z`), rounded once into
/// `out`. Slower (f64 temporaries) and only taken when a row needs it.
fn max_subtracted(name: &'static str, a: &Tensor, dim: usize, out: &Tensor, log: bool) -> Result<()> {
    use crate::TensorReductions;
    let run = || -> Result<()> {
        let x = a.to_dtype(DType::F64)?;
        let z = crate::sub(&x, &x.amax(&[dim], true)?)?;
        let shifted = crate::sub(&z, &z.logsumexp(&[dim], true)?)?;
        out.copy_(&if log { shifted } else { crate::exp(&shifted)? })
    };
    run().map_err(|e| e.renamed(name))
}

/// Whether `a`'s device has a fused row kernel of `spec` for its dtype that takes rows of
/// `len` elements (the row is asked: [`tensor_core::registry::KernelImpl::max_row_len`]).
fn takes_rows_of(spec: &'static OpSpec, a: &Tensor, len: usize) -> bool {
    crate::registry()
        .lookup_spec(spec, a.device(), Layout::Strided, a.dtype())
        .is_ok_and(|row| len <= row.kernel.max_row_len())
}

/// softmax / log_softmax of a sparse tensor (PyTorch's `torch.sparse.softmax`): along a
/// sparse dim unspecified entries are −∞ (`Tensor::sparse_softmax`); along a dense dim each
/// entry's slice is all specified, so it is the dense softmax of the (coalesced) values.
/// The result has the input's pattern and layout.
fn sparse(a: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
    // Dims before the dense ones are sparse (batched CSR's batch dims included).
    let sd = a.ndim() - a.dense_dim()?;
    if dim < sd || dim >= a.ndim() {
        return a.sparse_softmax(dim, log);
    }
    let c = a.to_sparse_coo()?.coalesce()?;
    let values = c.values()?;
    let out = new_result(&values)?;
    run(if log { "log_softmax" } else { "softmax" }, &values, dim - sd + 1, &out, log)?;
    let result = c.with_values(&out)?;
    if a.layout() == Layout::SparseCsr {
        result.to_sparse_csr()
    } else {
        Ok(result)
    }
}

/// The `_out` forms refuse a sparse input (its result is a new sparse tensor).
fn dense_only(name: &'static str, a: &Tensor) -> Result<()> {
    if a.is_sparse() {
        return Err(Error::Layout {
            op: name,
            layout: a.layout(),
            msg: format!("{name}_out of a sparse tensor is not supported: the result is sparse (call {name})"),
        });
    }
    Ok(())
}

fn new_result(a: &Tensor) -> Result<Tensor> {
    // A quantized input's values are f32.
    let dtype = if a.dtype().is_quantized() { DType::F32 } else { a.dtype() };
    Tensor::empty(a.shape(), ReduceOutput::Float.result(dtype), a.device())
}

/// `e^x / Σ e^x` along `dim` (< ndim), max-subtracted (a row of all −∞ gives NaN).
/// Bool/integers → f32; floats keep their dtype (f16/bf16 computed in f32, rounded once).
/// A sparse input gives a sparse result with its pattern (unspecified entries are −∞ along
/// a sparse dim: PyTorch's `torch.sparse.softmax`).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![0.0f32, 0.0, 1000.0, 1000.0], &[2, 2]).unwrap();
/// assert_eq!(tensor_ops::softmax(&a, 1).unwrap().to_vec::<f32>().unwrap(), vec![0.5; 4]);
/// ```
pub fn softmax(a: &Tensor, dim: usize) -> Result<Tensor> {
    if a.is_sparse() {
        return sparse(a, dim, false);
    }
    let out = new_result(a)?;
    run("softmax", a, dim, &out, false)?;
    Ok(out)
}

/// [`softmax`] into `out` (the input's shape; a float dtype).
pub fn softmax_out(a: &Tensor, dim: usize, out: &Tensor) -> Result<()> {
    dense_only("softmax", a)?;
    run("softmax", a, dim, out, false)
}

/// `x − ln Σ e^x` along `dim` (< ndim). Dtypes as [`softmax`].
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f64, 1.0], &[2]).unwrap();
/// let r = tensor_ops::log_softmax(&a, 0).unwrap().to_vec::<f64>().unwrap();
/// assert!((r[0] + std::f64::consts::LN_2).abs() < 1e-12);
/// ```
pub fn log_softmax(a: &Tensor, dim: usize) -> Result<Tensor> {
    if a.is_sparse() {
        return sparse(a, dim, true);
    }
    let out = new_result(a)?;
    run("log_softmax", a, dim, &out, true)?;
    Ok(out)
}

/// [`log_softmax`] into `out` (the input's shape; a float dtype).
pub fn log_softmax_out(a: &Tensor, dim: usize, out: &Tensor) -> Result<()> {
    dense_only("log_softmax", a)?;
    run("log_softmax", a, dim, out, true)
}
