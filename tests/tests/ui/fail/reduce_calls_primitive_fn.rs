// A reduction's functions may call map ops, but not `f32::max`: an error at the call.
use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod biggest {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T) -> T {
        f32::max(acc, x)
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        a.max(b)
    }
    fn finish<T: Float>(acc: T) -> T {
        acc
    }
}

fn main() {}
