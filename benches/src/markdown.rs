//! Markdown tables for reports and comparisons.

use crate::baseline::{Comparison, Verdict};
use crate::report::{Metric, Report};
use crate::stream::StreamTable;
use std::fmt::Write;

/// A human size: `4 MiB`, `256 MiB`, `1 GiB`, `512 B`.
pub fn human_bytes(b: u64) -> String {
    const K: u64 = 1024;
    if b >= K * K * K && (b >> 30) << 30 == b {
        format!("{} GiB", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.0} MiB", b as f64 / (K * K) as f64)
    } else if b >= K {
        format!("{:.0} KiB", b as f64 / K as f64)
    } else {
        format!("{b} B")
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_string(), |x| format!("{x:.digits$}"))
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::Improved => "improved",
        Verdict::Regressed => "**REGRESSED**",
        Verdict::New => "new",
        Verdict::Missing => "missing",
    }
}

/// The STREAM figures as a table.
pub fn stream_table(t: &StreamTable) -> String {
    let mut s = String::from("| STREAM | array | plain GB/s | non-temporal GB/s | best |\n|---|---:|---:|---:|---|\n");
    for f in &t.figures {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {} | {:.1} ({}) |",
            f.pattern.name(),
            human_bytes(f.array_bytes),
            f.plain_gbps,
            opt(f.nt_gbps, 1),
            f.best_gbps(),
            f.label()
        );
    }
    s
}

/// The report (and its comparison, if any) as a markdown document.
pub fn report(r: &Report, cmp: Option<&Comparison>) -> String {
    let mut s = format!(
        "# {} — {} ({} threads{}), {}\n\n",
        r.suite,
        r.machine,
        r.threads,
        if r.quick { ", quick" } else { "" },
        r.date
    );
    s.push_str("GB/s = (bytes read + bytes written, each element once) / median time. ");
    s.push_str("ratio = GB/s ÷ the same-run limit for the same access pattern.\n\n");
    if !r.stream.figures.is_empty() {
        s.push_str(&stream_table(&r.stream));
        s.push('\n');
    }
    s.push_str("| case | GB/s | limit | limit GB/s | ratio | baseline | change | verdict |\n");
    s.push_str("|---|---:|---|---:|---:|---:|---:|---|\n");
    for e in &r.entries {
        let row = cmp.and_then(|c| c.row(&e.key));
        let (base, change, v) = match row {
            Some(row) => (
                opt(row.base, 3),
                row.change.map_or("–".into(), |c| format!("{:+.0}%", c * 100.0)),
                verdict(row.verdict),
            ),
            None => ("–".into(), "–".into(), "–"),
        };
        match &e.metric {
            Metric::Throughput { gbps, limit, limit_gbps, .. } => {
                let ratio = opt(e.metric.ratio(), 3);
                let _ = writeln!(
                    s,
                    "| {} | {gbps:.2} | {limit} | {limit_gbps:.1} | {ratio} | {base} | {change} | {v} |",
                    e.key
                );
            }
            Metric::Latency { ns } => {
                let base = row.and_then(|r| r.base).map_or("–".into(), |b| format!("{:.0} ns", 1e9 / b));
                let _ = writeln!(s, "| {} | {ns:.0} ns/call | – | – | – | {base} | {change} | {v} |", e.key);
            }
        }
    }
    if let Some(c) = cmp {
        for row in c.rows.iter().filter(|r| r.verdict == Verdict::Missing) {
            let _ = writeln!(s, "| {} | – | – | – | – | {} | – | missing |", row.key, opt(row.base, 3));
        }
        if let Some(why) = &c.incompatible {
            let _ = writeln!(s, "\nNot compared with the baseline: {why}.");
        } else {
            let _ = writeln!(s, "\nTolerance: a score (ratio, or calls/s for latency) more than {:.0}% below the baseline is a regression.", c.tolerance * 100.0);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(4 << 20), "4 MiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536), "2 KiB");
        assert_eq!(human_bytes(8), "8 B");
    }
}
