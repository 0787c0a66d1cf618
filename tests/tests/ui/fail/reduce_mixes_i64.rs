// An element value and an i64 in one expression: a spanned error naming the conversion.
use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod mean_wrong {
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
        acc / n
    }
}

fn main() {}
