//! Ops the benches define with `#[tensor_op]` as a user would, so that the macro's kernels
//! are measured on the built-ins' shapes (`user_sum_last` beside `sum_last`).

use tensor_ops::prelude::*;

/// Σ x, integers widened to i64: the built-in `sum`'s definition written as a user's
/// reduction (its CPU reducer is the macro's, over the generic reduction driver).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let s = tensor_benches::user_ops::user_sum(&a, &[1], false).unwrap();
/// assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 7.0]);
/// ```
#[tensor_op(reduce, widen, dtypes = [all])]
pub mod user_sum {
    fn identity<T: Num>() -> T {
        T::zero()
    }
    fn fold<T: Num>(acc: T, x: T) -> T {
        acc + x
    }
    fn combine<T: Num>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Num>(acc: T) -> T {
        acc
    }
}
