//! Times the fused chains against their eager forms and the map engine, best of a few
//! runs, at `FUSED_PROBE_ELEMS` f32 elements (default 2^26): a quick look while working on
//! the fused runner (the figures to report come from `cpu-perf`), with the one-pass loops
//! (`tensor_benches::stream`) timed in the same run. `FUSED_PROBE_ONLY=text` runs only the
//! cases whose label contains `text`; `FUSED_PROBE_REPS=n` times each n times (default 7).
//!
//! `cargo run --release -p tensor-benches --example fused_probe`

use std::time::Instant;
use tensor_benches::stream::{Pattern, Store, StreamArrays};
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

fn best(label: &str, bytes: f64, mut f: impl FnMut()) {
    if std::env::var("FUSED_PROBE_ONLY").is_ok_and(|only| !label.contains(only.as_str())) {
        return;
    }
    f();
    let mut t = f64::MAX;
    let reps: usize = std::env::var("FUSED_PROBE_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    for _ in 0..reps {
        let s = Instant::now();
        f();
        t = t.min(s.elapsed().as_secs_f64());
    }
    println!("{label:<28} {:>8.2} ms {:>7.2} GB/s", t * 1e3, bytes / t / 1e9);
}

fn main() -> tensor_ops::Result<()> {
    let n: usize = std::env::var("FUSED_PROBE_ELEMS").ok().and_then(|v| v.parse().ok()).unwrap_or(1 << 26);
    let mk = |s: u32| Tensor::from_vec((0..n).map(|i| ((i as u32 ^ s) % 1000) as f32 / 500.0 - 1.0).collect(), &[n]);
    let (a, b, c) = (mk(1)?, mk(2)?, mk(3)?);
    let out = Tensor::zeros(&[n], DType::F32, Device::Cpu)?;
    let (x, y, z) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
    let triad = (&x * &y + &z).relu();
    let four = 16.0 * n as f64;
    let mut loops = StreamArrays::new(4 * n as u64);
    best("one-pass loop relu(a*b+c)", four, || loops.run(Pattern::Triad, Store::NonTemporal, 4 * n as u64));
    best("fused relu(a*b+c) new", four, || drop(triad.eval().unwrap()));
    best("fused relu(a*b+c) into", four, || triad.eval_into(&out).unwrap());
    best("fused into a new empty", four, || {
        let t = Tensor::empty(&[n], DType::F32, Device::Cpu).unwrap();
        triad.eval_into(&t).unwrap();
    });
    best("eager relu(a*b+c)", four, || drop(a.mul(&b).unwrap().add(&c).unwrap().relu().unwrap()));
    best("relu new", 8.0 * n as f64, || drop(a.relu().unwrap()));
    best("relu_out", 8.0 * n as f64, || tensor_ops::relu_out(&a, &out).unwrap());
    best("silu new", 8.0 * n as f64, || drop(tensor_ops::silu(&a).unwrap()));
    best("sigmoid new", 8.0 * n as f64, || drop(a.sigmoid().unwrap()));
    let d = &x - &y;
    let sq = (&d * &d).sum_all();
    best("one-pass loop sum((a-b)^2)", 8.0 * n as f64, || loops.run(Pattern::Read2, Store::Plain, 4 * n as u64));
    best("fused sum((a-b)^2)", 8.0 * n as f64, || drop(sq.eval().unwrap()));
    best("sum_all(a)", 4.0 * n as f64, || drop(a.sum_all().unwrap()));
    // Over the first dim of a square matrix: the chain feeds the column fold.
    let side = (n as f64).sqrt() as usize;
    let (a2, b2) = (a.view(&[side as isize, side as isize])?, b.view(&[side as isize, side as isize])?);
    let d2 = &Expr::input(&a2) - &Expr::input(&b2);
    let sq0 = (&d2 * &d2).sum(&[0], false);
    let bytes2 = 8.0 * (side * side) as f64;
    best("fused sum((a-b)^2, dim 0)", bytes2, || drop(sq0.eval().unwrap()));
    best("eager sum((a-b)^2, dim 0)", bytes2, || {
        let d = a2.sub(&b2).unwrap();
        drop(d.mul(&d).unwrap().sum(&[0], false).unwrap())
    });
    let am0 = (&d2 * &d2).argmax(0, false);
    best("fused argmax((a-b)^2, dim 0)", bytes2, || drop(am0.eval().unwrap()));
    Ok(())
}
