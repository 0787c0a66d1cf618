use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn f<T: Float>(x: T, #[param] on: bool) -> T {
    x * T::from_f32(on)
}

fn main() {}
