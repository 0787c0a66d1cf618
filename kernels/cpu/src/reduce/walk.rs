//! The strided reduction driver: rows (innermost dim reduced) or columns (innermost dim
//! kept), fixed leaves combined in a fixed binary tree, threads over outputs or subtrees.

use super::{InputSource, Reducer};
use crate::map::{simd_level, SimdLevel};
use crate::simd_level::level_copies;
use smallvec::SmallVec;
use std::mem::MaybeUninit;
use std::sync::Mutex;
use tensor_core::registry::RawTensor;

/// Elements per leaf of a row reduction (each folded by [`Reducer::fold_run`]; the built-in
/// folds also prefetch one leaf ahead). Measured faster than 1024 with `reduce_probe` over
/// the last dim, the first dim and softmax unchanged (`docs/performance-log.md`, “From the
/// code comments”).
pub const ROW_LEAF: usize = 4096;
/// Reduced positions (rows) per leaf of a column reduction, by default (a reducer may ask
/// for more, up to [`COLUMN_LEAF_MAX`]: [`Reducer::COLUMN_LEAF_ROWS`]).
pub const COLUMN_LEAF: usize = 64;
/// The most rows a column leaf may have (the walk keeps a leaf's row slices on the stack).
pub const COLUMN_LEAF_MAX: usize = 256;
/// Bytes of the accumulator row a column tile keeps in cache (in L2). Not smaller: with
/// 16-byte accumulators (var, argmax) a 16 KiB row made each input row a 4 KiB piece, a new
/// page for the hardware prefetcher every time (measured var over dim 0 of [8192, 8192]
/// f32 0.25 → 0.45 of the read speed, argmax 0.3 → 0.6; sums and maxima unchanged).
const TILE_BYTES: usize = 64 * 1024;
/// Columns a column tile spans at least, whatever its accumulator's size: rows of 8192
/// kept f32 elements are read whole, one run of memory after the other, where 16-byte
/// accumulators (var, argmax) would cut them into 4096-element pieces (measured faster
/// over dim 0: `docs/performance-log.md`, “From the code comments”).
const TILE_MIN_COLUMNS: usize = 8192;
/// Elements below which a subtree is not split across threads.
const PARALLEL_MIN: usize = 64 * 1024;
/// Subtree tasks per thread of one parallel tree (a few, so a thread that finishes early
/// takes another; not more: each task starts its own accumulator rows).
const TASKS_PER_THREAD: usize = 4;

/// One plan dim: size, input stride, output stride (0 when reduced), index step.
#[derive(Debug, Clone, Copy)]
struct Dim {
    size: usize,
    input: isize,
    output: isize,
    index: isize,
}

type Dims = SmallVec<[Dim; 8]>;

/// Offsets (input, output, index) of the `p`-th position (row-major) of `dims`.
#[inline]
fn offsets(dims: &[Dim], mut p: usize) -> (isize, isize, i64) {
    let (mut i, mut o, mut x) = (0isize, 0isize, 0i64);
    for d in dims.iter().rev() {
        let c = p % d.size;
        p /= d.size;
        i += c as isize * d.input;
        o += c as isize * d.output;
        x += c as i64 * d.index as i64;
    }
    (i, o, x)
}

/// A raw pointer shared by the threads of one call (each writes disjoint outputs).
#[derive(Clone, Copy)]
struct Ptr<T>(*mut T);
// SAFETY: the driver only reads through input pointers and writes each output element
// from exactly one thread; the storages are locked for the whole call.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}

/// What one call walks.
struct Walk<'r, R: Reducer> {
    r: &'r R,
    input: Ptr<R::In>,
    /// Computes the input instead of reading `input` (a fused chain).
    source: Option<&'r dyn InputSource>,
    output: Ptr<R::Out>,
    /// Kept dims, outer to inner (output stride ≠ 0).
    kept: Dims,
    /// Reduced dims, outer to inner.
    red: Dims,
    /// Reduced extent.
    n: usize,
}

/// Walks the plan of `out` ← `input`.
///
/// # Safety
/// The [`tensor_core::registry::PreparedCall`] contract for these operands; their dtypes
/// are `R::In` and `R::Out`.
pub(super) unsafe fn walk<R: Reducer>(
    r: &R,
    out: &RawTensor<'_>,
    input: &RawTensor<'_>,
    index: &[isize],
    source: Option<&dyn InputSource>,
) {
    let dims: Dims = (0..out.shape.len())
        .map(|d| Dim {
            size: out.shape[d],
            input: input.strides[d],
            output: out.strides[d],
            index: index.get(d).copied().unwrap_or(0),
        })
        .collect();
    let inner_reduced = dims.last().is_none_or(|d| d.output == 0);
    let kept: Dims = dims.iter().copied().filter(|d| d.output != 0).collect();
    let red: Dims = dims.iter().copied().filter(|d| d.output == 0).collect();
    let n: usize = red.iter().map(|d| d.size).product();
    let w = Walk { r, input: Ptr(input.ptr.cast()), source, output: Ptr(out.ptr.cast()), kept, red, n };
    if w.kept.iter().any(|d| d.size == 0) {
        return;
    }
    // SAFETY: forwarded; every offset below is of a position inside the plan.
    unsafe {
        if n == 0 {
            w.write_empty();
        } else if inner_reduced || w.kept.is_empty() {
            w.rows();
        } else {
            w.columns();
        }
    }
}

fn threads() -> usize {
    rayon::current_num_threads().max(1)
}

/// A buffer on a cache-line boundary: a row leaf of a computed (fused) input is written into
/// it and read back, and no vector store or load of it then straddles two lines.
#[repr(C, align(64))]
struct LineAligned<T>(T);

/// The split point of a tree over `lo..hi` (len ≥ 2): the largest power of two below len.
#[inline]
fn split(lo: usize, hi: usize) -> usize {
    let len = hi - lo;
    lo + (1usize << (usize::BITS - 1 - (len - 1).leading_zeros()))
}

/// The tree over leaves `lo..hi` of `leaf` elements each (split by [`split`], combined by
/// `combine`), its subtrees computed in parallel: the tree is split from the top while a
/// subtree holds two grains or more — a grain being [`PARALLEL_MIN`] elements, or an even
/// share of [`TASKS_PER_THREAD`] tasks per thread when that is more — and each subtree
/// below the splits is a task (`task(lo, hi)`, which computes its subtree alone, reusing
/// its buffers leaf to leaf) run by [`crate::parallel::for_each_index`]. The tasks' results
/// are then combined in the tree's own order, so the result is the one sequential tree's,
/// bit for bit, whatever the threads.
///
/// Not `rayon::join`: a thread waiting in `rayon::join` runs other rayon tasks meanwhile,
/// and a reduction holds its operands' storage locks while it runs. A user's task picked
/// up there (another op on the same tensor, from the user's own `par_iter`) would wait for
/// those locks on the very thread that holds them: a hang, or a spurious `Locked` error.
/// `for_each_index` waits only for its own helpers, which take no locks.
fn parallel_tree<A: Send>(
    lo: usize,
    hi: usize,
    leaf: usize,
    task: &(dyn Fn(usize, usize) -> A + Sync),
    combine: &dyn Fn(A, A) -> A,
) -> A {
    let grain = PARALLEL_MIN.max((hi - lo) * leaf / (threads() * TASKS_PER_THREAD));
    let splits = |lo: usize, hi: usize| hi - lo >= 2 && (hi - lo) * leaf >= 2 * grain;
    fn tasks(lo: usize, hi: usize, splits: &dyn Fn(usize, usize) -> bool, out: &mut Vec<(usize, usize)>) {
        if splits(lo, hi) {
            let mid = split(lo, hi);
            tasks(lo, mid, splits, out);
            tasks(mid, hi, splits, out);
        } else {
            out.push((lo, hi));
        }
    }
    fn merge<A>(
        lo: usize,
        hi: usize,
        splits: &dyn Fn(usize, usize) -> bool,
        results: &mut dyn Iterator<Item = A>,
        combine: &dyn Fn(A, A) -> A,
    ) -> Option<A> {
        if !splits(lo, hi) {
            return results.next();
        }
        let mid = split(lo, hi);
        let a = merge(lo, mid, splits, results, combine)?;
        let b = merge(mid, hi, splits, results, combine)?;
        Some(combine(a, b))
    }
    let mut list = Vec::new();
    tasks(lo, hi, &splits, &mut list);
    if list.len() == 1 {
        return task(lo, hi);
    }
    let slots: Vec<Mutex<Option<A>>> = list.iter().map(|_| Mutex::new(None)).collect();
    crate::parallel::for_each_index(list.len(), &|i| {
        let (l, h) = list[i];
        let a = task(l, h);
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(a);
    });
    // `for_each_index` returns once every index ran (a panic in one is resumed above).
    let mut results = slots.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()));
    match merge(lo, hi, &splits, &mut results, combine) {
        Some(a) => a,
        None => unreachable!("for_each_index ran every task of the tree"),
    }
}

impl<R: Reducer> Walk<'_, R> {
    /// The input element at offset `off`.
    ///
    /// # Safety
    /// `off` is an input offset of the plan.
    #[inline(always)]
    unsafe fn get(&self, off: isize) -> R::In {
        match self.source {
            // SAFETY: caller's contract.
            None => unsafe { self.input.0.wrapping_offset(off).read() },
            Some(s) => {
                let mut x = MaybeUninit::<R::In>::uninit();
                // SAFETY: one element at an offset of the plan, into `x`.
                unsafe {
                    s.fill(off, 1, x.as_mut_ptr().cast());
                    x.assume_init()
                }
            }
        }
    }

    /// The `len` contiguous input elements from offset `off`: in memory, or computed into
    /// `buf` (which then holds at least `len` elements).
    ///
    /// # Safety
    /// The elements are input elements of the plan.
    #[inline(always)]
    unsafe fn run_at<'b>(&self, off: isize, len: usize, buf: &'b mut [MaybeUninit<R::In>]) -> &'b [R::In]
    where
        R::In: 'b,
    {
        match self.source {
            // SAFETY: caller's contract; only read while the call's locks are held.
            None => unsafe { std::slice::from_raw_parts(self.input.0.wrapping_offset(off).cast_const(), len) },
            Some(s) => {
                // SAFETY: `buf` holds `len` elements; the source writes all of them.
                unsafe {
                    s.fill(off, len, buf.as_mut_ptr().cast());
                    std::slice::from_raw_parts(buf.as_ptr().cast(), len)
                }
            }
        }
    }

    fn outputs(&self) -> usize {
        self.kept.iter().map(|d| d.size).product()
    }

    /// Every output of an empty extent: `finish(identity, 0)`.
    unsafe fn write_empty(&self) {
        let v = self.r.finish(self.r.identity(), 0);
        for o in 0..self.outputs() {
            let (_, off, _) = offsets(&self.kept, o);
            // SAFETY: `off` is the output offset of a kept position (contract).
            unsafe { self.output.0.wrapping_offset(off).write(v) };
        }
    }

    // ---- rows: the innermost dim is reduced ----

    unsafe fn rows(&self) {
        let m = self.outputs();
        let one = |o: usize, parallel: bool| {
            let (in_off, out_off, _) = offsets(&self.kept, o);
            let leaves = self.n.div_ceil(ROW_LEAF);
            // SAFETY: positions of this output only.
            let acc = unsafe { self.row_tree(in_off, 0, leaves, parallel) };
            let v = self.r.finish(acc, self.n);
            // SAFETY: the output offset of a kept position, written by this task only.
            unsafe { self.output.0.wrapping_offset(out_off).write(v) };
        };
        if m >= 2 * threads() && m * self.n >= crate::parallel::GRAIN {
            let grain = (crate::parallel::GRAIN / self.n).max(1);
            crate::parallel::for_each_chunk(m, grain, |range| range.for_each(|o| one(o, false)));
        } else {
            (0..m).for_each(|o| one(o, true));
        }
    }

    /// The accumulator of leaves `lo..hi` of the output whose input offset is `base`.
    unsafe fn row_tree(&self, base: isize, lo: usize, hi: usize, parallel: bool) -> R::Acc {
        if hi - lo == 1 {
            // SAFETY: forwarded.
            return unsafe { self.row_leaf(base, lo) };
        }
        if parallel {
            // SAFETY: forwarded (every subtree only reads).
            let task = |lo: usize, hi: usize| unsafe { self.row_tree(base, lo, hi, false) };
            return parallel_tree(lo, hi, ROW_LEAF, &task, &|a, b| self.r.combine(a, b));
        }
        let mid = split(lo, hi);
        // SAFETY: forwarded.
        let (a, b) = unsafe { (self.row_tree(base, lo, mid, false), self.row_tree(base, mid, hi, false)) };
        self.r.combine(a, b)
    }

    /// [`Self::row_leaf_body`] at this CPU's SIMD level.
    unsafe fn row_leaf(&self, base: isize, leaf: usize) -> R::Acc {
        match simd_level() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `simd_level` never exceeds the CPU's detected level; forwarded.
            SimdLevel::Avx512 => unsafe { self.row_leaf_avx512(base, leaf) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above (AVX2 and FMA present).
            SimdLevel::Avx2 => unsafe { self.row_leaf_avx2(base, leaf) },
            // SAFETY: forwarded.
            _ => unsafe { self.row_leaf_body(base, leaf) },
        }
    }

    level_copies!(unsafe fn row_leaf_avx2, row_leaf_avx512 [] (&self, base: isize, leaf: usize) -> R::Acc
        => Self::row_leaf_body; "As [`Self::row_leaf_body`]");

    /// Folds reduced positions `[leaf * ROW_LEAF, ..)`, run by run.
    #[inline(always)]
    unsafe fn row_leaf_body(&self, base: isize, leaf: usize) -> R::Acc {
        let Some((inner, outer)) = self.red.split_last() else {
            // No reduced dim (a 0-dim or all-size-1 reduction): the one element.
            // SAFETY: the input's first element of this output.
            let x = unsafe { self.get(base) };
            return self.r.fold(self.r.identity(), x, 0);
        };
        let mut buf = LineAligned([const { MaybeUninit::<R::In>::uninit() }; ROW_LEAF]);
        let hi = ((leaf + 1) * ROW_LEAF).min(self.n);
        let mut p = leaf * ROW_LEAF;
        let mut acc = self.r.identity();
        while p < hi {
            let (po, j) = (p / inner.size, p % inner.size);
            let len = (inner.size - j).min(hi - p);
            let (in_off, _, idx) = offsets(outer, po);
            let start = base + in_off + j as isize * inner.input;
            let index = idx + j as i64 * inner.index as i64;
            let run = if inner.input == 1 {
                // SAFETY: `len` (≤ ROW_LEAF) consecutive elements of one run of this output's input.
                let xs = unsafe { self.run_at(start, len, &mut buf.0) };
                self.r.fold_run(xs, index, inner.index as i64)
            } else {
                let mut a = self.r.identity();
                for k in 0..len {
                    // SAFETY: element k of the run (stride `inner.input`).
                    let x = unsafe { self.get(start + k as isize * inner.input) };
                    a = self.r.fold(a, x, index + k as i64 * inner.index as i64);
                }
                a
            };
            acc = self.r.combine(acc, run);
            p += len;
        }
        acc
    }

    // ---- columns: the innermost dim is kept ----

    unsafe fn columns(&self) {
        let (inner, outer) = self.kept.split_last().expect("columns need a kept dim");
        let tile = (TILE_BYTES / std::mem::size_of::<R::Acc>().max(1)).max(TILE_MIN_COLUMNS);
        let tiles = inner.size.div_ceil(tile);
        let mo: usize = outer.iter().map(|d| d.size).product();
        let units = mo * tiles;
        let one = |u: usize, parallel: bool, spare: &mut Vec<Vec<R::Acc>>| {
            let (q, t) = (u / tiles, u % tiles);
            let (in_off, out_off, _) = offsets(outer, q);
            let j0 = t * tile;
            let w = tile.min(inner.size - j0);
            let base = in_off + j0 as isize * inner.input;
            let leaves = self.n.div_ceil(Self::leaf_rows());
            // SAFETY: positions of this unit only.
            let accs = unsafe { self.column_tree(base, inner.input, w, 0, leaves, parallel, spare) };
            let out = self.output.0.wrapping_offset(out_off + j0 as isize * inner.output);
            for (j, &a) in accs.iter().enumerate() {
                // SAFETY: output j0 + j of this unit's row, written by this task only.
                unsafe { out.wrapping_offset(j as isize * inner.output).write(self.r.finish(a, self.n)) };
            }
            spare.push(accs);
        };
        // Accumulator rows are handed from leaf to leaf and unit to unit (`spare`): a fresh
        // row of 8192 16-byte accumulators is a fresh mapping from the allocator, 32 page
        // faults (measured faster, with fewer page faults a call:
        // `docs/performance-log.md`, “From the code comments”).
        if units >= 2 * threads() && units * tile.min(inner.size) * self.n >= crate::parallel::GRAIN {
            crate::parallel::for_each_chunk(units, 1, |range| {
                let mut spare = Vec::new();
                range.for_each(|u| one(u, false, &mut spare))
            });
        } else {
            let mut spare = Vec::new();
            (0..units).for_each(|u| one(u, true, &mut spare));
        }
    }

    /// The accumulator row (`w` columns, input stride `sc`) of leaves `lo..hi`. `spare`
    /// keeps the rows merged away, for the next leaves to fold into instead of allocating a
    /// fresh row each.
    #[allow(clippy::too_many_arguments)]
    unsafe fn column_tree(
        &self,
        base: isize,
        sc: isize,
        w: usize,
        lo: usize,
        hi: usize,
        parallel: bool,
        spare: &mut Vec<Vec<R::Acc>>,
    ) -> Vec<R::Acc> {
        if hi - lo == 1 {
            let mut accs = spare.pop().unwrap_or_default();
            accs.clear();
            accs.resize(w, self.r.identity());
            // SAFETY: forwarded.
            unsafe { self.column_leaf(base, sc, lo, &mut accs) };
            return accs;
        }
        if parallel {
            // SAFETY: forwarded (every subtree only reads). Each subtree task starts spare
            // rows of its own (it may run on another thread) and reuses them leaf to leaf.
            let task = |lo: usize, hi: usize| unsafe { self.column_tree(base, sc, w, lo, hi, false, &mut Vec::new()) };
            let merge = |mut a: Vec<R::Acc>, b: Vec<R::Acc>| {
                self.r.combine_rows(&mut a, &b);
                a
            };
            return parallel_tree(lo, hi, Self::leaf_rows() * w, &task, &merge);
        }
        let mid = split(lo, hi);
        // SAFETY: forwarded.
        let (mut a, b) = unsafe {
            let a = self.column_tree(base, sc, w, lo, mid, false, spare);
            (a, self.column_tree(base, sc, w, mid, hi, false, spare))
        };
        self.r.combine_rows(&mut a, &b);
        spare.push(b);
        a
    }

    /// [`Self::column_leaf_body`] at this CPU's SIMD level.
    unsafe fn column_leaf(&self, base: isize, sc: isize, leaf: usize, accs: &mut [R::Acc]) {
        match simd_level() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `simd_level` never exceeds the CPU's detected level; forwarded.
            SimdLevel::Avx512 => unsafe { self.column_leaf_avx512(base, sc, leaf, accs) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above (AVX2 and FMA present).
            SimdLevel::Avx2 => unsafe { self.column_leaf_avx2(base, sc, leaf, accs) },
            // SAFETY: forwarded.
            _ => unsafe { self.column_leaf_body(base, sc, leaf, accs) },
        }
    }

    level_copies!(unsafe fn column_leaf_avx2, column_leaf_avx512 []
        (&self, base: isize, sc: isize, leaf: usize, accs: &mut [R::Acc])
        => Self::column_leaf_body; "As [`Self::column_leaf_body`]");

    /// Rows per column leaf: the reducer's choice, within `1..=COLUMN_LEAF_MAX`.
    fn leaf_rows() -> usize {
        R::COLUMN_LEAF_ROWS.clamp(1, COLUMN_LEAF_MAX)
    }

    /// Folds reduced positions (rows) `[leaf * leaf_rows, ..)` into `accs` (one per
    /// column, holding the identity on entry).
    #[inline(always)]
    unsafe fn column_leaf_body(&self, base: isize, sc: isize, leaf: usize, accs: &mut [R::Acc]) {
        let w = accs.len();
        let leaf_rows = Self::leaf_rows();
        let hi = ((leaf + 1) * leaf_rows).min(self.n);
        if sc == 1 {
            let lo = leaf * leaf_rows;
            // A computed input: every row of the leaf into one buffer.
            let mut computed: Vec<MaybeUninit<R::In>> = match self.source {
                Some(_) => (0..(hi - lo) * w).map(|_| MaybeUninit::uninit()).collect(),
                None => Vec::new(),
            };
            let mut chunks = computed.chunks_mut(w.max(1));
            let mut rows: SmallVec<[&[R::In]; COLUMN_LEAF_MAX]> = SmallVec::new();
            let mut indices: SmallVec<[i64; COLUMN_LEAF_MAX]> = SmallVec::new();
            for p in lo..hi {
                let (in_off, _, index) = offsets(&self.red, p);
                let buf = chunks.next().unwrap_or_default();
                // SAFETY: `w` consecutive kept elements of reduced position `p`, only read
                // while the call's locks are held (or computed into this row's chunk).
                rows.push(unsafe { self.run_at(base + in_off, w, buf) });
                indices.push(index);
            }
            self.r.fold_rows(accs, &rows, &indices);
            return;
        }
        for p in leaf * leaf_rows..hi {
            let (in_off, _, index) = offsets(&self.red, p);
            for (j, a) in accs.iter_mut().enumerate() {
                // SAFETY: kept element j (stride `sc`) of reduced position `p`.
                let x = unsafe { self.get(base + in_off + j as isize * sc) };
                *a = self.r.fold(*a, x, index);
            }
        }
    }
}
