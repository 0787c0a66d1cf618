use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn bump<T: Num>(x: T) -> T {
    let y = x;
    y += T::one();
    y
}

fn main() {}
