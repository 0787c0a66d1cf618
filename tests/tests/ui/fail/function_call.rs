// A body may call #[tensor_op] ops; calling any other function is an error at the call.
use tensor_ops::tensor_op;

fn helper(x: f32) -> f32 {
    x
}

#[tensor_op(dtypes = [f32])]
fn call_helper<T: Float>(x: T) -> T {
    helper(x)
}

fn main() {}
