//! Per-call cost of small ops on `Device::Cuda(0)`: N calls enqueued back to back, then one
//! copy of the last result to the host (which waits for all of them), as
//! `benches/gpu/latency.py` times PyTorch. Prints `name µs/call` lines.
//!
//! ```text
//! cargo run --release -p tensor-benches --example cuda_latency -- [CALLS]
//! ```
//! Without a usable GPU (or the stand-in) it says why and exits 0.

use std::time::Instant;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

const DEV: Device = Device::Cuda(0);

/// One timed call: it enqueues its op and returns a result to wait on.
type Call<'a> = Box<dyn FnMut() -> Result<Tensor> + 'a>;

fn mk(shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    Tensor::from_vec(v, shape)?.to_device(DEV)
}

/// Microseconds a call of `f` over `calls` calls after 100 warm-up calls, the last result
/// copied to the host.
fn per_call(calls: usize, f: &mut dyn FnMut() -> Result<Tensor>) -> Result<f64> {
    for _ in 0..100 {
        f()?;
    }
    f()?.to_device(Device::Cpu)?;
    let t = Instant::now();
    let mut last = None;
    for _ in 0..calls {
        last = Some(f()?);
    }
    if let Some(l) = last {
        l.to_device(Device::Cpu)?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / calls as f64)
}

fn main() -> Result<()> {
    let calls: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let (a1, b1, o1) = match (mk(&[1]), mk(&[1]), mk(&[1])) {
        (Ok(a), Ok(b), Ok(o)) => (a, b, o),
        (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => {
            println!("cuda_latency: skipped, no usable GPU: {e}");
            return Ok(());
        }
    };
    let (a, b, c) = (mk(&[1024])?, mk(&[1024])?, mk(&[1024])?);
    let m = mk(&[32, 1024])?;
    let (x, y, z) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
    let triad = (&x * &y + &z).relu();
    let cases: Vec<(&str, Call<'_>)> = vec![
        ("add_1", Box::new(|| a1.add(&b1))),
        (
            "add_out_1",
            Box::new(|| {
                tensor_ops::add_out(&a1, &b1, &o1)?;
                Ok(o1.clone())
            }),
        ),
        ("add_1024", Box::new(|| a.add(&b))),
        ("sum_1024", Box::new(|| a.sum(&[0], false))),
        ("fused_relu_mul_add_1024", Box::new(|| triad.eval())),
        ("eager_relu_mul_add_1024", Box::new(|| a.mul(&b)?.add(&c)?.relu())),
        ("softmax_32x1024", Box::new(|| m.softmax(1))),
        ("transpose_32x1024", Box::new(|| m.t()?.contiguous())),
    ];
    for (name, mut f) in cases {
        println!("{name} {:.2} us/call", per_call(calls, &mut *f)?);
    }
    Ok(())
}
