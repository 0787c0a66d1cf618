//! Baselines: a recorded [`Report`] per machine, and the comparison of a new report with it.
//!
//! Throughput entries compare their ratio to the same-run limit (STREAM on the CPU,
//! device-to-device memcpy on the GPU); latency entries compare calls per second. A change
//! worse than `-tolerance` (relative, default 25 %) is a regression.

use crate::error::{BenchError, BenchResult};
use crate::report::Report;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Default tolerance: a score more than 25 % below the baseline's is a regression. Noise on
/// shared machines is ±10–15 % on ratios taken in one run.
pub const DEFAULT_TOLERANCE: f64 = 0.25;

/// The baseline file for `machine_key` under `dir`: `dir/<machine_key>.json`.
pub fn baseline_path(dir: &Path, machine_key: &str) -> PathBuf {
    dir.join(format!("{machine_key}.json"))
}

/// Loads the baseline at `path`; `Ok(None)` when the file does not exist.
pub fn load(path: &Path) -> BenchResult<Option<Report>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BenchError::io(path, e)),
    };
    serde_json::from_str(&text).map(Some).map_err(|source| BenchError::Json { path: path.to_path_buf(), source })
}

/// Writes `report` as pretty JSON to `path`, creating parent folders.
pub fn save(path: &Path, report: &Report) -> BenchResult<()> {
    write_json(path, report)
}

/// Writes any serialisable value as pretty JSON to `path`, creating parent folders.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> BenchResult<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|source| BenchError::Json { path: path.into(), source })?;
    std::fs::write(path, text + "\n").map_err(|e| BenchError::io(path, e))
}

/// How one entry fared against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within tolerance.
    Ok,
    /// Better than the baseline by more than the tolerance (consider recording a new one).
    Improved,
    /// Worse than the baseline by more than the tolerance.
    Regressed,
    /// Not in the baseline.
    New,
    /// In the baseline but not measured now.
    Missing,
}

/// One row of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The entry key.
    pub key: String,
    /// Baseline score, if any.
    pub base: Option<f64>,
    /// Current score, if any.
    pub now: Option<f64>,
    /// `now / base - 1` when both exist.
    pub change: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// A report compared with its baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Relative tolerance used.
    pub tolerance: f64,
    /// One row per key in either report, current entries first in their order.
    pub rows: Vec<Row>,
    /// Why the two reports are not comparable at all (e.g. `--quick` against a full run).
    pub incompatible: Option<String>,
}

impl Comparison {
    /// The regressed rows.
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict == Verdict::Regressed)
    }

    /// Whether any row regressed.
    pub fn has_regression(&self) -> bool {
        self.regressions().next().is_some()
    }

    /// The row for `key`.
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }
}

/// Checks a tolerance value: finite and in `[0, 1)`.
pub fn check_tolerance(t: f64) -> BenchResult<f64> {
    if t.is_finite() && (0.0..1.0).contains(&t) {
        Ok(t)
    } else {
        Err(BenchError::Args(format!("tolerance must be in [0, 1), got {t}")))
    }
}

/// Compares `now` with `base` under `tolerance` (relative drop of the score that counts as a
/// regression).
pub fn compare(base: &Report, now: &Report, tolerance: f64) -> Comparison {
    let incompatible = if base.suite != now.suite {
        Some(format!("baseline is from {}, this run is {}", base.suite, now.suite))
    } else if base.quick != now.quick {
        Some(format!("baseline quick={} but this run quick={}", base.quick, now.quick))
    } else {
        None
    };
    let mut rows = Vec::new();
    for e in &now.entries {
        let score = e.metric.score();
        let row = match base.get(&e.key).filter(|_| incompatible.is_none()) {
            None => Row { key: e.key.clone(), base: None, now: Some(score), change: None, verdict: Verdict::New },
            Some(b) => {
                let bs = b.metric.score();
                let change = if bs > 0.0 { score / bs - 1.0 } else { 0.0 };
                let verdict = if change < -tolerance {
                    Verdict::Regressed
                } else if change > tolerance {
                    Verdict::Improved
                } else {
                    Verdict::Ok
                };
                Row { key: e.key.clone(), base: Some(bs), now: Some(score), change: Some(change), verdict }
            }
        };
        rows.push(row);
    }
    if incompatible.is_none() {
        for b in base.entries.iter().filter(|b| now.get(&b.key).is_none()) {
            rows.push(Row {
                key: b.key.clone(),
                base: Some(b.metric.score()),
                now: None,
                change: None,
                verdict: Verdict::Missing,
            });
        }
    }
    Comparison { tolerance, rows, incompatible }
}
