//! Command-line options shared by `cpu-perf` and `cuda-perf`.

use crate::baseline::{check_tolerance, DEFAULT_TOLERANCE};
use crate::error::{BenchError, BenchResult};
use std::path::PathBuf;

/// Parsed runner options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Write this run as the machine's new baseline instead of comparing.
    pub record: bool,
    /// Smaller sizes and fewer samples (a smoke test; compared only with a quick baseline).
    pub quick: bool,
    /// Relative score drop that counts as a regression.
    pub tolerance: f64,
    /// Where the JSON and markdown results go.
    pub out: PathBuf,
    /// Folder of baseline files (`<machine key>.json`).
    pub baseline_dir: PathBuf,
    /// Only cases whose key contains this text.
    pub filter: Option<String>,
    /// Only these array sizes, in MiB (`cuda-perf`; its sizes when unset).
    pub sizes_mib: Option<Vec<u64>>,
    /// Print the help text and exit.
    pub help: bool,
}

impl Options {
    /// Defaults for a runner whose baselines live in `benches/baselines/<kind>`.
    pub fn defaults(kind: &str) -> Options {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let workspace = root.parent().map_or_else(|| root.clone(), |p| p.to_path_buf());
        Options {
            record: false,
            quick: false,
            tolerance: DEFAULT_TOLERANCE,
            out: workspace.join("target").join("perf"),
            baseline_dir: root.join("baselines").join(kind),
            filter: None,
            sizes_mib: None,
            help: false,
        }
    }

    /// Parses `args` (without the program name) over [`Options::defaults`]`(kind)`.
    pub fn parse(kind: &str, args: impl IntoIterator<Item = String>) -> BenchResult<Options> {
        let mut o = Options::defaults(kind);
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let mut value = |name: &str| {
                inline.clone().or_else(|| it.next()).ok_or_else(|| BenchError::Args(format!("{name} needs a value")))
            };
            match flag.as_str() {
                "--record" => o.record = true,
                "--quick" => o.quick = true,
                "-h" | "--help" => o.help = true,
                "--tolerance" => {
                    let v = value("--tolerance")?;
                    let t =
                        v.parse::<f64>().map_err(|_| BenchError::Args(format!("--tolerance: not a number: {v}")))?;
                    o.tolerance = check_tolerance(t)?;
                }
                "--out" => o.out = PathBuf::from(value("--out")?),
                "--baseline-dir" => o.baseline_dir = PathBuf::from(value("--baseline-dir")?),
                "--filter" => o.filter = Some(value("--filter")?),
                "--sizes" => {
                    let v = value("--sizes")?;
                    let sizes = v
                        .split(',')
                        .map(|p| p.trim().parse::<u64>().ok().filter(|&m| m > 0 && m <= 1 << 20))
                        .collect::<Option<Vec<u64>>>()
                        .ok_or_else(|| BenchError::Args(format!("--sizes: not a list of MiB counts: {v}")))?;
                    o.sizes_mib = Some(sizes);
                }
                // Passed by `cargo bench`/`cargo test` harness conventions; harmless here.
                "--bench" | "--nocapture" => {}
                other => return Err(BenchError::Args(format!("unknown argument {other:?} (try --help)"))),
            }
        }
        Ok(o)
    }

    /// Whether a case key passes `--filter` (comma-separated substrings; any one matches).
    pub fn selects(&self, key: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| f.split(',').any(|part| key.contains(part)))
    }
}

/// The help text for runner `name`.
pub fn help(name: &str, what: &str) -> String {
    format!(
        "{name}: {what}\n\n\
         USAGE: cargo run --release -p tensor-benches --bin {name} -- [OPTIONS]\n\n\
         OPTIONS:\n  \
         --record             write this run as the machine's baseline (no comparison)\n  \
         --quick              small sizes, few samples (smoke test)\n  \
         --tolerance F        relative drop that counts as a regression (default {DEFAULT_TOLERANCE})\n  \
         --out DIR            where {name}.json and {name}.md go (default <workspace>/target/perf)\n  \
         --baseline-dir DIR   folder of <machine>.json baselines (default benches/baselines/...)\n  \
         --filter TEXT        only cases whose key contains TEXT (comma-separated: any)\n  \
         --sizes MIB,...      only these array sizes in MiB (cuda-perf; e.g. 16,256,1024)\n\n\
         Exit status: 0 = no regression (or no baseline for this machine), 1 = regression, 2 = error.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_flags() {
        let o = Options::parse("cpu", args(&["--quick", "--tolerance", "0.1", "--out=x", "--filter", "add"])).unwrap();
        assert!(o.quick && !o.record);
        assert_eq!(o.tolerance, 0.1);
        assert_eq!(o.out, PathBuf::from("x"));
        assert!(o.selects("add_out/f32/1") && !o.selects("exp/f32/1"));
        assert!(o.baseline_dir.ends_with("baselines/cpu"));
        assert_eq!(o.sizes_mib, None);
        let o = Options::parse("cuda", args(&["--sizes", "16,256,1024"])).unwrap();
        assert_eq!(o.sizes_mib, Some(vec![16, 256, 1024]));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Options::parse("cpu", args(&["--tolerance"])).is_err());
        assert!(Options::parse("cpu", args(&["--tolerance", "x"])).is_err());
        assert!(Options::parse("cpu", args(&["--tolerance", "1.5"])).is_err());
        assert!(Options::parse("cpu", args(&["--frobnicate"])).is_err());
        assert!(Options::parse("cuda", args(&["--sizes", "16,x"])).is_err());
        assert!(Options::parse("cuda", args(&["--sizes", "0"])).is_err());
    }
}
