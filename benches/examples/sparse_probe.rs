//! The sparse cases of `cpu-perf` one at a time, min and median of `rounds` calls:
//! `cargo run --release -p tensor-benches --example sparse_probe [filter] [rounds] [--quick]`
//! (e.g. `spmv 10`); for profiling a case under `perf record`.

use std::time::Instant;
use tensor_benches::sparse::{cpu_set, prepare, yardstick};
use tensor_benches::timing::Sampling;

fn main() -> tensor_benches::BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let filter = args.iter().find(|a| a.parse::<usize>().is_err() && !a.starts_with("--")).cloned();
    let rounds = args.iter().find_map(|a| a.parse::<usize>().ok()).unwrap_or(5);
    for case in cpu_set(quick) {
        let key = case.key();
        if filter.as_deref().is_some_and(|f| !key.contains(f)) {
            continue;
        }
        let mut call = prepare(&case)?;
        let mut ts = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            call()?;
            ts.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ts.sort_by(f64::total_cmp);
        let y = yardstick(&case, &Sampling { warmup: 1, samples: rounds, min_sample: std::time::Duration::ZERO });
        let y = y.map_or(String::new(), |s| format!("  yardstick {:.2} ms", s * 1e3));
        println!("{key:<44} min {:8.2} ms  median {:8.2} ms{y}", ts[0], ts[ts.len() / 2]);
    }
    Ok(())
}
