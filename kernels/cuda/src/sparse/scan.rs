//! Device-wide inclusive / exclusive scans of i64 (counts, segment numbers, a radix pass's
//! histograms): each tile of [`TILE`] elements scanned by one block, the tiles' totals
//! scanned the same way (recursively, exclusive), then added to their tiles.

use crate::plan::Step;

use super::exec::{args, step};
use crate::sparse_codegen::{SparseKernel, SCAN_ITEMS, SCAN_THREADS};

/// Elements per scan tile.
pub const TILE: usize = (SCAN_THREADS * SCAN_ITEMS) as usize;

/// Scratch bytes [`plan_scan`] needs for `n` elements.
///
/// ```
/// use tensor_kernels_cuda::sparse::scan::{scratch_bytes, TILE};
/// assert_eq!(scratch_bytes(TILE), 0);
/// assert_eq!(scratch_bytes(TILE + 1), 2 * 8 * 2);
/// ```
pub fn scratch_bytes(n: usize) -> usize {
    let tiles = n.div_ceil(TILE);
    if tiles <= 1 {
        0
    } else {
        16 * tiles + scratch_bytes(tiles)
    }
}

/// Appends the launches writing the inclusive (or `exclusive`) prefix sums of the `n` i64s
/// at `input` to `out` (which may be `input`), with [`scratch_bytes`]`(n)` bytes of scratch
/// at `scratch`.
///
/// ```
/// use tensor_kernels_cuda::sparse::scan::{plan_scan, TILE};
/// let mut steps = Vec::new();
/// plan_scan(0x1000, 0x1000, 3 * TILE, false, 0x9000, &mut steps);
/// assert_eq!(steps.len(), 3); // tiles, the tiles' totals, the add
/// ```
pub fn plan_scan(out: u64, input: u64, n: usize, exclusive: bool, scratch: u64, steps: &mut Vec<Step>) {
    if n == 0 {
        return;
    }
    let tiles = n.div_ceil(TILE);
    let mode = [exclusive as i64];
    if tiles == 1 {
        steps.push(step(SparseKernel::ScanTiles, 1, SCAN_THREADS, args(&[out, input, 0], n, &mode)));
        return;
    }
    let (sums, offs, rest) = (scratch, scratch + 8 * tiles as u64, scratch + 16 * tiles as u64);
    steps.push(step(SparseKernel::ScanTiles, tiles, SCAN_THREADS, args(&[out, input, sums], n, &mode)));
    plan_scan(offs, sums, tiles, true, rest, steps);
    steps.push(step(SparseKernel::ScanAdd, tiles, SCAN_THREADS, args(&[out, offs], n, &[])));
}
