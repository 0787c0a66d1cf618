//! Per-segment steps beyond the sum: the greatest or least value of each segment with the
//! implicit zeros (`sparse_segment_extreme`, behind `amax`/`amin` of a sparse tensor), and
//! softmax within each segment with unspecified entries as −∞ (`sparse_segment_softmax`).
//! Segments are `coalesce`'s (a sorted permutation and the segment of each sorted entry);
//! both run in parallel over segments.

use super::coo::{check_perm, check_segments, GRAIN};
use super::{elems, elems_mut, input, output, Shared};
use crate::parallel::for_each_chunk;
use std::ops::Range;
use tensor_core::registry::PreparedCall;
use tensor_core::{Element, Error, Result};

/// `a` or `b`, whichever is greater (`max`) or less; NaN propagates (the first NaN met).
fn pick<T: Element>(a: T, b: T, max: bool) -> T {
    #[allow(clippy::eq_op)] // `x != x`: NaN, for every dtype (false for integers and bool)
    let (a_nan, b_nan) = (a != a, b != b);
    if a_nan || (!b_nan && !(if max { b > a } else { b < a })) {
        a
    } else {
        b
    }
}

/// The sorted positions of each segment in `segs`, found by binary search in `seg`.
fn span(seg: &[i64], segs: Range<usize>) -> Range<usize> {
    seg.partition_point(|&s| (s as usize) < segs.start)..seg.partition_point(|&s| (s as usize) < segs.end)
}

/// `sparse_segment_extreme`: each segment's max (`kind` 0) or min (`kind` 1) over its
/// entries, and over one zero when it has fewer than `group` entries.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn extreme<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (val, per, sg, out) = (input(call, 0)?, input(call, 1)?, input(call, 2)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (values, perm, seg, res) =
        unsafe { (elems::<T>(op, val)?, elems::<i64>(op, per)?, elems::<i64>(op, sg)?, elems_mut::<T>(op, out)?) };
    let (nnz, n) = (val.shape[0], out.shape[0]);
    let row: usize = val.shape[1..].iter().product();
    check_perm(op, perm, nnz)?;
    check_segments(op, seg, n)?;
    let max = call.params.first().is_none_or(|p| p.to::<i64>() == 0);
    let group = call.params.get(1).map_or(0, |p| p.to::<i64>());
    let base = Shared(res.as_mut_ptr());
    for_each_chunk(n, GRAIN.div_ceil(row.max(1)), |segs| {
        let sorted = span(seg, segs);
        let mut j = sorted.start;
        while j < sorted.end {
            let k = seg[j] as usize;
            let end = j + seg[j..sorted.end].partition_point(|&s| s as usize == k);
            // SAFETY: segment `k` is in this chunk's segments (inside `0..n`: checked), so
            // its row is inside the output and written by this worker only.
            let dst = unsafe { std::slice::from_raw_parts_mut(base.at(k * row), row) };
            let first = perm[j] as usize;
            dst.copy_from_slice(&values[first * row..(first + 1) * row]);
            for &src in &perm[j + 1..end] {
                let src = src as usize;
                for (o, &v) in dst.iter_mut().zip(&values[src * row..(src + 1) * row]) {
                    *o = pick(*o, v, max);
                }
            }
            if ((end - j) as i64) < group {
                for o in dst.iter_mut() {
                    *o = pick(*o, T::default(), max);
                }
            }
            j = end;
        }
    });
    Ok(())
}

/// `sparse_segment_softmax`: softmax (or log_softmax) of each segment's entries, column by
/// column of the inner dims, in f64; written in the entries' own order.
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn softmax<T: Element>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    if !T::DTYPE.is_float() {
        return Err(Error::invalid(op, format!("needs float values, got {}", T::DTYPE)));
    }
    let (val, per, sg, out) = (input(call, 0)?, input(call, 1)?, input(call, 2)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (values, perm, seg, res) =
        unsafe { (elems::<T>(op, val)?, elems::<i64>(op, per)?, elems::<i64>(op, sg)?, elems_mut::<T>(op, out)?) };
    let nnz = val.shape[0];
    if out.shape != val.shape {
        return Err(Error::shape(op, format!("values {:?} and output {:?} differ", val.shape, out.shape)));
    }
    let row: usize = val.shape[1..].iter().product();
    let n = seg.last().map_or(0, |&s| s as usize + 1);
    check_perm(op, perm, nnz)?;
    check_segments(op, seg, n)?;
    // Each entry is written once, by its segment's worker: the permutation must be one.
    let mut seen = vec![false; nnz];
    if perm.iter().any(|&p| std::mem::replace(&mut seen[p as usize], true)) {
        return Err(Error::invalid(op, "the permutation repeats an entry"));
    }
    let log = call.params.first().is_some_and(|p| p.to::<bool>());
    let base = Shared(res.as_mut_ptr());
    for_each_chunk(n, GRAIN.div_ceil(row.max(1)), |segs| {
        let sorted = span(seg, segs);
        let mut j = sorted.start;
        while j < sorted.end {
            let k = seg[j];
            let end = j + seg[j..sorted.end].partition_point(|&s| s == k);
            let entries = &perm[j..end];
            for c in 0..row {
                let at = |src: i64| values[src as usize * row + c].cast::<f64>();
                let hi =
                    entries
                        .iter()
                        .map(|&s| at(s))
                        .fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m });
                let hi = if entries.iter().any(|&s| at(s).is_nan()) { f64::NAN } else { hi };
                let total: f64 = entries.iter().map(|&s| (at(s) - hi).exp()).sum();
                for &s in entries {
                    let shifted = at(s) - hi;
                    let r = if log { shifted - total.ln() } else { shifted.exp() / total };
                    // SAFETY: entry `s < nnz` appears once in the permutation (checked), in
                    // this segment, which this worker owns: no other worker writes it.
                    unsafe { *base.at(s as usize * row + c) = r.cast::<T>() };
                }
            }
            j = end;
        }
    });
    Ok(())
}
