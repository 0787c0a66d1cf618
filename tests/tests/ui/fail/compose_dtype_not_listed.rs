// The dtype rules of a called op apply: `exp` has no i32 kernel.
use tensor_ops::prelude::*;

#[tensor_op(dtypes = [i32, f32])]
pub fn exp_plus<T: Num>(x: T) -> T {
    tensor_ops::exp(x) + x
}

fn main() {}
