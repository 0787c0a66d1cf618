//! Peer comparison: `cargo bench -p tensor-benches --bench peers [-- FILTER]`.
//!
//! The bench set's shapes through tensor-ops, ndarray 0.17 and candle-core 0.11, beside this
//! machine's same-run STREAM figure for the same access pattern, printed as a markdown table
//! of GB/s and ratios (and written to `<workspace>/target/perf/peers.md`).
//! `TENSOR_BENCH_BIG=0` skips the DRAM size; `TENSOR_BENCH_BIG=N` uses N MiB.

mod cn;
mod nd;

use std::fmt::Write;
use std::time::Duration;
use tensor_benches::cases::{cpu_set, latency_key, Case, Sizes, LATENCY_ELEMS};
use tensor_benches::cpu_suite::stream_table;
use tensor_benches::markdown::{human_bytes, stream_table as stream_md};
use tensor_benches::timing::{measure, measure_infallible, Sampling, Timing};
use tensor_benches::{machine, ours, par};

/// Peers are slow on strided DRAM cases (seconds per call): few samples there.
fn sampling(case: &Case) -> Sampling {
    if case.bytes() >= 64 << 20 {
        Sampling { warmup: 1, samples: 5, min_sample: Duration::ZERO }
    } else {
        Sampling::SMALL
    }
}

fn cell(t: Option<f64>) -> String {
    t.map_or_else(|| "–".into(), |v| format!("{v:.2}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

fn peer(mut call: Option<Box<dyn FnMut()>>, cfg: &Sampling) -> Option<Timing> {
    call.as_mut().map(|c| measure_infallible(cfg, c))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("peers: measurement skipped (run it with `cargo bench -p tensor-benches --bench peers`)");
        return;
    }
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned();
    let sizes = Sizes::from_env(false);
    let model = machine::cpu_name();
    eprintln!("peers: {model}, {} threads, sizes {:?}", par::threads(), sizes.all());
    let stream = stream_table(&sizes, false);

    let mut md = format!(
        "# tensor-ops vs. peers — {model}, {} threads, {}\n\n\
         GB/s = (bytes read + written, each element once) / median time. STREAM = best of plain and \
         non-temporal stores for the same access pattern, same run. ndarray and candle run as their \
         users call them (ndarray arithmetic is single-threaded). – = the library has no such operation.\n\n",
        par::threads(),
        machine::today()
    );
    md.push_str(&stream_md(&stream));
    md.push_str(
        "\n| case | size | STREAM | tensor-ops | ndarray | candle | ours/STREAM | ours/ndarray | ours/candle |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for case in cpu_set(&sizes) {
        let key = case.key();
        if filter.as_deref().is_some_and(|f| !f.split(',').any(|part| key.contains(part))) {
            continue;
        }
        let cfg = sampling(&case);
        let limit = stream.get(case.op.pattern(), case.array_bytes).map(|f| f.best_gbps());
        let ours = match ours::prepare(&case).and_then(|mut c| measure(&cfg, &mut c)) {
            Ok(t) => Some(t.gbps(case.bytes())),
            Err(e) => {
                eprintln!("  {key}: tensor-ops failed: {e}");
                None
            }
        };
        let nd = peer(nd::prepare(&case), &cfg).map(|t| t.gbps(case.bytes()));
        let cn = peer(cn::prepare(&case), &cfg).map(|t| t.gbps(case.bytes()));
        let row = format!(
            "| {key} | {} | {} | {} | {} | {} | {} | {} | {} |",
            human_bytes(case.array_bytes),
            cell(limit),
            cell(ours),
            cell(nd),
            cell(cn),
            ratio(ours, limit),
            ratio(ours, nd),
            ratio(ours, cn)
        );
        eprintln!("{row}");
        let _ = writeln!(md, "{row}");
    }

    md.push_str("\n| latency: `add`, new output | tensor-ops ns/call | ndarray ns/call | candle ns/call |\n|---|---:|---:|---:|\n");
    let cfg = Sampling { warmup: 100, samples: 21, min_sample: Duration::from_millis(5) };
    for n in LATENCY_ELEMS {
        let ns = |t: Option<Timing>| t.map(|t| t.secs() * 1e9);
        let ours = ours::prepare_latency(n).and_then(|mut c| measure(&cfg, &mut c)).ok();
        let nd = Some(measure_infallible(&cfg, nd::latency(n)));
        let cn = peer(cn::latency(n), &cfg);
        let _ = writeln!(md, "| {} | {} | {} | {} |", latency_key(n), cell(ns(ours)), cell(ns(nd)), cell(ns(cn)));
    }

    println!("{md}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/perf");
    if std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("peers.md"), &md)).is_ok() {
        eprintln!("peers: table written to {}", dir.join("peers.md").display());
    }
}
