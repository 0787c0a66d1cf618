use tensor_ops::tensor_op;

#[tensor_op(dtypes = [float, i32])]
fn half<T: Float>(x: T) -> T {
    x * 0.5
}

fn main() {}
