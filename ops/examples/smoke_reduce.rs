use tensor_ops::prelude::*;
fn main() -> tensor_ops::Result<()> {
    let a = Tensor::from_vec((0..24).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3, 4])?;
    println!("{:?}", a.sum(&[1], false)?.to_vec::<f32>()?);
    println!("{:?}", a.sum(&[0, 2], true)?.shape());
    println!("{:?}", a.sum(&[0, 2], true)?.to_vec::<f32>()?);
    println!("{:?}", a.transpose(0, 2)?.sum(&[0], false)?.to_vec::<f32>()?);
    println!("{:?}", a.argmax(2, false)?.to_vec::<i64>()?);
    println!("{:?}", a.var(&[0, 2], 1, false)?.to_vec::<f32>()?);
    println!("{:?}", a.softmax(2)?.to_vec::<f32>()?);
    println!("{:?}", a.logsumexp(&[2], false)?.to_vec::<f32>()?);
    println!("{:?}", a.sum_all()?.to_vec::<f32>()?);
    println!("{:?}", a.amax(&[3], false).unwrap_err());
    let e = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu)?;
    println!("{:?} {:?}", e.amax(&[1], false)?.shape(), e.amax(&[0], false).unwrap_err());
    println!("{:?}", e.sum(&[0], false)?.to_vec::<f32>()?);
    let big = Tensor::ones(&[3000, 1000], DType::F32, Device::Cpu)?;
    println!("{:?}", big.sum(&[0], false)?.to_vec::<f32>()?[..3].to_vec());
    println!("{:?}", big.sum_all()?.to_vec::<f32>()?);
    Ok(())
}
