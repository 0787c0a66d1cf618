//! Times the 8-bit float conversions of the map engine's staging (f8 → f32 and f32 → f8,
//! vector paths) over an in-cache run, in ns per element: the compute cost an f8 map pays
//! per operand on this CPU. `cargo run --release -p tensor-kernels-cpu --example f8_probe`
//! (`F8_PROBE_N=4096` for a run that fits L1).

use std::time::Instant;
use tensor_core::DType;
use tensor_kernels_cpu::convert::f8_slices;

fn main() {
    // F8_PROBE_N elements (default 2^14: in L2; 4096 fits L1)
    let n: usize = std::env::var("F8_PROBE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1 << 14);
    let reps = (3000 << 14) / n;
    let xs: Vec<f32> = (0..n).map(|i| ((i % 2048) as f32 - 1024.0) / 256.0).collect();
    let mut bytes = vec![0u8; n];
    let mut back = vec![0f32; n];
    for d in [DType::F8E4M3, DType::F8E5M2] {
        let (to, from) = f8_slices(d).expect("an 8-bit float dtype");
        for _ in 0..3 {
            let t = Instant::now();
            for _ in 0..reps {
                from(&mut bytes, &xs);
            }
            let encode = t.elapsed().as_secs_f64() / (reps * n) as f64;
            let t = Instant::now();
            for _ in 0..reps {
                to(&mut back, &bytes);
            }
            let decode = t.elapsed().as_secs_f64() / (reps * n) as f64;
            println!("{d}: f32 -> f8 {:.3} ns/element, f8 -> f32 {:.3} ns/element", encode * 1e9, decode * 1e9);
        }
    }
}
