//! The built-in reductions as `Tensor` methods (`a.sum(&[1], false)?`), brought into scope
//! by `use tensor_ops::prelude::*`.

use crate::builtin;
use tensor_core::{Result, Tensor};

/// The built-in reductions as methods of [`Tensor`]; each is the crate-root function of
/// the same name (which documents its dtype and empty-extent rules).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 5.0, 3.0, 2.0], &[2, 2]).unwrap();
/// assert_eq!(a.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![4.0, 7.0]);
/// assert_eq!(a.argmax(1, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 0]);
/// assert_eq!(a.amax_all().unwrap().to_vec::<f32>().unwrap(), vec![5.0]);
/// ```
pub trait TensorReductions {
    /// Σ x over `dims`.
    fn sum(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// Π x over `dims`.
    fn prod(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// The mean over `dims`.
    fn mean(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// The greatest element over `dims`.
    fn amax(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// The least element over `dims`.
    fn amin(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// True where every element over `dims` is non-zero.
    fn all(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// True where some element over `dims` is non-zero.
    fn any(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// ln Σ e^x over `dims`.
    fn logsumexp(&self, dims: &[usize], keepdim: bool) -> Result<Tensor>;
    /// The variance over `dims`, dividing by `n - correction`.
    fn var(&self, dims: &[usize], correction: i64, keepdim: bool) -> Result<Tensor>;
    /// The standard deviation over `dims`, dividing by `n - correction`.
    fn std(&self, dims: &[usize], correction: i64, keepdim: bool) -> Result<Tensor>;
    /// The index of the first greatest element along `dim` (I64).
    fn argmax(&self, dim: usize, keepdim: bool) -> Result<Tensor>;
    /// The index of the first least element along `dim` (I64).
    fn argmin(&self, dim: usize, keepdim: bool) -> Result<Tensor>;
    /// softmax along `dim`.
    fn softmax(&self, dim: usize) -> Result<Tensor>;
    /// log_softmax along `dim`.
    fn log_softmax(&self, dim: usize) -> Result<Tensor>;
    /// Σ of every element (0-dim).
    fn sum_all(&self) -> Result<Tensor>;
    /// The mean of every element (0-dim).
    fn mean_all(&self) -> Result<Tensor>;
    /// The greatest element (0-dim).
    fn amax_all(&self) -> Result<Tensor>;
    /// The least element (0-dim).
    fn amin_all(&self) -> Result<Tensor>;
}

macro_rules! dims_methods {
    ($($name:ident),*) => { $(
        fn $name(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> { builtin::$name(self, dims, keepdim) }
    )* };
}

impl TensorReductions for Tensor {
    dims_methods!(sum, prod, mean, amax, amin, all, any, logsumexp);
    fn var(&self, dims: &[usize], correction: i64, keepdim: bool) -> Result<Tensor> {
        builtin::var(self, dims, correction, keepdim)
    }
    fn std(&self, dims: &[usize], correction: i64, keepdim: bool) -> Result<Tensor> {
        builtin::std(self, dims, correction, keepdim)
    }
    fn argmax(&self, dim: usize, keepdim: bool) -> Result<Tensor> {
        builtin::argmax(self, dim, keepdim)
    }
    fn argmin(&self, dim: usize, keepdim: bool) -> Result<Tensor> {
        builtin::argmin(self, dim, keepdim)
    }
    fn softmax(&self, dim: usize) -> Result<Tensor> {
        builtin::softmax(self, dim)
    }
    fn log_softmax(&self, dim: usize) -> Result<Tensor> {
        builtin::log_softmax(self, dim)
    }
    fn sum_all(&self) -> Result<Tensor> {
        builtin::sum_all(self)
    }
    fn mean_all(&self) -> Result<Tensor> {
        builtin::mean_all(self)
    }
    fn amax_all(&self) -> Result<Tensor> {
        builtin::amax_all(self)
    }
    fn amin_all(&self) -> Result<Tensor> {
        builtin::amin_all(self)
    }
}
