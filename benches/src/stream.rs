//! STREAM-like measurements of this machine's bandwidth for the access patterns the
//! kernels use, on all worker threads, with plain and (where available) non-temporal stores.
//!
//! Byte counts follow STREAM: bytes read + bytes written, each array element once.
//! For an array of `B` bytes: copy and scale move `2B`, add moves `3B`, fill moves `B`.

use crate::par::{split_mut, split_mut_grain};
use crate::timing::{measure_infallible, Sampling};
use serde::{Deserialize, Serialize};

/// A STREAM access pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// `b[i] = a[i]` — yardstick for copies, transposes, permutes, casts.
    Copy,
    /// `a[i] = v` — yardstick for fill.
    Fill,
    /// `c[i] = a[i] + b[i]` — yardstick for binary ops.
    Add,
    /// `b[i] = s * a[i]` — yardstick for unary ops.
    Scale,
    /// `s += a[i]` with many accumulators, read only — yardstick for reductions along the
    /// contiguous dim.
    Read,
    /// `acc[j] += a[r][j]` over the rows of a `[r, c]` array (vertical adds into a
    /// cache-resident row), read only — yardstick for reductions along the first dim.
    ReadRows,
    /// `d[i] = max(a[i] * b[i] + c[i], 0)` in one pass — yardstick for the fused
    /// `relu(a*b + c)` chain (three reads, one write).
    Triad,
    /// `s += (a[i] - b[i])²` with many accumulators, read only — yardstick for the fused
    /// `sum((a-b)²)` (reading `a` and `b` once).
    Read2,
}

impl Pattern {
    /// All patterns.
    pub const ALL: [Pattern; 8] = [
        Pattern::Copy,
        Pattern::Fill,
        Pattern::Add,
        Pattern::Scale,
        Pattern::Read,
        Pattern::ReadRows,
        Pattern::Triad,
        Pattern::Read2,
    ];

    /// Arrays touched per element (reads + writes).
    pub fn arrays(self) -> u64 {
        match self {
            Pattern::Fill | Pattern::Read | Pattern::ReadRows => 1,
            Pattern::Copy | Pattern::Scale | Pattern::Read2 => 2,
            Pattern::Add => 3,
            Pattern::Triad => 4,
        }
    }

    /// Bytes moved when each array holds `array_bytes` bytes.
    pub fn bytes_moved(self, array_bytes: u64) -> u64 {
        self.arrays() * array_bytes
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Copy => "copy",
            Pattern::Fill => "fill",
            Pattern::Add => "add",
            Pattern::Scale => "scale",
            Pattern::Read => "read",
            Pattern::ReadRows => "read_rows",
            Pattern::Triad => "triad_relu",
            Pattern::Read2 => "read2",
        }
    }
}

/// Plain stores or non-temporal (streaming, cache-bypassing) stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// Ordinary stores (write-allocate).
    Plain,
    /// Non-temporal stores.
    NonTemporal,
}

/// One STREAM figure: a pattern at one array size, best of plain and non-temporal stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamFigure {
    /// The access pattern.
    pub pattern: Pattern,
    /// Bytes per array.
    pub array_bytes: u64,
    /// GB/s with plain stores.
    pub plain_gbps: f64,
    /// GB/s with non-temporal stores, if the target has them.
    pub nt_gbps: Option<f64>,
}

impl StreamFigure {
    /// The better of the two store kinds: the limit a kernel with this pattern is held to.
    pub fn best_gbps(&self) -> f64 {
        self.nt_gbps.map_or(self.plain_gbps, |nt| nt.max(self.plain_gbps))
    }

    /// Which store kind gave [`best_gbps`](Self::best_gbps).
    pub fn best_store(&self) -> Store {
        match self.nt_gbps {
            Some(nt) if nt > self.plain_gbps => Store::NonTemporal,
            _ => Store::Plain,
        }
    }

    /// A short label such as `"stream add (nt)"`.
    pub fn label(&self) -> String {
        let s = match self.best_store() {
            Store::Plain => "plain",
            Store::NonTemporal => "nt",
        };
        format!("stream {} ({s})", self.pattern.name())
    }
}

/// The STREAM figures of one run, looked up by pattern and array size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamTable {
    /// The figures.
    pub figures: Vec<StreamFigure>,
}

impl StreamTable {
    /// Merges a second measurement of the same figures, keeping the better of each (the
    /// runners measure before and after the cases, so a noisy moment does not set the limit).
    pub fn best_of(mut self, other: &StreamTable) -> StreamTable {
        for f in &mut self.figures {
            if let Some(o) = other.figures.iter().find(|o| o.pattern == f.pattern && o.array_bytes == f.array_bytes) {
                f.plain_gbps = f.plain_gbps.max(o.plain_gbps);
                f.nt_gbps = match (f.nt_gbps, o.nt_gbps) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        self
    }

    /// The figure for `pattern` at exactly `array_bytes`, else the nearest measured size.
    pub fn get(&self, pattern: Pattern, array_bytes: u64) -> Option<&StreamFigure> {
        self.figures.iter().filter(|f| f.pattern == pattern).min_by_key(|f| f.array_bytes.abs_diff(array_bytes))
    }

    /// Measures every pattern in `patterns` at every size in `array_sizes` (bytes per array),
    /// sampling with `sampling(bytes_moved)`.
    pub fn measure(patterns: &[Pattern], array_sizes: &[u64], sampling: impl Fn(u64) -> Sampling) -> StreamTable {
        let max = array_sizes.iter().copied().max().unwrap_or(0);
        let mut arrays = StreamArrays::new(max);
        let mut figures = Vec::new();
        for &bytes in array_sizes {
            for &p in patterns {
                let cfg = sampling(p.bytes_moved(bytes));
                figures.push(arrays.measure(p, bytes, &cfg));
            }
        }
        StreamTable { figures }
    }
}

/// Σ of a slice with 16 independent accumulators (vector lanes): the read yardstick's
/// loop, also the probes' read reference.
///
/// ```
/// assert_eq!(tensor_benches::stream::sum_lanes(&[1.0; 40]), 40.0);
/// ```
pub fn sum_lanes(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        for k in 0..16 {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

/// Σ (x - y)² with 16 independent accumulators.
fn sq_diff_lanes(xs: &[f32], ys: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (mut cx, mut cy) = (xs.chunks_exact(16), ys.chunks_exact(16));
    for (x, y) in (&mut cx).zip(&mut cy) {
        for k in 0..16 {
            let d = x[k] - y[k];
            acc[k] += d * d;
        }
    }
    let tail: f32 = cx.remainder().iter().zip(cy.remainder()).map(|(x, y)| (x - y) * (x - y)).sum();
    acc.iter().sum::<f32>() + tail
}

/// Four pre-faulted `f32` arrays for the STREAM loops.
pub struct StreamArrays {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    d: Vec<f32>,
}

impl StreamArrays {
    /// Allocates and touches three arrays of `max_bytes` bytes each.
    pub fn new(max_bytes: u64) -> StreamArrays {
        let n = (max_bytes / 4) as usize;
        let a: Vec<f32> = (0..n).map(|i| (i % 1024) as f32).collect();
        let b = vec![1.0f32; n];
        let c = vec![2.0f32; n];
        let d = vec![0.5f32; n];
        StreamArrays { a, b, c, d }
    }

    /// Runs `pattern` once over the first `array_bytes` bytes of each array.
    pub fn run(&mut self, pattern: Pattern, store: Store, array_bytes: u64) {
        let n = ((array_bytes / 4) as usize).min(self.a.len());
        let nt = store == Store::NonTemporal;
        let a = &self.a[..n];
        match pattern {
            Pattern::Copy => {
                split_mut(
                    &mut self.b[..n],
                    |r, d| {
                        if nt {
                            crate::nt::copy(d, &a[r])
                        } else {
                            d.copy_from_slice(&a[r])
                        }
                    },
                )
            }
            Pattern::Fill => split_mut(&mut self.b[..n], |_, d| if nt { crate::nt::fill(d, 3.0) } else { d.fill(3.0) }),
            Pattern::Add => {
                let b = &self.b[..n];
                split_mut(&mut self.c[..n], |r, d| {
                    let (x, y) = (&a[r.clone()], &b[r]);
                    if nt {
                        crate::nt::add(d, x, y)
                    } else {
                        for ((d, x), y) in d.iter_mut().zip(x).zip(y) {
                            *d = x + y;
                        }
                    }
                })
            }
            Pattern::Scale => split_mut(&mut self.b[..n], |r, d| {
                if nt {
                    crate::nt::scale(d, &a[r], 3.0)
                } else {
                    for (d, x) in d.iter_mut().zip(&a[r]) {
                        *d = 3.0 * x;
                    }
                }
            }),
            // Each chunk's sum lands in its first output element (nothing else is written).
            Pattern::Read => split_mut(&mut self.b[..n], |r, d| d[0] = sum_lanes(&a[r])),
            Pattern::Triad => {
                let (b, c) = (&self.b[..n], &self.c[..n]);
                split_mut(&mut self.d[..n], |r, d| {
                    let (x, y, z) = (&a[r.clone()], &b[r.clone()], &c[r]);
                    if nt {
                        crate::nt::triad_relu(d, x, y, z)
                    } else {
                        for (((d, x), y), z) in d.iter_mut().zip(x).zip(y).zip(z) {
                            *d = (x * y + z).max(0.0);
                        }
                    }
                })
            }
            // Each chunk's sum lands in its first output element of `d` (read only otherwise).
            Pattern::Read2 => {
                let b = &self.b[..n];
                split_mut(&mut self.d[..n], |r, d| d[0] = sq_diff_lanes(&a[r.clone()], &b[r]))
            }
            Pattern::ReadRows => {
                let cols = crate::shapes::dims2(n)[1];
                let rows = n / cols;
                let grain = cols.div_ceil(crate::par::threads()).max(1);
                split_mut_grain(&mut self.b[..cols], grain, |r, acc| {
                    acc.fill(0.0);
                    for row in 0..rows {
                        let src = &a[row * cols + r.start..row * cols + r.end];
                        for (d, x) in acc.iter_mut().zip(src) {
                            *d += x;
                        }
                    }
                })
            }
        }
        std::hint::black_box(&mut self.b);
        std::hint::black_box(&mut self.c);
        std::hint::black_box(&mut self.d);
    }

    /// Measures `pattern` at `array_bytes` with both store kinds.
    pub fn measure(&mut self, pattern: Pattern, array_bytes: u64, cfg: &Sampling) -> StreamFigure {
        let moved = pattern.bytes_moved(array_bytes);
        let plain = measure_infallible(cfg, || self.run(pattern, Store::Plain, array_bytes)).gbps(moved);
        let reads_only = matches!(pattern, Pattern::Read | Pattern::ReadRows | Pattern::Read2);
        let nt = (crate::nt::AVAILABLE && !reads_only)
            .then(|| measure_infallible(cfg, || self.run(pattern, Store::NonTemporal, array_bytes)).gbps(moved));
        StreamFigure { pattern, array_bytes, plain_gbps: plain, nt_gbps: nt }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_moved_counts_each_array_once() {
        assert_eq!(Pattern::Copy.bytes_moved(100), 200);
        assert_eq!(Pattern::Fill.bytes_moved(100), 100);
        assert_eq!(Pattern::Add.bytes_moved(100), 300);
        assert_eq!(Pattern::Scale.bytes_moved(100), 200);
        assert_eq!(Pattern::Read.bytes_moved(100), 100);
        assert_eq!(Pattern::ReadRows.bytes_moved(100), 100);
        assert_eq!(Pattern::Triad.bytes_moved(100), 400);
        assert_eq!(Pattern::Read2.bytes_moved(100), 200);
    }

    #[test]
    fn loops_compute_stream_results() {
        let mut s = StreamArrays::new(4096);
        for store in [Store::Plain, Store::NonTemporal] {
            s.run(Pattern::Copy, store, 4096);
            assert_eq!(s.b, s.a);
            s.run(Pattern::Add, store, 4096);
            assert!(s.c.iter().zip(&s.a).all(|(c, a)| *c == 2.0 * a));
            s.run(Pattern::Scale, store, 4096);
            assert!(s.b.iter().zip(&s.a).all(|(b, a)| *b == 3.0 * a));
            s.run(Pattern::Fill, store, 4096);
            assert!(s.b.iter().all(|&b| b == 3.0));
            s.run(Pattern::Triad, store, 4096);
            let want: Vec<f32> = (0..1024).map(|i| (s.a[i] * s.b[i] + s.c[i]).max(0.0)).collect();
            assert_eq!(&s.d[..1024], &want[..]);
            s.run(Pattern::ReadRows, store, 4096);
            // 1024 elements as [32, 32]: column j sums a[r * 32 + j] over 32 rows.
            let want: Vec<f32> = (0..32).map(|j| (0..32).map(|r| s.a[r * 32 + j]).sum()).collect();
            assert_eq!(&s.b[..32], &want[..]);
        }
    }

    #[test]
    fn best_picks_the_faster_store() {
        let f = StreamFigure { pattern: Pattern::Fill, array_bytes: 1, plain_gbps: 10.0, nt_gbps: Some(20.0) };
        assert_eq!(f.best_gbps(), 20.0);
        assert_eq!(f.label(), "stream fill (nt)");
    }
}
