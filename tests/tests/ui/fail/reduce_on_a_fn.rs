use tensor_ops::prelude::*;

#[tensor_op(reduce, dtypes = [f32])]
fn total<T: Float>(x: T) -> T {
    x
}

fn main() {}
