use tensor_ops::tensor_op;

#[tensor_op(dtypes = [i32, f32])]
fn softplus<T: Num>(x: T) -> T {
    (T::one() + x.exp()).abs()
}

fn main() {}
