use tensor_ops::tensor_op;

#[tensor_op(dtypes = [i64])]
fn f<T: Num>(x: T) -> T {
    x + T::from_i64(9223372036854775807 + 1)
}

#[tensor_op(dtypes = [i64])]
fn g<T: Num>(x: T) -> T {
    x + T::from_i64(-9223372036854775808 / -1)
}

fn main() {}
