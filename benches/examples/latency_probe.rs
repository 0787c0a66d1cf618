//! Per-call overhead probe for profilers: runs a 1-element f32 `add` (new output) or
//! `add_out` in a tight loop. `cargo run --release -p tensor-benches --example latency_probe
//! -- [add|add_out] [calls]`, e.g. under `perf record -g`.

use std::time::Instant;
use tensor_ops::prelude::*;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "add".into());
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
    let a = Tensor::from_vec(vec![1.5f32], &[1])?;
    let b = Tensor::from_vec(vec![2.5f32], &[1])?;
    let out = Tensor::zeros(&[1], DType::F32, Device::Cpu)?;
    let start = Instant::now();
    for _ in 0..calls {
        match which.as_str() {
            "add_out" => tensor_ops::add_out(&a, &b, &out)?,
            _ => drop(std::hint::black_box(a.add(&b)?)),
        }
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / calls as f64;
    println!("{which}: {ns:.0} ns/call over {calls} calls");
    Ok(())
}
