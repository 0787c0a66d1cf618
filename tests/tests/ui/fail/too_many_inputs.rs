use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn sum4<T: Num>(a: T, b: T, c: T, d: T) -> T {
    a + b + c + d
}

fn main() {}
