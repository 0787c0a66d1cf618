//! A quick probe of the reductions on a [8192, 8192] f32 (256 MiB) tensor against a
//! read-only reference loop and a copy, all on every worker thread, in one run:
//! `cargo run --release -p tensor-benches --example reduce_probe [rows] [cols]`
//! (`REDUCE_PROBE_ONLY=argmax` for the cases whose name contains it, `REDUCE_PROBE_REPS=n`
//! to time each n times, `REDUCE_PROBE_RANDOM=1` for uniform random data,
//! `REDUCE_PROBE_DTYPE=f16` to run the cases in another dtype).

use rayon::prelude::*;
use std::time::Instant;
use tensor_ops::prelude::*;

/// A named measured call.
type Case<'a> = (&'static str, Box<dyn Fn() + 'a>);

fn best(mut f: impl FnMut()) -> f64 {
    f();
    // `REDUCE_PROBE_REPS=n` times each case n times (default 5; more for profiling).
    let reps = std::env::var("REDUCE_PROBE_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> tensor_ops::Result<()> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (r, c) = (args.first().copied().unwrap_or(8192), args.get(1).copied().unwrap_or(8192));
    let n = r * c;
    // `REDUCE_PROBE_RANDOM=1`: uniform values in [-0.5, 0.5) from a fixed-seed xorshift
    // (where the maxima fall decides how much work an argmax's position search does).
    let data: Vec<f32> = if std::env::var_os("REDUCE_PROBE_RANDOM").is_some() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    } else {
        (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect()
    };
    let bytes = (n * 4) as f64;
    // The read reference: a whole-array sum with 16 accumulators per thread.
    let read = best(|| {
        let s: f32 = data.par_chunks(1 << 16).map(tensor_benches::stream::sum_lanes).sum();
        std::hint::black_box(s);
    });
    let a = Tensor::from_vec(data.clone(), &[r, c])?;
    // `REDUCE_PROBE_DTYPE=f16` (or any dtype name): the cases run on the data in that dtype
    // (the GB/s figures still count 4 bytes per element).
    let a = match std::env::var("REDUCE_PROBE_DTYPE").ok().and_then(|d| DType::ALL.into_iter().find(|t| t.name() == d))
    {
        Some(d) => a.to_dtype(d)?,
        None => a,
    };
    let dst = Tensor::empty(&[r, c], DType::F32, Device::Cpu)?;
    let copy = best(|| dst.copy_(&a).unwrap());
    println!("read reference {:.2} GB/s; copy {:.2} GB/s (read+write)", bytes / read / 1e9, 2.0 * bytes / copy / 1e9);
    let cases: Vec<Case<'_>> = vec![
        ("sum dim 1", Box::new(|| drop(a.sum(&[1], false).unwrap()))),
        ("sum dim 0", Box::new(|| drop(a.sum(&[0], false).unwrap()))),
        ("sum_all", Box::new(|| drop(a.sum_all().unwrap()))),
        ("amax dim 1", Box::new(|| drop(a.amax(&[1], false).unwrap()))),
        ("amax dim 0", Box::new(|| drop(a.amax(&[0], false).unwrap()))),
        ("argmax dim 1", Box::new(|| drop(a.argmax(1, false).unwrap()))),
        ("argmax dim 0", Box::new(|| drop(a.argmax(0, false).unwrap()))),
        ("var dim 1", Box::new(|| drop(a.var(&[1], 1, false).unwrap()))),
        ("var dim 0", Box::new(|| drop(a.var(&[0], 1, false).unwrap()))),
        ("logsumexp dim 1", Box::new(|| drop(a.logsumexp(&[1], false).unwrap()))),
        ("mean dim 1", Box::new(|| drop(a.mean(&[1], false).unwrap()))),
        ("all dim 1", Box::new(|| drop(a.all(&[1], false).unwrap()))),
        ("all dim 0", Box::new(|| drop(a.all(&[0], false).unwrap()))),
        ("any dim 1", Box::new(|| drop(a.any(&[1], false).unwrap()))),
    ];
    // `REDUCE_PROBE_ONLY=argmax` runs the matching cases only (for profiling one).
    let only = std::env::var("REDUCE_PROBE_ONLY").ok();
    for (name, f) in &cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let t = best(f);
        println!("{name:>16}: {:6.2} GB/s = {:.2} of read", bytes / t / 1e9, read / t);
    }
    if only.is_some() {
        return Ok(());
    }
    let t = best(|| drop(a.exp().unwrap()));
    println!("{:>16}: {:.2} x the time of a copy", "exp (map)", t / copy);
    let t = best(|| drop(a.softmax(1).unwrap()));
    println!("{:>16}: {:.2} x the time of a copy", "softmax dim 1", t / copy);
    let t = best(|| tensor_ops::softmax_out(&a, 1, &dst).unwrap());
    println!("{:>16}: {:.2} x the time of a copy", "softmax_out", t / copy);
    Ok(())
}
