// A called op's #[param] takes a literal or a param, not an element value.
use tensor_ops::prelude::*;

#[tensor_op(dtypes = [f32])]
pub fn scaled<T: Float>(x: T, #[param] s: f32) -> T {
    x * T::from_f32(s)
}

#[tensor_op(dtypes = [f32])]
pub fn self_scaled<T: Float>(x: T) -> T {
    scaled(x, x)
}

fn main() {}
