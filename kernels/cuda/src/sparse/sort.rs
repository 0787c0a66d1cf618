//! `sparse_coo_sort` on the device: a stable LSD radix sort of the permutation of COO index
//! columns. The keys are never linearised (no overflow whatever the sizes): one group of
//! passes per sparse dim, from the last dim to the first, each pass ordering by 4 bits of
//! `index - min` of that dim, as many passes as the dim's range (`max - min`, read back
//! once from per-block partials) has bits. A pass is a per-tile digit histogram, an
//! exclusive scan of the histograms (digit-major, so each tile knows where its entries of
//! each digit go), and a stable scatter. Stability across passes makes the final order
//! row-major with equal columns in entry order, as the CPU's stable sort.

use tensor_core::Result;

use crate::plan::Step;

use super::exec::{args, download_i64s, step, Exec};
use super::scan;
use crate::sparse_codegen::{SparseKernel, MINMAX_THREADS, RADIX_BITS, RADIX_ITEMS, RADIX_THREADS};

/// Entries per radix tile.
const TILE: usize = (RADIX_THREADS * RADIX_ITEMS) as usize;
/// Buckets of one digit.
const RADIX: usize = 1 << RADIX_BITS;
/// Most blocks of the min/max partials (each finished on the host).
const MINMAX_BLOCKS: usize = 256;

/// Each dim's (min, max) over the `nnz` columns of `idx` (`[sd, nnz]`, nnz > 0).
///
/// # Safety
/// `idx` is memory of `e` holding `sd * nnz` i64s.
unsafe fn ranges(e: &impl Exec, idx: u64, sd: usize, nnz: usize) -> Result<Vec<(i64, i64)>> {
    let blocks = nnz.div_ceil(MINMAX_THREADS as usize).clamp(1, MINMAX_BLOCKS.min(e.max_blocks().max(1) as usize));
    let partial = e.scratch(16 * sd * blocks)?;
    let steps = [step(SparseKernel::MinMax, blocks, MINMAX_THREADS, args(&[partial.addr, idx], nnz, &[sd as i64]))];
    // SAFETY: `idx` holds `[sd, nnz]` (the caller's contract); `partial` holds the
    // `2 * sd * blocks` i64s the kernel writes.
    let p = unsafe {
        e.run(&steps)?;
        download_i64s(e, partial.addr, 2 * sd * blocks)?
    };
    Ok((0..sd)
        .map(|d| {
            let mine = &p[2 * d * blocks..2 * (d + 1) * blocks];
            let lo = mine.iter().step_by(2).copied().min().unwrap_or(0);
            let hi = mine.iter().skip(1).step_by(2).copied().max().unwrap_or(0);
            (lo, hi)
        })
        .collect())
}

/// Writes to `out` (`nnz` i64s) the stable row-major order of the index columns of `idx`
/// (`[sd, nnz]`).
///
/// # Safety
/// `idx` and `out` are memory of `e` holding `sd * nnz` and `nnz` i64s, not overlapping.
pub(super) unsafe fn sort_columns(e: &impl Exec, idx: u64, sd: usize, nnz: usize, out: u64) -> Result<()> {
    if nnz == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let ranges = unsafe { ranges(e, idx, sd, nnz)? };
    // (dim, min, shift) of each pass: the last dim first, its low digits first.
    let mut passes = Vec::new();
    for d in (0..sd).rev() {
        let (lo, hi) = ranges[d];
        let bits = 64 - (hi as u64).wrapping_sub(lo as u64).leading_zeros();
        passes.extend((0..bits).step_by(RADIX_BITS as usize).map(|shift| (d, lo, shift)));
    }
    let tiles = nnz.div_ceil(TILE);
    let other = e.scratch(8 * nnz)?;
    let hist = e.scratch(8 * RADIX * tiles)?;
    let offs = e.scratch(8 * RADIX * tiles)?;
    let scan_scratch = e.scratch(scan::scratch_bytes(RADIX * tiles))?;
    // Pass k writes buffer k + 1 of out/other alternately, so that the last one is `out`.
    let buffer = |k: usize| if (passes.len() - k).is_multiple_of(2) { out } else { other.addr };
    let mut steps: Vec<Step> = super::exec::strided(e, SparseKernel::Iota, args(&[buffer(0)], nnz, &[]));
    for (k, &(d, lo, shift)) in passes.iter().enumerate() {
        let (from, to) = (buffer(k), buffer(k + 1));
        let key = idx + 8 * (d * nnz) as u64;
        let p = [lo, shift as i64, tiles as i64];
        steps.push(step(SparseKernel::RadixHist, tiles, RADIX_THREADS, args(&[hist.addr, key, from], nnz, &p)));
        scan::plan_scan(offs.addr, hist.addr, RADIX * tiles, true, scan_scratch.addr, &mut steps);
        steps.push(step(SparseKernel::RadixScatter, tiles, RADIX_THREADS, args(&[to, key, from, offs.addr], nnz, &p)));
    }
    // SAFETY: the caller's contract for `idx` and `out`; every scratch block holds what its
    // kernels address (`nnz` entries, `RADIX * tiles` histogram slots, the scan's scratch)
    // and lives until the steps are queued (later work only reuses it after them).
    unsafe { e.run(&steps) }
}
