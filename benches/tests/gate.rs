//! The regression gate's logic on synthetic numbers (no timing, no thresholds on speed),
//! plus a smoke run of `cpu-perf --quick` at a tiny size.

use std::path::PathBuf;
use std::process::Command;
use tensor_benches::baseline::{self, compare, Verdict};
use tensor_benches::cli::Options;
use tensor_benches::gate::{finish, Outcome};
use tensor_benches::report::{Entry, Metric, Report};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tensor-benches-gate").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn report(ratios: &[(&str, f64)], latency_ns: f64) -> Report {
    let mut entries: Vec<Entry> = ratios
        .iter()
        .map(|&(key, ratio)| Entry {
            key: key.to_string(),
            // 10 GB/s limit: gbps = 10 * ratio with 1e9 bytes.
            metric: Metric::throughput(1_000_000_000, 1.0 / (10.0 * ratio), "stream copy (plain)", 10.0),
        })
        .collect();
    entries.push(Entry { key: "latency/add/f32/1".into(), metric: Metric::Latency { ns: latency_ns } });
    Report {
        suite: "cpu-perf".into(),
        machine: "Test CPU (R)".into(),
        machine_key: "test-cpu-r".into(),
        date: "2026-01-01".into(),
        threads: 2,
        quick: false,
        stream: Default::default(),
        entries,
    }
}

fn opts(dir: &std::path::Path) -> Options {
    Options { out: dir.join("out"), baseline_dir: dir.join("baselines"), ..Options::defaults("cpu") }
}

#[test]
fn drop_beyond_tolerance_is_a_regression() {
    let base = report(&[("copy/f32/1024", 0.8), ("add/f32/1024", 0.5)], 400.0);
    let now = report(&[("copy/f32/1024", 0.5), ("add/f32/1024", 0.45)], 400.0);
    let c = compare(&base, &now, 0.25);
    assert_eq!(c.row("copy/f32/1024").unwrap().verdict, Verdict::Regressed);
    assert_eq!(c.row("add/f32/1024").unwrap().verdict, Verdict::Ok);
    assert_eq!(c.regressions().count(), 1);
    // A looser tolerance accepts the same drop (0.5 / 0.8 - 1 = -37.5 %).
    assert!(!compare(&base, &now, 0.4).has_regression());
}

#[test]
fn within_tolerance_passes_and_improvements_are_flagged() {
    let base = report(&[("copy/f32/1024", 0.8)], 400.0);
    let now = report(&[("copy/f32/1024", 0.7), ("new/f32/1", 0.1)], 300.0);
    let c = compare(&base, &now, 0.25);
    assert!(!c.has_regression());
    assert_eq!(c.row("new/f32/1").unwrap().verdict, Verdict::New);
    // 400 → 300 ns is 33 % more calls per second.
    assert_eq!(c.row("latency/add/f32/1").unwrap().verdict, Verdict::Improved);
    let gone = compare(&now, &base, 0.25);
    assert_eq!(gone.row("new/f32/1").unwrap().verdict, Verdict::Missing);
}

#[test]
fn slower_latency_is_a_regression() {
    let base = report(&[], 400.0);
    let now = report(&[], 900.0);
    assert_eq!(compare(&base, &now, 0.25).row("latency/add/f32/1").unwrap().verdict, Verdict::Regressed);
}

#[test]
fn gate_without_baseline_exits_zero_then_records_and_detects() {
    let dir = scratch("flow");
    let o = opts(&dir);
    let now = report(&[("copy/f32/1024", 0.8)], 400.0);
    let out = finish(&now, &o).unwrap();
    assert!(matches!(out, Outcome::NoBaseline(_)));
    assert_eq!(out.exit_code(), 0);
    assert!(o.out.join("cpu-perf.json").exists() && o.out.join("cpu-perf.md").exists());

    let rec = finish(&now, &Options { record: true, ..o.clone() }).unwrap();
    assert_eq!(rec, Outcome::Recorded(o.baseline_dir.join("test-cpu-r.json")));
    assert_eq!(baseline::load(&o.baseline_dir.join("test-cpu-r.json")).unwrap(), Some(now.clone()));

    assert_eq!(finish(&now, &o).unwrap(), Outcome::Passed);
    let worse = report(&[("copy/f32/1024", 0.4)], 400.0);
    let r = finish(&worse, &o).unwrap();
    assert_eq!(r, Outcome::Regressed(1));
    assert_eq!(r.exit_code(), 1);
    let md = std::fs::read_to_string(o.out.join("cpu-perf.md")).unwrap();
    assert!(md.contains("REGRESSED"), "{md}");

    let quick = Report { quick: true, ..worse };
    assert!(matches!(finish(&quick, &o).unwrap(), Outcome::Incompatible(_)));
}

#[test]
fn bad_baseline_file_is_an_error_value() {
    let dir = scratch("bad");
    let p = dir.join("x.json");
    std::fs::write(&p, "{ not json").unwrap();
    assert!(baseline::load(&p).is_err());
    assert_eq!(baseline::load(&dir.join("absent.json")).unwrap(), None);
}

#[test]
fn cpu_perf_quick_smoke_run() {
    let dir = scratch("smoke");
    let status = Command::new(env!("CARGO_BIN_EXE_cpu-perf"))
        .args(["--quick", "--out"])
        .arg(dir.join("out"))
        .arg("--baseline-dir")
        .arg(dir.join("baselines"))
        .env("TENSOR_BENCH_BIG", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&status.stderr));
    assert!(stdout.contains("no baseline for this machine"), "{stdout}");
    let json = std::fs::read_to_string(dir.join("out/cpu-perf.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["report"]["entries"].as_array().unwrap().len() >= 18);
}

#[test]
fn cpu_perf_rejects_bad_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_cpu-perf")).arg("--tolerance=2").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
