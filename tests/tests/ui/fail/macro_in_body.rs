use tensor_ops::tensor_op;

#[tensor_op(dtypes = [f32])]
fn noisy<T: Num>(x: T) -> T {
    println!("hello");
    x
}

fn main() {}
