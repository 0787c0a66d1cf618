use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn five<T: Float>(x: T, #[param] a: f32, #[param] b: f32, #[param] c: f32, #[param] d: f32, #[param] e: f32) -> T {
    x * T::from_f32(a + b + c + d + e)
}

fn main() {}
