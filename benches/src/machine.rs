//! Which machine a report was taken on: the baseline key, and a date for the report.

use std::time::{SystemTime, UNIX_EPOCH};

/// The CPU model from `/proc/cpuinfo` (`model name`), else the architecture name.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| parse_cpu_model(&s))
        .unwrap_or_else(|| format!("unknown-{}", std::env::consts::ARCH))
}

/// The first `model name` value of a `/proc/cpuinfo` text.
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string()).filter(|v| !v.is_empty())
    })
}

/// The CPU as `cpu-perf` names it: the model from `/proc/cpuinfo` and the SIMD level the
/// kernels run at (`tensor_kernels_cpu::simd_level::simd_level`, which `TENSOR_OPS_SIMD` can
/// lower), e.g. `"AMD EPYC (avx2)"`. The level is part of the name, and so of the baseline
/// key, because one model string can cover different machines: cloud VMs of AMD's Zen 3 and
/// Zen 5 both report "AMD EPYC", and a baseline of one flagged the other's every kernel.
///
/// ```
/// assert!(tensor_benches::machine::cpu_name().ends_with(')'));
/// ```
pub fn cpu_name() -> String {
    cpu_name_of(&cpu_model(), tensor_kernels_cpu::simd_level::simd_level().name())
}

/// [`cpu_name`] from its parts.
///
/// ```
/// use tensor_benches::machine::{cpu_name_of, sanitize};
/// assert_eq!(sanitize(&cpu_name_of("AMD EPYC", "avx2")), "amd-epyc-avx2");
/// ```
pub fn cpu_name_of(model: &str, simd: &str) -> String {
    format!("{model} ({simd})")
}

/// A file-name-safe key for a machine name: lower-case ASCII letters and digits, every
/// other run of characters turned into one `-`, no leading or trailing `-`.
///
/// ```
/// assert_eq!(tensor_benches::machine::sanitize("Intel(R) Xeon(R) Processor"), "intel-r-xeon-r-processor");
/// assert_eq!(tensor_benches::machine::sanitize("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
/// ```
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "unknown".to_string()
    } else {
        out
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_model_name() {
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(parse_cpu_model(info).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(parse_cpu_model("processor: 0\n"), None);
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_411), (2025, 11, 19));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn sanitizes() {
        assert_eq!(sanitize("  --AMD EPYC 7B13 64-Core Processor  "), "amd-epyc-7b13-64-core-processor");
        assert_eq!(sanitize("()"), "unknown");
    }
}
