use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod mismatched {
    fn identity<T: Float>() -> (T, T) {
        (T::zero(), T::zero())
    }
    fn fold<T: Float>(acc: T, x: T) -> T {
        acc + x
    }
    fn combine<T: Float>(a: (T, T), b: (T, T)) -> (T, T) {
        (a.0 + b.0, a.1 + b.1)
    }
    fn finish<T: Float>(acc: (T, T)) -> T {
        acc.0
    }
}

fn main() {}
