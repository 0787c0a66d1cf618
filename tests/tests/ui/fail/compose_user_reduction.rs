// A reduction of this crate called in a body: one error at the call saying what a body may
// call (no internal names of the reduction's module).
use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod total {
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

#[tensor_op(dtypes = [f32])]
pub fn totalled<T: Float>(x: T) -> T {
    total(x)
}

fn main() {}
