// A body outside the reduction language (a `match`): a spanned error, the one map bodies get.
use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
pub mod pick_first {
    fn identity<T: Num>() -> T {
        T::zero()
    }
    fn fold<T: Num>(acc: T, x: T) -> T {
        acc + x
    }
    fn combine<T: Num>(a: T, b: T) -> T {
        match a == T::zero() {
            true => b,
            false => a,
        }
    }
    fn finish<T: Num>(acc: T) -> T {
        acc
    }
}

fn main() {}
