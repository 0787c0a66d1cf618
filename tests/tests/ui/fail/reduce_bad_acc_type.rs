use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod bad_acc {
    fn identity<T: Float>() -> (T, f32, T, T) {
        (T::zero(), 0.0, T::zero(), T::zero())
    }
    fn fold<T: Float>(acc: (T, f32, T, T), x: T) -> (T, f32, T, T) {
        acc
    }
    fn combine<T: Float>(a: (T, f32, T, T), b: (T, f32, T, T)) -> (T, f32, T, T) {
        a
    }
    fn finish<T: Float>(acc: (T, f32, T, T)) -> T {
        acc.0
    }
}

fn main() {}
