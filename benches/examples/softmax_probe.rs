//! Softmax, exp and the slower reductions against a copy of the same f32 tensor and a
//! read-only reference loop, in interleaved rounds (min of each):
//! `cargo run --release -p tensor-benches --example softmax_probe [rows] [cols] [rounds]`.
//! A small tensor (e.g. `64 8192`) measures the in-cache compute cost.

use rayon::prelude::*;
use std::time::Instant;
use tensor_ops::prelude::*;

/// A named measured call.
type Case<'a> = (&'static str, Box<dyn FnMut() + 'a>);

fn time(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn main() -> tensor_ops::Result<()> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (r, c) = (args.first().copied().unwrap_or(8192), args.get(1).copied().unwrap_or(8192));
    let rounds = args.get(2).copied().unwrap_or(10);
    let inner = (256 * 1024 * 1024 / (r * c * 4)).max(1);
    let data: Vec<f32> = (0..r * c).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
    let a = Tensor::from_vec(data, &[r, c])?;
    let dst = Tensor::empty(&[r, c], DType::F32, Device::Cpu)?;
    let data = a.to_vec::<f32>()?;
    // The same values in f16 (rows computed in f32, rounded once).
    let (a16, dst16) = (a.to_dtype(DType::F16)?, Tensor::empty(&[r, c], DType::F16, Device::Cpu)?);
    let mut cases: Vec<Case<'_>> = vec![
        ("copy", Box::new(|| dst.copy_(&a).unwrap())),
        // The read reference: a whole-array sum with 16 accumulators per thread.
        (
            "read",
            Box::new(|| {
                let s: f32 = data.par_chunks(1 << 16).map(tensor_benches::stream::sum_lanes).sum();
                std::hint::black_box(s);
            }),
        ),
        ("softmax_out", Box::new(|| tensor_ops::softmax_out(&a, 1, &dst).unwrap())),
        ("softmax (new)", Box::new(|| drop(a.softmax(1).unwrap()))),
        ("log_softmax_out", Box::new(|| tensor_ops::log_softmax_out(&a, 1, &dst).unwrap())),
        ("exp_out", Box::new(|| tensor_ops::exp_out(&a, &dst).unwrap())),
        ("copy f16", Box::new(|| dst16.copy_(&a16).unwrap())),
        ("softmax_out f16", Box::new(|| tensor_ops::softmax_out(&a16, 1, &dst16).unwrap())),
        ("log_softmax_out f16", Box::new(|| tensor_ops::log_softmax_out(&a16, 1, &dst16).unwrap())),
        ("amax dim 1", Box::new(|| drop(a.amax(&[1], false).unwrap()))),
        ("argmax dim 1", Box::new(|| drop(a.argmax(1, false).unwrap()))),
        ("argmax dim 0", Box::new(|| drop(a.argmax(0, false).unwrap()))),
        ("var dim 1", Box::new(|| drop(a.var(&[1], 1, false).unwrap()))),
        ("var dim 0", Box::new(|| drop(a.var(&[0], 1, false).unwrap()))),
        ("logsumexp dim 1", Box::new(|| drop(a.logsumexp(&[1], false).unwrap()))),
    ];
    // `SOFTMAX_PROBE_ONLY=softmax_out` keeps the cases whose name contains it (to profile).
    if let Ok(only) = std::env::var("SOFTMAX_PROBE_ONLY") {
        cases.retain(|(name, _)| name.contains(&only));
    }
    let mut best = vec![f64::INFINITY; cases.len()];
    for _ in 0..rounds {
        for (k, (_, f)) in cases.iter_mut().enumerate() {
            let t = time(&mut || (0..inner).for_each(|_| f()));
            best[k] = best[k].min(t / inner as f64);
        }
    }
    let read = cases.iter().position(|(name, _)| *name == "read").map(|k| best[k]);
    for (k, (name, _)) in cases.iter().enumerate() {
        let ns = best[k] * 1e9 / (r * c) as f64;
        print!("{name:>16}: {:8.3} ms  {ns:.3} ns/elem  {:.2} x the first", best[k] * 1e3, best[k] / best[0]);
        match read {
            Some(read) => println!("  {:.2} of read", read / best[k]),
            None => println!(),
        }
    }
    Ok(())
}
