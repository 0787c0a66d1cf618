use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn scale<T: Float>(x: T, #[param] k: f64) -> T {
    x * T::from_f32(k)
}

fn main() {}
