//! The user-defined reductions of the tests, shared by `macro_user_reduce.rs` (CPU, against
//! naive models) and `cuda_reduce.rs` (their CUDA C on the shim, against the CPU).

#![allow(dead_code)]

use tensor_ops::prelude::*;

/// √Σx².
#[tensor_op(reduce, dtypes = [all])]
pub mod l2_norm {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T) -> T {
        acc + x * x
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Float>(acc: T) -> T {
        acc.sqrt()
    }
}

/// Welford's population variance: (count, mean, Σ(x − mean)²), merged by Chan's formula.
#[tensor_op(reduce, dtypes = [float, i32])]
pub mod welford_var {
    fn identity<T: Float>() -> (T, T, T) {
        (T::zero(), T::zero(), T::zero())
    }
    fn fold<T: Float>((n, mean, m2): (T, T, T), x: T) -> (T, T, T) {
        let n = n + T::one();
        let d = x - mean;
        let mean = mean + d / n;
        (n, mean, m2 + d * (x - mean))
    }
    fn combine<T: Float>(a: (T, T, T), b: (T, T, T)) -> (T, T, T) {
        if a.0 == T::zero() {
            return b;
        }
        if b.0 == T::zero() {
            return a;
        }
        let n = a.0 + b.0;
        let d = b.1 - a.1;
        (n, a.1 + d * b.0 / n, a.2 + b.2 + d * d * a.0 * b.0 / n)
    }
    fn finish<T: Float>((n, _, m2): (T, T, T)) -> T {
        m2 / n
    }
}

/// The index of the first greatest element (no NaN rule: a plain `>`).
#[tensor_op(reduce, dtypes = [all])]
pub mod my_argmax {
    fn identity<T: Num>() -> (T, i64) {
        (T::zero(), -1)
    }
    fn fold<T: Num>(acc: (T, i64), x: T, index: i64) -> (T, i64) {
        combine(acc, (x, index))
    }
    fn combine<T: Num>(a: (T, i64), b: (T, i64)) -> (T, i64) {
        if a.1 < 0 || (b.1 >= 0 && (b.0 > a.0 || (b.0 == a.0 && b.1 < a.1))) {
            b
        } else {
            a
        }
    }
    fn finish<T: Num>(acc: (T, i64)) -> i64 {
        acc.1
    }
}

/// How many elements are non-zero.
#[tensor_op(reduce, dtypes = [all])]
pub mod count_nonzero {
    fn identity<T: Num>() -> i64 {
        0
    }
    fn fold<T: Num>(acc: i64, x: T) -> i64 {
        acc + (x != T::zero()) as i64
    }
    fn combine<T: Num>(a: i64, b: i64) -> i64 {
        a + b
    }
    fn finish<T: Num>(acc: i64) -> i64 {
        acc
    }
}

/// Σ min(x, cap): a reduction with a `#[param]`, integer sums widened to i64.
#[tensor_op(reduce, widen, dtypes = [numeric])]
pub mod capped_sum {
    fn identity<T: Num>() -> T {
        T::zero()
    }
    fn fold<T: Num>(acc: T, x: T, #[param] cap: f64) -> T {
        acc + x.min(T::from_f64(cap))
    }
    fn combine<T: Num>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Num>(acc: T, n: i64) -> T {
        let _ = n;
        acc
    }
}

/// x², a user map op that `sum_sq_shifted` calls.
#[tensor_op(dtypes = [float])]
pub fn square<T: Float>(x: T) -> T {
    x * x
}

/// max(x − shift, 0), a user map op with a param.
#[tensor_op(dtypes = [float])]
pub fn shifted_relu<T: Float>(x: T, #[param] shift: f32) -> T {
    (x - T::from_f32(shift)).max(T::zero())
}

/// Σ max(x − shift, 0)² through the map ops `square` and `shifted_relu` (composition in a
/// reduction: the reduction's param and a literal passed to a callee's param).
#[tensor_op(reduce, dtypes = [all])]
pub mod sum_sq_shifted {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T, #[param] shift: f32) -> T {
        acc + square(shifted_relu(x, shift))
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Float>(acc: T) -> T {
        shifted_relu(acc, 0.0)
    }
}
