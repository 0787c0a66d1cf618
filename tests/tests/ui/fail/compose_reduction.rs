// A reduction is not an elementwise op: one error at the call saying what a body may call.
use tensor_ops::prelude::*;

#[tensor_op(dtypes = [f32])]
pub fn summed<T: Float>(x: T) -> T {
    tensor_ops::sum(x)
}

fn main() {}
