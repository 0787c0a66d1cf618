//! Throughput probe for the one-pass byte maps, for profilers: `add_out` of two 8-bit
//! float or qint8 tensors of `elems` elements, repeated for about two seconds, printing
//! GB/s (3 bytes per element). `cargo run --release -p tensor-benches --example
//! byte_map_probe -- [f8e4m3|f8e5m2|qint8] [elems]`; an `elems` that fits in L2 (65536)
//! shows the compute bound, a large one (1 << 28) the memory bound.

use std::time::Instant;
use tensor_ops::prelude::*;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "f8e4m3".into());
    let elems: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 16);
    let values: Vec<f32> = (0..elems).map(|i| ((i * 7919) % 1000) as f32 * 0.01 - 5.0).collect();
    let x = Tensor::from_vec(values, &[elems])?;
    let (a, b, out) = match which.as_str() {
        "qint8" => {
            let q = |s| tensor_ops::quantize_per_tensor(&x, s, 3, DType::QInt8);
            (q(0.05)?, q(0.07)?, q(0.1)?)
        }
        name => {
            let dt = if name == "f8e5m2" { DType::F8E5M2 } else { DType::F8E4M3 };
            (x.to_dtype(dt)?, x.to_dtype(dt)?, Tensor::zeros(&[elems], dt, Device::Cpu)?)
        }
    };
    let mut calls = 0usize;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < 2.0 {
        tensor_ops::add_out(&a, &b, &out)?;
        calls += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let gbs = (3 * elems * calls) as f64 / secs / 1e9;
    println!("{which} add_out, {elems} elements: {gbs:.2} GB/s ({calls} calls)");
    Ok(())
}
