//! argmax / argmin: a (value, index) accumulator; along rows, the extreme and its first
//! position found by one vector scan (a bit-mask search after it for NaNs and flipped
//! runs); along a strided dim, a value-and-position pair of arrays per column.

use super::super::compute::{convert_block, max_and_nan, min_and_nan, prefetch_next_block, Compute, BLOCK};
use super::{half_page_apart, ArgMax, ArgMin};
use crate::reduce::{prefetch_rows_share, row_segments, Reducer, ROW_SEGMENT};
use std::marker::PhantomData;
use tensor_core::{Element, Scalar};

/// The position of the first (or, `reverse`, the last) element of `b` equal to `m` (or NaN
/// when `nan`).
#[inline(always)]
fn first_hit<C: Compute>(b: &[C], m: C, nan: bool, reverse: bool) -> Option<usize> {
    // The test is chosen once, outside the scan (inside, it kept the chunk test scalar).
    if nan {
        position_of(b, |x: C| x.is_nan(), reverse)
    } else {
        position_of(b, |x: C| x == m, reverse)
    }
}

/// The first (or last) position where `hit` holds: each whole 64-element chunk as a bit
/// mask (a few vector compares), the hit taken from its trailing (or leading) zeros — the
/// element-by-element search of the hit chunk it replaced cost argmax over cache-resident
/// rows a fifth of its speed (66 → 84 GB/s over [1024, 1024] f32); a shorter last chunk is
/// tested, then searched.
#[inline(always)]
fn position_of<C: Copy>(b: &[C], hit: impl Fn(C) -> bool, reverse: bool) -> Option<usize> {
    const CHUNK: usize = 64;
    let n_chunks = b.len().div_ceil(CHUNK);
    for i in 0..n_chunks {
        let k = if reverse { n_chunks - 1 - i } else { i };
        let c = &b[k * CHUNK..((k + 1) * CHUNK).min(b.len())];
        if let Ok(full) = <&[C; CHUNK]>::try_from(c) {
            // A whole chunk: one bit per element, the hit found from the mask.
            let mut mask = 0u64;
            for (j, &x) in full.iter().enumerate() {
                mask |= u64::from(hit(x)) << j;
            }
            if mask != 0 {
                let p = if reverse { 63 - mask.leading_zeros() as usize } else { mask.trailing_zeros() as usize };
                return Some(k * CHUNK + p);
            }
        } else if c.iter().fold(false, |acc, &x| acc | hit(x)) {
            let p = if reverse { c.iter().rposition(|&x| hit(x)) } else { c.iter().position(|&x| hit(x)) };
            return p.map(|p| k * CHUNK + p);
        }
    }
    None
}

/// Lanes of [`extreme_and_position`].
const SCAN_LANES: usize = 16;

/// The extreme of `b` by a strict `better` and the position of its first occurrence, in one
/// pass: each of 16 lanes keeps its best value and the 16-element chunk where it first saw
/// it (a strict `better` keeps a lane's earliest), then the lanes are merged by value and,
/// on a tie, by position. `init` is the lanes' start (the value nothing is better than:
/// `LOWEST` for argmax). `None` when `b` is empty or holds a NaN (the caller then looks for
/// the first NaN).
///
/// It replaced a scan for the extreme followed by a scan for its first position, which read
/// every leaf twice (a leaf starts with nothing held, so its position was always searched)
/// and issued no prefetches while searching: argmax over the rows of [8192, 8192] uniform
/// random f32, 2 threads, AMD Zen 3, five alternated runs of `REDUCE_PROBE_RANDOM=1
/// reduce_probe`: 0.81–0.98 → 0.98–1.14 of the same run's amax.
#[inline(always)]
fn extreme_and_position<C: Compute>(b: &[C], init: C, better: impl Fn(C, C) -> bool) -> Option<(C, usize)> {
    let (full, rest) = b.as_chunks::<SCAN_LANES>();
    let mut m = [init; SCAN_LANES];
    let mut at = [0u32; SCAN_LANES];
    // NaN flags as all-ones masks, the compare's own width (a `bool` per lane cost four
    // packing instructions per two vectors).
    let mut nan = [0u32; SCAN_LANES];
    for (i, c) in full.iter().enumerate() {
        prefetch_next_block(b, SCAN_LANES * i);
        // `i` < BLOCK / 16: a block's chunk count fits a u32.
        let i = i as u32;
        for k in 0..SCAN_LANES {
            let take = better(c[k], m[k]);
            m[k] = if take { c[k] } else { m[k] };
            at[k] = if take { i } else { at[k] };
            nan[k] |= u32::from(c[k].is_nan()).wrapping_neg();
        }
    }
    // Through `black_box`: the lanes' merge out of sight, LLVM keeps the loop above one
    // vector per step (as in `max_and_nan`).
    let (m, at, nan) = std::hint::black_box((m, at, nan));
    if nan.iter().any(|&x| x != 0) || rest.iter().any(|x| x.is_nan()) {
        return None;
    }
    // Merged as accumulators are ([`pick`]: the better value, on a tie the smaller
    // position); a lane holds elements only when there is a whole chunk. The rest lies
    // after every lane's elements.
    let lanes =
        (0..if full.is_empty() { 0 } else { SCAN_LANES }).map(|k| (m[k], (at[k] as usize * SCAN_LANES + k) as i64));
    let tail = rest.iter().enumerate().map(|(j, &x)| (x, (full.len() * SCAN_LANES + j) as i64));
    let best = lanes.chain(tail).fold((init, NONE), |a, b| pick(a, b, &better));
    (best.1 != NONE).then_some((best.0, best.1 as usize))
}

/// The NONE index of an argmax/argmin accumulator that has seen nothing.
const NONE: i64 = i64::MAX;

/// Picks the winner of two (value, index) candidates: a NaN beats a number, `better` decides
/// between numbers, ties (and two NaNs) go to the smaller index.
#[inline(always)]
fn pick<C: Compute>(a: (C, i64), b: (C, i64), better: impl Fn(C, C) -> bool) -> (C, i64) {
    if a.1 == NONE {
        return b;
    }
    if b.1 == NONE {
        return a;
    }
    let (an, bn) = (a.0.is_nan(), b.0.is_nan());
    let b_wins = if an || bn {
        if an && bn {
            b.1 < a.1
        } else {
            bn
        }
    } else if better(b.0, a.0) {
        true
    } else if better(a.0, b.0) {
        false
    } else {
        b.1 < a.1
    };
    if b_wins {
        b
    } else {
        a
    }
}

/// `x > y`, or either is NaN (one unordered compare).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the unordered case is the point
#[inline(always)]
fn gt_or_unordered<C: PartialOrd>(x: C, y: C) -> bool {
    !(x <= y)
}

/// `x < y`, or either is NaN (one unordered compare).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the unordered case is the point
#[inline(always)]
fn lt_or_unordered<C: PartialOrd>(x: C, y: C) -> bool {
    !(x >= y)
}

/// The argmax/argmin column fold over at most 256 rows in increasing index order: the best
/// value and the winning row's position (a `u8`) per column as two plain arrays, a row
/// replacing them where it is better (a NaN beats a number; ties keep the earlier row).
#[inline(always)]
fn arg_fold_rows<I: Element, C: Compute>(
    accs: &mut [(C, i64)],
    first: &[I],
    rows: &[&[I]],
    indices: &[i64],
    better_or_nan: impl Fn(C, C) -> bool,
) {
    let mut best: Vec<C> = first.iter().map(|&x| x.cast()).collect();
    let mut at_buf = Vec::new();
    let at = half_page_apart(&mut at_buf, best.len(), 0u8, best.as_ptr().cast());
    let w = best.len();
    let step = |b: C, i: u8, x: C, k: u8| {
        // `better(x, b) | (x NaN & b not NaN)`, as one unordered compare and one ordered
        // (three vector instructions where the two-sided form took five).
        let take = better_or_nan(x, b) & !b.is_nan();
        (if take { x } else { b }, if take { k } else { i })
    };
    let next = |k: usize| rows.get(k).copied().unwrap_or_default();
    // Two rows per sweep: the tile's values and positions (40 KiB) are loaded and stored
    // once for both (four rows per sweep measured slower).
    let segments = w.div_ceil(ROW_SEGMENT);
    let mut r = 1;
    while r + 1 < rows.len() {
        let (row0, row1) = (rows[r], rows[r + 1]);
        let (k0, k1) = (r as u8, (r + 1) as u8); // r + 1 < 256: the caller's bound
                                                 // The next two rows, asked for one after the other over this sweep (the same
                                                 // segment of each, the form var keeps, read 48–49 against 52–53 GB/s).
        let upcoming = [next(r + 2), next(r + 3)];
        for s in (0..w).step_by(ROW_SEGMENT) {
            let e = (s + ROW_SEGMENT).min(w);
            prefetch_rows_share(&upcoming, s / ROW_SEGMENT, segments);
            let xs = row0[s..e].iter().zip(row1[s..e].iter());
            for ((b, i), (&x0, &x1)) in best[s..e].iter_mut().zip(at[s..e].iter_mut()).zip(xs) {
                let (b0, i0) = step(*b, *i, x0.cast(), k0);
                (*b, *i) = step(b0, i0, x1.cast(), k1);
            }
        }
        r += 2;
    }
    // At most one row is left.
    for (r, row) in rows.iter().enumerate().skip(r) {
        let k = r as u8;
        row_segments(rows, r, w, |s, e| {
            for ((b, i), &x) in best[s..e].iter_mut().zip(at[s..e].iter_mut()).zip(row[s..e].iter()) {
                (*b, *i) = step(*b, *i, x.cast(), k);
            }
        });
    }
    for ((a, &b), &i) in accs.iter_mut().zip(&best).zip(at.iter()) {
        *a = (b, indices[usize::from(i)]);
    }
}

macro_rules! arg_reducer {
    ($name:ident, $scan:path, $init:expr, $better:expr, $better_or_nan:expr) => {
        impl<I: Element, C: Compute> Reducer for $name<I, C> {
            type In = I;
            type Acc = (C, i64);
            type Out = i64;
            /// As many rows as a `u8` position tells apart: fewer 16-byte accumulator
            /// rows written and merged by the scalar [`pick`].
            const COLUMN_LEAF_ROWS: usize = 256;
            no_params!();
            #[inline(always)]
            fn identity(&self) -> (C, i64) {
                (C::ZERO, NONE)
            }
            #[inline(always)]
            fn fold(&self, acc: (C, i64), x: I, index: i64) -> (C, i64) {
                pick(acc, (x.cast(), index), $better)
            }
            #[inline(always)]
            fn combine(&self, a: (C, i64), b: (C, i64)) -> (C, i64) {
                pick(a, b, $better)
            }
            #[inline(always)]
            fn finish(&self, acc: (C, i64), _: usize) -> i64 {
                acc.1
            }
            /// Columns whose rows come in increasing index order, at most 256 of them (the
            /// walk's leaves have 64): [`arg_fold_rows`], whose `u8` positions keep the
            /// values and positions of an 8192-column tile in L1 (40 KiB, where u32 took
            /// 64: argmax over dim 0 of [8192, 8192] f32 on AMD Zen 5, 27 → 31 GB/s).
            /// Otherwise element by element.
            #[inline(always)]
            fn fold_rows(&self, accs: &mut [(C, i64)], rows: &[&[I]], indices: &[i64]) {
                let fits = rows.len() <= 256 && indices.windows(2).all(|p| p[0] < p[1]);
                let (Some(first), true) = (rows.first(), fits) else {
                    for (row, &index) in rows.iter().zip(indices) {
                        for (a, &x) in accs.iter_mut().zip(row.iter()) {
                            *a = self.fold(*a, x, index);
                        }
                    }
                    return;
                };
                arg_fold_rows::<I, C>(accs, first, rows, indices, $better_or_nan);
            }
            /// Per block, walking forwards: the extreme and its first position in one
            /// vector pass ([`extreme_and_position`]). A block holding a NaN, or a run
            /// walking backwards (a flipped dim, where ties go to the later element in
            /// memory), takes two: the extreme by 16 lanes, then the first (or last)
            /// position holding it, or the first NaN.
            #[inline(always)]
            fn fold_run(&self, xs: &[I], index: i64, step: i64) -> (C, i64) {
                let mut buf = [C::ZERO; BLOCK];
                let mut acc = self.identity();
                let mut base = index;
                for chunk in xs.chunks(BLOCK) {
                    let b = convert_block(chunk, &mut buf);
                    // Walking forwards without a NaN (the common case): one pass.
                    if step >= 0 {
                        if let Some((m, pos)) = extreme_and_position(b, $init, $better) {
                            acc = pick(acc, (m, base.wrapping_add((pos as i64).wrapping_mul(step))), $better);
                            base = base.wrapping_add((b.len() as i64).wrapping_mul(step));
                            continue;
                        }
                    }
                    let (m, nan) = $scan(b);
                    // Walking forwards, every index here exceeds the accumulator's, so the
                    // block can only win with a NaN (when none is held yet) or a strictly
                    // better value: otherwise skip the position scan (most blocks of a long
                    // run). Backwards (a flipped dim), ties may win: always scan.
                    let better = $better;
                    let held = acc.1 != NONE;
                    let may_win =
                        step < 0 || !held || if nan { !acc.0.is_nan() } else { !acc.0.is_nan() && better(m, acc.0) };
                    if !may_win {
                        base = base.wrapping_add((b.len() as i64).wrapping_mul(step));
                        continue;
                    }
                    // The smallest logical index: the first hit, or the last when the run
                    // walks indices backwards (a flipped dim).
                    let pos = first_hit(b, m, nan, step < 0);
                    if let Some(pos) = pos {
                        acc = pick(acc, (b[pos], base.wrapping_add((pos as i64).wrapping_mul(step))), $better);
                    }
                    base = base.wrapping_add((b.len() as i64).wrapping_mul(step));
                }
                acc
            }
        }
    };
}
arg_reducer!(ArgMax, max_and_nan::<C, true>, C::LOWEST, |x: C, y: C| x > y, gt_or_unordered::<C>);
arg_reducer!(ArgMin, min_and_nan::<C, true>, C::HIGHEST, |x: C, y: C| x < y, lt_or_unordered::<C>);
