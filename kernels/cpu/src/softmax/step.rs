//! The steps the f32/f64 rows (`rows.rs`) and the f16/bf16 rows (`half.rs`) share: the e^x
//! pass's vector step and a finished row's output formula.

use crate::map::prefetch;
use crate::value::Value;

/// One output value (or vector) of a finished row.
#[inline(always)]
pub(super) fn finish<V: Value>(log: bool, src: V, m: V, c: V) -> V {
    if log {
        (src - m) - c
    } else {
        src * c
    }
}

/// Vector `k` of a row's e^x pass: e^(x − max) into the scratch row (softmax) and the sum.
/// `next` is the next input row (dense rows follow each other; for f16/bf16 rows, widened
/// into `x` first, the stored one): element `k · LANES` of it is asked for, so it streams in
/// while this row computes and its maximum pass reads from cache, not memory.
#[inline(always)]
pub(super) fn exp_step<V: Value, N>(
    x: &[V::Elem],
    tmp: &mut [V::Elem],
    k: usize,
    mv: V,
    vs: V,
    log: bool,
    next: *const N,
) -> V {
    let n = V::LANES;
    prefetch(next.wrapping_add(k * n));
    let e = (V::load(&x[k * n..(k + 1) * n]) - mv).exp_nonpositive();
    if !log {
        e.store(&mut tmp[k * n..(k + 1) * n]);
    }
    vs + e
}
