//! Random calls whose answers must equal another way to the same answer: an op on strided
//! views against the op on contiguous copies, `_out` and in-place forms written through
//! views against the new result, reductions of views against reductions of copies, casts,
//! copies and fills through views, fused chains against the eager chain (bit for bit),
//! sparse (COO, CSR) results against the dense op, and quantized ops against dequantize →
//! f32 op → quantize. Dtypes: every plain one and the quantized ones; shapes of rank 0 to
//! 4, some large enough for the SIMD, tiled and parallel paths; values with ties, zeros,
//! NaN, ±∞ and out-of-range numbers.
//!
//! ```sh
//! cargo run --release -p tensor-tests --example value_fuzz -- [calls] [seed]
//! ```
//! Prints every disagreement (check, op, dtypes, shapes, strides, the first differing
//! element) and every panic, and exits 1 if there was one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use tensor_ops::prelude::*;

mod compare;
mod data;
mod dense;
mod layouts;
mod ops;
#[path = "../fuzz/rng.rs"]
mod rng;

use dense::{casts_copies_fills, fused_against_eager, maps_on_views, outs_through_views, reductions_of_views};
use layouts::{quantized_against_f32, quantized_copies_and_fills, safetensors_round_trip, sparse_against_dense};
use rng::Rng;

/// What a check found wrong.
type Verdict = std::result::Result<(), String>;
/// A check: `Err` when its inputs could not be made, else its verdict.
type Check = fn(&mut Rng) -> Result<Verdict>;

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x5EED);
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        println!("panic: {}{at}", info.payload_as_str().unwrap_or("(non-string panic)"));
    }));
    let checks: [(&str, Check); 9] = [
        ("maps on views", maps_on_views),
        ("outs through views", outs_through_views),
        ("reductions of views", reductions_of_views),
        ("casts, copies, fills", casts_copies_fills),
        ("fused against eager", fused_against_eager),
        ("sparse against dense", sparse_against_dense),
        ("quantized against f32", quantized_against_f32),
        ("quantized copies and fills", quantized_copies_and_fills),
        ("safetensors round trip", safetensors_round_trip),
    ];
    let mut rng = Rng(seed.wrapping_mul(1 << 32) ^ 0xA5A5);
    let mut ran = [0usize; 9];
    let mut failures = std::collections::BTreeMap::<String, (usize, String)>::new();
    for _ in 0..calls {
        let k = rng.below(checks.len());
        let (name, check) = checks[k];
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&mut rng)));
        let problem = match outcome {
            Ok(Ok(verdict)) => {
                ran[k] += 1;
                verdict.err()
            }
            Ok(Err(_)) => None, // an input not made (a view the shape does not allow)
            Err(_) => Some(format!("{name}: panicked (message above)")),
        };
        if let Some(p) = problem {
            let key = format!("{name}: {}", p.split(':').next().unwrap_or("").split('(').next().unwrap_or(""));
            failures.entry(key).or_insert((0, p)).0 += 1;
        }
    }
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("value_fuzz_{}", std::process::id())));
    for (key, (n, first)) in &failures {
        println!("{n} × {key}\n    first: {first}");
    }
    let summary: Vec<String> = checks.iter().zip(ran).map(|((n, _), r)| format!("{n} {r}")).collect();
    println!("{} checks ({}), {} kinds of disagreement", calls, summary.join(", "), failures.len());
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
