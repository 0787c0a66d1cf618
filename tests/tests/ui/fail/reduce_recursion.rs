// The four functions may call each other (inlined), but not in a cycle: a spanned error.
use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod looping {
    fn identity<T: Float>() -> T {
        T::zero()
    }
    fn fold<T: Float>(acc: T, x: T) -> T {
        combine(acc, x)
    }
    fn combine<T: Float>(a: T, b: T) -> T {
        fold(a, b)
    }
    fn finish<T: Float>(acc: T) -> T {
        acc
    }
}

fn main() {}
