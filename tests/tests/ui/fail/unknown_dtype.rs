use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32, f8])]
fn ident<T: Num>(x: T) -> T {
    x
}

fn main() {}
