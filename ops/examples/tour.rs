//! A tour of tensor-ops: run with `cargo run --release --example tour`.
//! It exercises what exists and prints what it did.

use tensor_ops::prelude::*;

/// A user-defined op: one definition gives CPU SIMD kernels, CUDA C, three public
/// functions and registry rows.
#[tensor_op(dtypes = [f16, bf16, f32, f64])]
fn leaky_relu<T: Float>(x: T, #[param] slope: f32) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::from_f32(slope)
    }
}

fn main() -> Result<()> {
    println!("== storage and views");
    let a = Tensor::arange(0, 12, 1, DType::F32, Device::Cpu)?.view(&[3, 4])?;
    println!("a = {a}");
    let at = a.t()?;
    println!(
        "a.t() shape {:?} strides {:?} contiguous={} shares storage={}",
        at.shape(),
        at.strides(),
        at.is_contiguous(),
        at.shares_storage(&a)
    );
    let stepped = a.slice(1, 0, 4, 2)?.flip(0)?;
    println!("a[::-1, ::2] = {stepped}   (strides {:?})", stepped.strides());
    println!("storage use_count = {}", a.storage().use_count());
    let lazy = Tensor::empty(&[1024, 1024], DType::F64, Device::Cpu)?;
    println!("empty 1024x1024 f64 allocated before first write: {}", lazy.storage().is_allocated());
    lazy.fill_(1.5)?;
    println!("                 allocated after fill_: {}", lazy.storage().is_allocated());

    println!("\n== elementwise ops (broadcasting, promotion)");
    let row = Tensor::from_vec(vec![10i32, 20, 30, 40], &[4])?;
    let sum = a.add(&row)?;
    println!("a + [10, 20, 30, 40] (i32 row, promoted to {}) = {sum}", sum.dtype());
    println!("a.t().exp() = {}", at.exp()?);
    println!("a > 5 = {}", a.gt(&Tensor::scalar(5, DType::I64)?)?);
    let out = Tensor::zeros(&[3, 4], DType::F64, Device::Cpu)?;
    tensor_ops::mul_out(&a, &a, &out)?;
    println!("mul_out into an f64 tensor = {out}");
    a.sqrt_()?;
    println!("a.sqrt_() in place = {a}");

    println!("\n== a user-defined op");
    let x = Tensor::from_vec(vec![-2.0f32, -0.5, 0.0, 3.0], &[4])?;
    println!("leaky_relu({x}, 0.1) = {}", leaky_relu(&x, 0.1)?);

    println!("\n== errors are values");
    match a.add(&Tensor::zeros(&[5], DType::F32, Device::Cpu)?) {
        Err(e) => println!("a + zeros([5]) -> Err: {e}"),
        Ok(t) => println!("unexpected: {t}"),
    }
    match Tensor::from_vec(vec![true, false], &[2])?.exp() {
        Err(e) => println!("exp on bool -> Err: {e}"),
        Ok(t) => println!("exp on bool computes in f32 (as PyTorch): {t}"),
    }
    match Tensor::zeros(&[2], DType::F32, Device::Cuda(0)) {
        Err(e) => println!("a CUDA tensor here -> Err: {e}"),
        Ok(t) => println!("CUDA tensor: {t}"),
    }

    println!("\n== the dispatch registry (op × device × layout → dtypes)");
    for (op, device, layout, dtypes) in tensor_ops::registry().entries() {
        let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
        println!("{op:>10} {device:>4} {layout:?}  {}", names.join(" "));
    }
    Ok(())
}
