//! `T::from_bool` (the fix the macro suggests for a bool param), i64::MIN as a literal, and
//! total integer arithmetic on params.

use tensor_ops::prelude::*;

/// `x` plus 1 where `on`, the bool param as a value of `T`.
#[tensor_op(dtypes = [all])]
pub fn plus_flag<T>(x: T, #[param] on: bool) -> T {
    x + T::from_bool(on) * T::from_bool(true) + T::from_bool(false)
}

/// Integer param arithmetic that would panic with Rust's own operators.
#[tensor_op(dtypes = [i64])]
pub fn edges<T: Num>(x: T, #[param] n: i64, #[param] d: i64) -> T {
    x + T::from_i64(n / d + n * d + -n) + T::from_i64(-9223372036854775808)
}

fn main() {
    let x = Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap();
    assert_eq!(plus_flag(&x, true).unwrap().to_vec::<f32>().unwrap(), vec![2.5, -1.0]);
    assert_eq!(plus_flag(&x, false).unwrap().to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
    let b = Tensor::from_vec(vec![false, true], &[2]).unwrap();
    assert_eq!(plus_flag(&b, true).unwrap().to_vec::<bool>().unwrap(), vec![true, true]);
    let z = Tensor::from_vec(vec![0i64], &[1]).unwrap();
    // d = 0: n / 0 == 0, n * 0 == 0, -n wraps for MIN
    let got = edges(&z, i64::MIN, 0).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(got, vec![i64::MIN.wrapping_neg().wrapping_add(i64::MIN)]);
}
