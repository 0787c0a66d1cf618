use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn scale<T: Num>(x: T, #[param] k: u32) -> T {
    x * T::from_i64(k)
}

fn main() {}
