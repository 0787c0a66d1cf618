use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn early<T: Float>(x: T) -> T {
    return x;
}

fn main() {}
