//! The regression-gate flow shared by `cpu-perf` and `cuda-perf`: compare with (or record)
//! the machine's baseline, write `<suite>.json` and `<suite>.md`, decide the exit status.

use crate::baseline::{self, Comparison};
use crate::cli::{self, Options};
use crate::error::BenchResult;
use crate::markdown;
use crate::report::Report;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// What the gate concluded.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// `--record`: the report was written as the baseline at this path.
    Recorded(PathBuf),
    /// No baseline for this machine at this path (not a failure).
    NoBaseline(PathBuf),
    /// The baseline exists but cannot be compared (reason).
    Incompatible(String),
    /// Compared, nothing regressed.
    Passed,
    /// Compared, this many entries regressed.
    Regressed(usize),
}

impl Outcome {
    /// Process exit status: 1 on a regression, else 0.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Regressed(_) => 1,
            _ => 0,
        }
    }
}

#[derive(Serialize)]
struct Output<'a> {
    report: &'a Report,
    comparison: Option<&'a Comparison>,
    baseline: String,
}

/// Compares `report` with its baseline under `opts` (or records it), writes the JSON and
/// markdown results into `opts.out`, prints the markdown, and returns the outcome.
pub fn finish(report: &Report, opts: &Options) -> BenchResult<Outcome> {
    let path = baseline::baseline_path(&opts.baseline_dir, &report.machine_key);
    let (comparison, outcome) = if opts.record {
        baseline::save(&path, report)?;
        (None, Outcome::Recorded(path.clone()))
    } else {
        match baseline::load(&path)? {
            None => (None, Outcome::NoBaseline(path.clone())),
            Some(base) => {
                let c = baseline::compare(&base, report, opts.tolerance);
                let o = match (&c.incompatible, c.regressions().count()) {
                    (Some(why), _) => Outcome::Incompatible(why.clone()),
                    (None, 0) => Outcome::Passed,
                    (None, n) => Outcome::Regressed(n),
                };
                (Some(c), o)
            }
        }
    };
    let md = markdown::report(report, comparison.as_ref());
    let out = Output { report, comparison: comparison.as_ref(), baseline: path.display().to_string() };
    baseline::write_json(&opts.out.join(format!("{}.json", report.suite)), &out)?;
    let md_path = opts.out.join(format!("{}.md", report.suite));
    std::fs::write(&md_path, &md).map_err(|e| crate::BenchError::io(&md_path, e))?;
    println!("{md}");
    println!("{}", describe(&outcome));
    println!("results: {} and .md", opts.out.join(format!("{}.json", report.suite)).display());
    Ok(outcome)
}

/// One line for the outcome.
pub fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Recorded(p) => format!("recorded a new baseline: {}", p.display()),
        Outcome::NoBaseline(p) => {
            format!("no baseline for this machine ({} does not exist); run with --record to create one", p.display())
        }
        Outcome::Incompatible(why) => format!("baseline not comparable: {why}; nothing checked"),
        Outcome::Passed => "no regression beyond tolerance".to_string(),
        Outcome::Regressed(n) => format!("REGRESSION: {n} entr{} below tolerance", if *n == 1 { "y" } else { "ies" }),
    }
}

/// A runner's `main`: parses options (printing `what` for `--help`), runs `measure`, and
/// gates its report. `measure` returns `Ok(None)` when there is nothing to measure (e.g. no
/// GPU), which exits 0. Errors print and exit 2.
pub fn main(
    name: &str,
    what: &str,
    kind: &str,
    measure: impl FnOnce(&Options) -> BenchResult<Option<Report>>,
) -> ExitCode {
    let opts = match Options::parse(kind, std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    if opts.help {
        print!("{}", cli::help(name, what));
        return ExitCode::SUCCESS;
    }
    let result = measure(&opts).and_then(|r| r.map(|r| finish(&r, &opts)).transpose());
    match result {
        Ok(Some(o)) => ExitCode::from(o.exit_code()),
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::from(2)
        }
    }
}
