use tensor_ops::tensor_op;

#[tensor_op(dtypes = [i32, f32])]
fn f<T: Num>(x: T) -> T {
    x + T::from_i64(1 / 0)
}

#[tensor_op(dtypes = [i32])]
fn g<T: Num>(x: T) -> T {
    x * (2 / (3 - 3))
}

fn main() {}
