//! `all` and `any`, written with `#[tensor_op(reduce)]`: the user's reduction mechanism
//! serving built-ins. Their CPU reducers are the macro's (the generic driver, as their
//! hand-written reducers were: they had no block fast path to lose) and their CUDA reducers
//! are written from the same definition. The other built-ins keep hand-written reducers for
//! their block fast paths (`kernels/cpu/src/reduce/builtin/`, `ARCHITECTURE.md`).

use tensor_macros::tensor_op;

/// True where every element over `dims` is non-zero (NaN counts as non-zero) → Bool.
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 0.0, f32::NAN, -1.0, 3.0], &[2, 3]).unwrap();
/// let r = tensor_ops::all(&a, &[1], false).unwrap();
/// assert_eq!((r.dtype(), r.to_vec::<bool>().unwrap()), (DType::Bool, vec![false, true]));
/// assert_eq!(tensor_ops::all_all(&a).unwrap().to_vec::<bool>().unwrap(), vec![false]);
/// ```
#[tensor_op(reduce, dtypes = [all])]
pub mod all {
    fn identity<T: Num>() -> bool {
        true
    }
    fn fold<T: Num>(acc: bool, x: T) -> bool {
        acc && x != T::zero()
    }
    fn combine<T: Num>(a: bool, b: bool) -> bool {
        a && b
    }
    fn finish<T: Num>(acc: bool) -> bool {
        acc
    }
}

/// True where some element over `dims` is non-zero (NaN counts as non-zero) → Bool.
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![0i32, 0, 0, 0, 7, 0], &[2, 3]).unwrap();
/// let r = tensor_ops::any(&a, &[1], false).unwrap();
/// assert_eq!(r.to_vec::<bool>().unwrap(), vec![false, true]);
/// assert_eq!(tensor_ops::any_all(&a).unwrap().to_vec::<bool>().unwrap(), vec![true]);
/// ```
#[tensor_op(reduce, dtypes = [all])]
pub mod any {
    fn identity<T: Num>() -> bool {
        false
    }
    fn fold<T: Num>(acc: bool, x: T) -> bool {
        acc || x != T::zero()
    }
    fn combine<T: Num>(a: bool, b: bool) -> bool {
        a || b
    }
    fn finish<T: Num>(acc: bool) -> bool {
        acc
    }
}
