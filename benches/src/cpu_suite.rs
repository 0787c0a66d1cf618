//! The `cpu-perf` measurement: the STREAM figures, then every case of the CPU bench set and
//! the latency cases, into a [`Report`].

use crate::cases::{cpu_set, latency_key, latency_out_key, Sizes, LATENCY_ELEMS};
use crate::cli::Options;
use crate::error::BenchResult;
use crate::machine;
use crate::ours;
use crate::par::threads;
use crate::report::{Entry, Metric, Report};
use crate::stream::{Pattern, StreamTable};
use crate::timing::{measure, Sampling};
use std::time::Duration;

/// The sampling for a call moving `bytes`, or the quick one.
pub fn sampling(quick: bool, bytes: u64) -> Sampling {
    if quick {
        Sampling::QUICK
    } else {
        Sampling::for_bytes(bytes)
    }
}

/// Measures the STREAM figures for every pattern at every size in `sizes`.
pub fn stream_table(sizes: &Sizes, quick: bool) -> StreamTable {
    StreamTable::measure(&Pattern::ALL, &sizes.all(), |b| sampling(quick, b))
}

/// Runs the CPU bench set selected by `opts` and returns its report.
pub fn run(opts: &Options) -> BenchResult<Report> {
    let sizes = Sizes::from_env(opts.quick);
    let model = machine::cpu_name();
    eprintln!("cpu-perf: {model}, {} threads, sizes {:?}", threads(), sizes.all());
    let stream = stream_table(&sizes, opts.quick);
    let mut entries = Vec::new();
    for case in cpu_set(&sizes).into_iter().filter(|c| opts.selects(&c.key())) {
        let key = case.key();
        let fig = stream
            .get(case.op.pattern(), case.array_bytes)
            .ok_or_else(|| crate::BenchError::Other(format!("no STREAM figure for {key}")))?;
        let mut call = ours::prepare(&case)?;
        let t = measure(&sampling(opts.quick, case.bytes()), &mut call)?;
        drop(call);
        let metric = Metric::throughput(case.bytes(), t.secs(), fig.label(), fig.best_gbps());
        eprintln!("  {key:<36} {:>7.2} GB/s  ratio {:.3}", t.gbps(case.bytes()), metric.ratio().unwrap_or(0.0));
        entries.push(Entry { key, metric });
    }
    // The sparse cases (issue 34), held to the same run's STREAM read at the DRAM size
    // (`to_dense`: to its own memset + scatter yardstick).
    let read = sizes.all().last().and_then(|&b| stream.get(Pattern::Read, b)).map_or(0.0, |f| f.best_gbps());
    for case in crate::sparse::cpu_set(opts.quick).into_iter().filter(|c| opts.selects(&c.key())) {
        let key = case.key();
        let (secs, limit, limit_gbps) = crate::sparse::measure_case(&case, &sampling(opts.quick, case.bytes()), read)?;
        let metric = Metric::throughput(case.bytes(), secs, limit, limit_gbps);
        eprintln!("  {key:<36} {:>7.2} ms  ratio {:.3}", secs * 1e3, metric.ratio().unwrap_or(0.0));
        entries.push(Entry { key, metric });
    }
    let latency_cases = LATENCY_ELEMS
        .iter()
        .map(|&n| (latency_key(n), n, false))
        .chain(LATENCY_ELEMS.iter().map(|&n| (latency_out_key(n), n, true)));
    for (key, n, into_out) in latency_cases {
        if !opts.selects(&key) {
            continue;
        }
        let mut call = if into_out { ours::prepare_latency_out(n)? } else { ours::prepare_latency(n)? };
        let cfg = Sampling {
            warmup: 100,
            samples: if opts.quick { 5 } else { 21 },
            min_sample: Duration::from_millis(if opts.quick { 1 } else { 5 }),
        };
        let t = measure(&cfg, &mut call)?;
        let ns = t.secs() * 1e9;
        eprintln!("  {key:<36} {ns:>7.0} ns/call");
        entries.push(Entry { key, metric: Metric::Latency { ns } });
    }
    // Measured again after the cases; the better of the two runs is the limit.
    let stream = stream.best_of(&stream_table(&sizes, opts.quick));
    for e in &mut entries {
        if let (Metric::Throughput { limit, limit_gbps, .. }, Some(case)) =
            (&mut e.metric, cpu_set(&sizes).into_iter().find(|c| c.key() == e.key))
            && let Some(fig) = stream.get(case.op.pattern(), case.array_bytes)
        {
            *limit = fig.label();
            *limit_gbps = fig.best_gbps();
        }
    }
    Ok(Report {
        suite: "cpu-perf".into(),
        machine_key: machine::sanitize(&model),
        machine: model,
        date: machine::today(),
        threads: threads(),
        quick: opts.quick,
        stream,
        entries,
    })
}
