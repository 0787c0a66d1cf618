//! `sum`, `prod`, `mean`, `all` and `any`, written with `#[tensor_op(reduce)]`: the user's
//! reduction mechanism serving built-ins. Their CPU reducers are the macro's over the
//! generic driver (measured against the hand-written ones they replace:
//! `docs/performance-log.md`), their CUDA reducers are written from the same definitions.
//! The other built-ins keep hand-written reducers for block fast paths the four functions
//! cannot express (`kernels/cpu/src/reduce/builtin/`, `ARCHITECTURE.md`).

use tensor_macros::tensor_op;

/// Σ x over `dims` (bool/integers → i64, wrapping; f16/bf16 accumulate in f32, stored in
/// their own dtype; the driver sums in a fixed pairwise tree).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// assert_eq!(tensor_ops::sum(&a, &[1], false).unwrap().to_vec::<f32>().unwrap(), vec![6.0, 15.0]);
/// assert_eq!(tensor_ops::sum_all(&a).unwrap().to_vec::<f32>().unwrap(), vec![21.0]);
/// let i = Tensor::from_vec(vec![i8::MAX; 4], &[4]).unwrap();
/// let s = tensor_ops::sum_all(&i).unwrap();
/// assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::I64, vec![4 * 127]));
/// ```
#[tensor_op(reduce, widen, sparse = sum, dtypes = [all])]
pub mod sum {
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

/// Π x over `dims` (bool/integers → i64, wrapping).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// assert_eq!(tensor_ops::prod(&a, &[1], false).unwrap().to_vec::<f32>().unwrap(), vec![6.0, 120.0]);
/// assert_eq!(tensor_ops::prod_all(&a).unwrap().to_vec::<f32>().unwrap(), vec![720.0]);
/// ```
#[tensor_op(reduce, widen, dtypes = [all])]
pub mod prod {
    fn identity<T: Num>() -> T {
        T::one()
    }
    fn fold<T: Num>(acc: T, x: T) -> T {
        acc * x
    }
    fn combine<T: Num>(a: T, b: T) -> T {
        a * b
    }
    fn finish<T: Num>(acc: T) -> T {
        acc
    }
}

/// The mean over `dims` (bool/integers → f32; NaN over an empty extent).
///
/// ```
/// use tensor_ops::prelude::*;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// assert_eq!(tensor_ops::mean(&a, &[1], false).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 5.0]);
/// let e = Tensor::zeros(&[0], DType::F32, Device::Cpu).unwrap();
/// assert!(tensor_ops::mean_all(&e).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
/// ```
#[tensor_op(reduce, dtypes = [all])]
pub mod mean {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T) -> T {
        acc + x
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Float>(acc: T, n: i64) -> T {
        acc / T::from_i64(n)
    }
}

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
