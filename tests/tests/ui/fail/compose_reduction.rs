// Only elementwise ops compose in a body: a reduction is not one.
use tensor_ops::prelude::*;

#[tensor_op(dtypes = [f32])]
pub fn summed<T: Float>(x: T) -> T {
    tensor_ops::sum(x)
}

fn main() {}
