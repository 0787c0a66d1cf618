use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn positive<T: Num>(x: T) -> T {
    x > T::zero()
}

fn main() {}
