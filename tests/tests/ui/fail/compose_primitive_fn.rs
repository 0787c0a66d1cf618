// `f32::max(x, y)` names a function of the type f32, never an op: an error at the call that
// says what a body may call (here, the method `x.max(y)`).
use tensor_ops::prelude::*;

#[tensor_op(dtypes = [f32])]
pub fn floored<T: Float>(x: T) -> T {
    f32::max(x, T::zero())
}

fn main() {}
