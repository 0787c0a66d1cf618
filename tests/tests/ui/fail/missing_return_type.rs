use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn nothing<T: Num>(x: T) {
    x
}

fn main() {}
