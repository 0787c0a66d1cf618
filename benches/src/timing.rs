//! Timing: warm up, calibrate iterations per sample, take the median of N samples.

use std::time::{Duration, Instant};

/// How a measurement is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Untimed calls before sampling (page faults, caches, thread pool start).
    pub warmup: usize,
    /// Timed samples; the median is reported.
    pub samples: usize,
    /// Each sample repeats the call until it lasts at least this long (short calls are
    /// batched so that timer resolution and loop overhead do not matter).
    pub min_sample: Duration,
}

impl Sampling {
    /// For calls that take milliseconds or more (DRAM-sized data): few samples, no batching.
    pub const LARGE: Sampling = Sampling { warmup: 2, samples: 9, min_sample: Duration::ZERO };
    /// For cache-resident data: more samples, each batched to ≥ 2 ms.
    pub const SMALL: Sampling = Sampling { warmup: 3, samples: 21, min_sample: Duration::from_millis(2) };
    /// For a smoke test: as few calls as give a number.
    pub const QUICK: Sampling = Sampling { warmup: 1, samples: 3, min_sample: Duration::from_micros(200) };

    /// The sampling for data of `bytes` bytes moved per call.
    pub fn for_bytes(bytes: u64) -> Sampling {
        if bytes >= 64 << 20 {
            Sampling::LARGE
        } else {
            Sampling::SMALL
        }
    }
}

/// The result of sampling one call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Median time per call.
    pub median: Duration,
    /// Fastest sample, per call.
    pub min: Duration,
    /// Slowest sample, per call.
    pub max: Duration,
    /// Samples taken.
    pub samples: usize,
    /// Calls per sample.
    pub iters: u64,
}

impl Timing {
    /// Median seconds per call.
    pub fn secs(&self) -> f64 {
        self.median.as_secs_f64()
    }

    /// GB/s (10^9 bytes per second) for `bytes` moved per call, at the median.
    pub fn gbps(&self, bytes: u64) -> f64 {
        gbps(bytes, self.secs())
    }
}

/// `bytes / secs` in GB/s (10^9 bytes per second); 0 when `secs` is not positive.
pub fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs / 1e9
    } else {
        0.0
    }
}

/// The median of `xs` (mean of the two middle values for an even count); `None` if empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

/// Times `f` under `cfg`. The first error `f` returns stops the measurement.
pub fn measure<E>(cfg: &Sampling, mut f: impl FnMut() -> Result<(), E>) -> Result<Timing, E> {
    let mut once = Duration::MAX;
    for _ in 0..cfg.warmup.max(1) {
        let t = Instant::now();
        f()?;
        once = once.min(t.elapsed());
    }
    let iters = if cfg.min_sample.is_zero() || once >= cfg.min_sample {
        1
    } else {
        (cfg.min_sample.as_nanos() / once.as_nanos().max(1) + 1).min(1 << 24) as u64
    };
    let mut per_call = Vec::with_capacity(cfg.samples.max(1));
    for _ in 0..cfg.samples.max(1) {
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        per_call.push(t.elapsed().as_secs_f64() / iters as f64);
    }
    let med = median(&per_call).unwrap_or(0.0);
    let min = per_call.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_call.iter().copied().fold(0.0, f64::max);
    Ok(Timing {
        median: Duration::from_secs_f64(med),
        min: Duration::from_secs_f64(min),
        max: Duration::from_secs_f64(max),
        samples: per_call.len(),
        iters,
    })
}

/// [`measure`] for a call that cannot fail.
pub fn measure_infallible(cfg: &Sampling, mut f: impl FnMut()) -> Timing {
    let r: Result<Timing, std::convert::Infallible> = measure(cfg, || {
        f();
        Ok(())
    });
    match r {
        Ok(t) => t,
        Err(never) => match never {},
    }
}
