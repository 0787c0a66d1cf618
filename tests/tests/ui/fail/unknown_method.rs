use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn cube_root<T: Float>(x: T) -> T {
    x.cbrt()
}

fn main() {}
