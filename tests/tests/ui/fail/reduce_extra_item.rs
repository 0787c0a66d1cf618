use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod bad_finish {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T, index: f32) -> T {
        acc + x
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        a + b
    }
    fn finish<T: Float>(acc: T) -> f32 {
        0.0
    }
    const EXTRA: i32 = 1;
}

fn main() {}
