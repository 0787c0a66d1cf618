//! The result of one runner invocation: what was measured, on which machine, against which
//! same-run STREAM figures. A baseline file is a recorded [`Report`].

use crate::stream::StreamTable;
use crate::timing::gbps;
use serde::{Deserialize, Serialize};

/// One measured quantity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Metric {
    /// A memory-bound kernel: bytes moved per second beside the same-run limit.
    Throughput {
        /// Bytes read + written per call, each element once.
        bytes: u64,
        /// Median seconds per call.
        seconds: f64,
        /// `bytes / seconds` in GB/s.
        gbps: f64,
        /// What the kernel is held to, e.g. `"stream add (nt)"` or `"memcpy d2d"`.
        limit: String,
        /// The limit's GB/s in the same run.
        limit_gbps: f64,
    },
    /// A per-call latency (dispatch + allocation overhead).
    Latency {
        /// Median nanoseconds per call.
        ns: f64,
    },
}

impl Metric {
    /// A throughput figure from bytes, seconds and the limit it is held to.
    pub fn throughput(bytes: u64, seconds: f64, limit: impl Into<String>, limit_gbps: f64) -> Metric {
        Metric::Throughput { bytes, seconds, gbps: gbps(bytes, seconds), limit: limit.into(), limit_gbps }
    }

    /// `gbps / limit_gbps` for throughput; `None` for latency.
    pub fn ratio(&self) -> Option<f64> {
        match self {
            Metric::Throughput { gbps, limit_gbps, .. } if *limit_gbps > 0.0 => Some(gbps / limit_gbps),
            Metric::Throughput { .. } => Some(0.0),
            Metric::Latency { .. } => None,
        }
    }

    /// The figure baselines compare, higher is better: the ratio to the limit for
    /// throughput (machine noise that hits both cancels out), calls per second for latency.
    pub fn score(&self) -> f64 {
        match self {
            Metric::Throughput { .. } => self.ratio().unwrap_or(0.0),
            Metric::Latency { ns } if *ns > 0.0 => 1e9 / ns,
            Metric::Latency { .. } => 0.0,
        }
    }
}

/// One named measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Stable key: `case/dtype/shape`, e.g. `add_out/f32/67108864`. Baselines match on it.
    pub key: String,
    /// The value.
    pub metric: Metric,
}

/// A runner's whole result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which runner: `"cpu-perf"` or `"cuda-perf"`.
    pub suite: String,
    /// Machine name as reported (CPU model or GPU name).
    pub machine: String,
    /// [`crate::machine::sanitize`]d machine name: the baseline file stem.
    pub machine_key: String,
    /// Date taken (UTC, `YYYY-MM-DD`).
    pub date: String,
    /// Worker threads (CPU) or 0 (GPU).
    pub threads: usize,
    /// Taken with `--quick` (smaller sizes; not comparable with a full run).
    pub quick: bool,
    /// The same-run STREAM figures (CPU; empty for the GPU).
    #[serde(default)]
    pub stream: StreamTable,
    /// The measurements.
    pub entries: Vec<Entry>,
}

impl Report {
    /// The entry with `key`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_and_score() {
        let m = Metric::throughput(2_000_000_000, 1.0, "stream copy (plain)", 4.0);
        assert_eq!(m.ratio(), Some(0.5));
        assert_eq!(m.score(), 0.5);
        let l = Metric::Latency { ns: 500.0 };
        assert_eq!(l.ratio(), None);
        assert_eq!(l.score(), 2e6);
    }

    #[test]
    fn metric_json_is_tagged() {
        let s = serde_json::to_string(&Metric::Latency { ns: 1.0 }).unwrap();
        assert_eq!(s, r#"{"kind":"latency","ns":1.0}"#);
    }
}
