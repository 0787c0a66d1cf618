//! The CPU backend's reduction kernel kind: a [`Reducer`] (identity, fold, combine, finish)
//! per op and dtype, run by one strided driver (`walk`) along any axis.
//!
//! The driver reads the [`PreparedCall`] plan (dims ordered by the input's memory order, a
//! reduced dim being one where the output has stride 0) and picks:
//! - **rows** when the innermost dim is reduced: each output folds its elements run by
//!   run ([`Reducer::fold_run`]: several independent accumulators, combined at the end);
//! - **columns** when the innermost dim is kept: a tile of outputs keeps a row of
//!   accumulators in cache and every reduced position adds its row of inputs into it
//!   (vectorised across the kept dim, never a gather per element).
//!
//! Either way the reduced extent is cut into fixed leaves ([`ROW_LEAF`] elements, or
//! [`COLUMN_LEAF`] rows, or the reducer's [`Reducer::COLUMN_LEAF_ROWS`]) whose partial
//! accumulators are combined in a fixed binary tree (pairwise order: a float sum's error
//! grows with log n, not n). The tree depends only on the shape, so the result is the same
//! whatever the thread count: threads take whole outputs when there are enough, else
//! subtrees of one output.
//!
//! The built-in reducers (sum … argmin) and their rows are in `builtin` (crate-private).

pub(crate) mod builtin;
mod walk;

use tensor_core::registry::{KernelImpl, PreparedCall};
use tensor_core::{Element, Result, Scalar};

pub use walk::{COLUMN_LEAF, COLUMN_LEAF_MAX, ROW_LEAF};

/// One reduction for one input dtype: how an accumulator starts, takes an element, merges
/// with another and becomes the output.
///
/// `combine` must be associative and commutative up to the op's own rounding (the driver
/// combines in a fixed tree, not in index order), and `fold(identity, x, i)` must equal
/// `combine(identity, fold(identity, x, i))`.
///
/// ```
/// use tensor_kernels_cpu::reduce::Reducer;
/// use tensor_core::Scalar;
/// struct Count;
/// impl Reducer for Count {
///     type In = f32;
///     type Acc = i64;
///     type Out = i64;
///     fn new(_: &[Scalar]) -> Self { Count }
///     fn identity(&self) -> i64 { 0 }
///     fn fold(&self, acc: i64, x: f32, _index: i64) -> i64 { acc + (x != 0.0) as i64 }
///     fn combine(&self, a: i64, b: i64) -> i64 { a + b }
///     fn finish(&self, acc: i64, _n: usize) -> i64 { acc }
/// }
/// assert_eq!(Count.fold_run(&[1.0, 0.0, 2.0], 0, 1), 2);
/// ```
pub trait Reducer: Sync + Sized {
    /// The input element as stored.
    type In: Element;
    /// The accumulator (one to three values).
    type Acc: Copy + Send + Sync;
    /// The output element as stored.
    type Out: Element;
    /// Rows per leaf of a column fold (reducing a strided dim), at most
    /// [`COLUMN_LEAF_MAX`]. Each leaf ends with its accumulator row written out and merged
    /// into the tree, so folds whose accumulators are large and exact enough take longer
    /// leaves (argmax and Welford's variance take 256, measured nearer the read speed:
    /// `docs/performance-log.md`, “From the code comments”); float sums keep
    /// [`COLUMN_LEAF`], a short running sum between pairwise merges.
    const COLUMN_LEAF_ROWS: usize = COLUMN_LEAF;
    /// The reducer for these params (the op's `#[param]`s, in order).
    fn new(params: &[Scalar]) -> Self;
    /// The accumulator of nothing.
    fn identity(&self) -> Self::Acc;
    /// Adds the element `x`, whose logical index along the reduced dims is `index`.
    fn fold(&self, acc: Self::Acc, x: Self::In, index: i64) -> Self::Acc;
    /// Merges two partial accumulators.
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The output of an accumulator that folded `n` elements.
    fn finish(&self, acc: Self::Acc, n: usize) -> Self::Out;
    /// Folds a contiguous run whose first element has index `index` (next ones `+ step`).
    /// The default keeps [`RUN_LANES`] independent accumulators (element `i` goes to
    /// accumulator `i % RUN_LANES`, which LLVM turns into vector lanes for simple folds) and
    /// combines them pairwise. Built-ins override it with explicit SIMD. Always inlined, so
    /// that the driver's AVX2 and AVX-512 copies of a leaf vectorise it at their width (an
    /// out-of-line copy is compiled for the baseline: 128-bit adds, measured a fused
    /// `((a - b)²).sum()` over 4 MiB operands at a third of the read speed).
    #[inline(always)]
    fn fold_run(&self, xs: &[Self::In], index: i64, step: i64) -> Self::Acc {
        let mut accs = [self.identity(); RUN_LANES];
        let mut chunks = xs.chunks_exact(RUN_LANES);
        let mut base = index;
        for chunk in &mut chunks {
            for (k, (a, &x)) in accs.iter_mut().zip(chunk).enumerate() {
                *a = self.fold(*a, x, base.wrapping_add((k as i64).wrapping_mul(step)));
            }
            base = base.wrapping_add((RUN_LANES as i64).wrapping_mul(step));
        }
        for (k, (a, &x)) in accs.iter_mut().zip(chunks.remainder()).enumerate() {
            *a = self.fold(*a, x, base.wrapping_add((k as i64).wrapping_mul(step)));
        }
        // Through `black_box`: with the pairwise combine in sight, LLVM may vectorise the
        // loop above as several narrow vectors instead of one wide one (built-in sums ran
        // as eight 2-lane adds until their combine was hidden this way).
        combine_lanes(self, std::hint::black_box(accs))
    }
    /// Merges a row of partial accumulators into another: `a[j] = combine(a[j], b[j])` (the
    /// column tree's step; built-ins override it where one shared factor per row saves work
    /// per column).
    #[inline(always)]
    fn combine_rows(&self, a: &mut [Self::Acc], b: &[Self::Acc]) {
        for (x, &y) in a.iter_mut().zip(b) {
            *x = self.combine(*x, y);
        }
    }
    /// Folds whole rows of a column reduction: `accs[j]` takes `rows[r][j]` for every `r`
    /// in order, the element of row `r` having index `indices[r]`. `accs` hold the identity
    /// on entry (a fresh leaf). The default folds element by element (vectorised across `j`
    /// for simple folds); built-ins override it where a two-pass or structure-of-arrays
    /// form is faster.
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [Self::Acc], rows: &[&[Self::In]], indices: &[i64]) {
        let w = accs.len();
        for (r, (row, &index)) in rows.iter().zip(indices).enumerate() {
            row_segments(rows, r, w, |s, e| {
                for (a, &x) in accs[s..e].iter_mut().zip(row[s..e].iter()) {
                    *a = self.fold(*a, x, index);
                }
            });
        }
    }
}

/// Elements of a column fold's row processed between two prefetches of the next row.
pub const ROW_SEGMENT: usize = 256;

/// Asks for every line of `xs[from..from + ROW_SEGMENT]` (clipped): a column fold calls it
/// with the *next* row before folding each segment of the current one, so the rows (each a
/// separate run of memory, often only part of a page) arrive while the fold computes
/// instead of each row restarting the hardware prefetcher (measured over the first dim:
/// `docs/performance-log.md`, “From the code comments”).
///
/// ```
/// let row = vec![1.0f32; 1000];
/// tensor_kernels_cpu::reduce::prefetch_row_segment(&row, 512); // a hint: no effect on values
/// tensor_kernels_cpu::reduce::prefetch_row_segment(&row, 5000); // past the end: nothing
/// ```
#[inline(always)]
pub fn prefetch_row_segment<T>(xs: &[T], from: usize) {
    let end = (from + ROW_SEGMENT).min(xs.len());
    if from < end {
        crate::map::prefetch_lines(xs[from..end].as_ptr().cast(), (end - from) * std::mem::size_of::<T>());
    }
}

/// Asks, at step `k` of `steps`, for the `k`-th share of the lines of `rows` taken in memory
/// order (each row whole, one after the other): a column fold sweeping several rows at once
/// calls it once per segment with the rows of its *next* sweep, so they are asked for as
/// one run after the other rather than as interleaved pieces.
///
/// ```
/// let (a, b) = (vec![1.0f32; 600], vec![2.0f32; 600]);
/// for k in 0..3 {
///     tensor_kernels_cpu::reduce::prefetch_rows_share(&[&a, &b], k, 3); // a hint only
/// }
/// ```
#[inline(always)]
pub fn prefetch_rows_share<T>(rows: &[&[T]], k: usize, steps: usize) {
    let total: usize = rows.iter().map(|r| r.len()).sum();
    let per = total.div_ceil(steps.max(1));
    let (from, to) = (k * per, ((k + 1) * per).min(total));
    let mut base = 0;
    for row in rows {
        let (lo, hi) = (from.max(base), to.min(base + row.len()));
        if lo < hi {
            let piece = &row[lo - base..hi - base];
            crate::map::prefetch_lines(piece.as_ptr().cast(), std::mem::size_of_val(piece));
        }
        base += row.len();
    }
}

/// The walk of row `r` of a column leaf over `w` columns: `fold(s, e)` for each
/// [`ROW_SEGMENT`]-wide range `s..e`, after asking for the same segment of row `r + 1`
/// ([`prefetch_row_segment`]). The default [`Reducer::fold_rows`] walks its rows this way,
/// and the built-in var and argmax their last rows (their several-rows-per-sweep loops
/// write the walk out).
///
/// ```
/// let rows: [&[f32]; 2] = [&[1.0; 600], &[2.0; 600]];
/// let mut seen = Vec::new();
/// tensor_kernels_cpu::reduce::row_segments(&rows, 0, 600, |s, e| seen.push((s, e)));
/// assert_eq!(seen, [(0, 256), (256, 512), (512, 600)]);
/// ```
#[inline(always)]
pub fn row_segments<T>(rows: &[&[T]], r: usize, w: usize, mut fold: impl FnMut(usize, usize)) {
    let next = rows.get(r + 1).copied().unwrap_or_default();
    for s in (0..w).step_by(ROW_SEGMENT) {
        prefetch_row_segment(next, s);
        fold(s, (s + ROW_SEGMENT).min(w));
    }
}

/// The value type a `#[tensor_op(reduce)]` definition's `T` becomes on the CPU: the
/// one-lane value [`crate::value::Lane`] of the accumulate-in element (total integer
/// arithmetic, the lane algebra's methods, `==`/`<` comparisons giving `bool`).
///
/// ```
/// use tensor_kernels_cpu::{reduce::ReduceValue, value::{Lane, Value}};
/// fn sum_sq<T: ReduceValue>(acc: T, x: T) -> T { acc + x * x }
/// assert_eq!(sum_sq(Lane(1.0f32), Lane(3.0)).0, 10.0);
/// assert!(Lane(i8::MAX) + Lane(1) < Lane(0));
/// ```
pub trait ReduceValue: crate::value::Value<Mask = bool> + PartialOrd + Send + Sync {}

impl<E: tensor_core::Element> ReduceValue for crate::value::Lane<E> where
    crate::value::Lane<E>: crate::value::Value<Mask = bool>
{
}

/// The independent accumulators of [`Reducer::fold_run`]'s default.
pub const RUN_LANES: usize = 16;

/// [`Reducer::fold_run`] for a reducer whose `fold` ignores the index (a
/// `#[tensor_op(reduce)]` fold without `index`, which the macro's reducers use): the
/// default's order — element `i` into lane `i % RUN_LANES`, the lanes combined pairwise, so
/// the same bits — over whole arrays of lanes with no index arithmetic, which LLVM keeps in
/// vector registers (the default's per-element index computation is what left simple folds
/// as 2-lane code).
///
/// ```
/// use tensor_kernels_cpu::reduce::{fold_run_unindexed, Reducer};
/// # use tensor_core::Scalar;
/// struct Total;
/// impl Reducer for Total {
///     type In = f32;
///     type Acc = f32;
///     type Out = f32;
///     fn new(_: &[Scalar]) -> Self { Total }
///     fn identity(&self) -> f32 { 0.0 }
///     fn fold(&self, acc: f32, x: f32, _index: i64) -> f32 { acc + x }
///     fn combine(&self, a: f32, b: f32) -> f32 { a + b }
///     fn finish(&self, acc: f32, _n: usize) -> f32 { acc }
/// }
/// let xs: Vec<f32> = (0..100).map(|i| i as f32 * 0.1).collect();
/// assert_eq!(fold_run_unindexed(&Total, &xs).to_bits(), Total.fold_run(&xs, 0, 1).to_bits());
/// ```
#[inline(always)]
pub fn fold_run_unindexed<R: Reducer>(r: &R, xs: &[R::In]) -> R::Acc {
    let mut accs = [r.identity(); RUN_LANES];
    let (full, rest) = xs.as_chunks::<RUN_LANES>();
    for chunk in full {
        for k in 0..RUN_LANES {
            accs[k] = r.fold(accs[k], chunk[k], 0);
        }
    }
    for (a, &x) in accs.iter_mut().zip(rest) {
        *a = r.fold(*a, x, 0);
    }
    // Through `black_box`, as the default: the pairwise combine in sight splits the loop.
    combine_lanes(r, std::hint::black_box(accs))
}

/// Combines `RUN_LANES` accumulators pairwise (lane k with lane k + half, halving).
#[inline]
pub fn combine_lanes<R: Reducer>(r: &R, mut accs: [R::Acc; RUN_LANES]) -> R::Acc {
    let mut half = RUN_LANES / 2;
    while half > 0 {
        for k in 0..half {
            accs[k] = r.combine(accs[k], accs[k + half]);
        }
        half /= 2;
    }
    accs[0]
}

/// Runs a reduction described by a [`PreparedCall`] (one input, one output whose stride is 0
/// along reduced dims).
///
/// # Safety
/// `call` satisfies the [`PreparedCall`] contract, and its operands' dtypes are the
/// reducer's `In` and `Out`.
pub type ReduceFn = unsafe fn(call: &PreparedCall<'_>) -> Result<()>;

/// Where a reduction's input elements come from when they are not in memory: a fused
/// chain computing them on demand (`crate::fused`).
pub trait InputSource: Sync {
    /// Writes the `len` input elements at offsets `off, off + 1, ...` of the (virtual, dense)
    /// input, in the input's dtype, to `dst`.
    ///
    /// # Safety
    /// The offsets lie inside the virtual input; `dst` is valid for `len` elements.
    unsafe fn fill(&self, off: isize, len: usize, dst: *mut u8);
}

/// Runs a reduction over a virtual input that `source` computes (a fused chain's result):
/// `input` gives its dtype, the plan shape and its strides (dense offsets; its pointer is
/// never read), `out` and `index` are as in a [`PreparedCall`].
///
/// # Safety
/// `out` is an in-bounds view of a locked storage on the plan, of the reducer's output
/// dtype; `source` computes every offset the plan reaches.
pub type FusedReduceFn = unsafe fn(
    out: &tensor_core::registry::RawTensor<'_>,
    input: &tensor_core::registry::RawTensor<'_>,
    index: &[isize],
    params: &[Scalar],
    source: &dyn InputSource,
) -> Result<()>;

/// A reduction kernel for one input dtype on the CPU (what reduction rows hold).
///
/// ```
/// use tensor_kernels_cpu::reduce::{drive, drive_fused, ReduceKernel, Reducer};
/// use tensor_core::registry::KernelImpl;
/// # struct Count;
/// # impl Reducer for Count {
/// #     type In = f32; type Acc = i64; type Out = i64;
/// #     fn new(_: &[tensor_core::Scalar]) -> Self { Count }
/// #     fn identity(&self) -> i64 { 0 }
/// #     fn fold(&self, acc: i64, x: f32, _: i64) -> i64 { acc + (x != 0.0) as i64 }
/// #     fn combine(&self, a: i64, b: i64) -> i64 { a + b }
/// #     fn finish(&self, acc: i64, _: usize) -> i64 { acc }
/// # }
/// let k = ReduceKernel { func: drive::<Count>, fused: drive_fused::<Count> };
/// assert_eq!(k.kind(), "cpu-reduce");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ReduceKernel {
    /// The driver instantiated for one reducer ([`drive`]).
    pub func: ReduceFn,
    /// The same driver over a fused chain's computed input ([`drive_fused`]).
    pub fused: FusedReduceFn,
}

impl KernelImpl for ReduceKernel {
    fn kind(&self) -> &'static str {
        "cpu-reduce"
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { (self.func)(call) }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The operands' dtypes are the reducer's `In` and `Out`.
fn check_dtypes<R: Reducer>(op: &'static str, input: tensor_core::DType, out: tensor_core::DType) -> Result<()> {
    if input == R::In::DTYPE && out == R::Out::DTYPE {
        return Ok(());
    }
    Err(tensor_core::Error::invalid(
        op,
        format!("reduction kernel for {} → {} was given {input} → {out}", R::In::DTYPE, R::Out::DTYPE),
    ))
}

/// The driver for reducer `R`: checks the operands' dtypes, then walks the plan.
///
/// # Safety
/// `call` satisfies the [`PreparedCall`] contract.
pub unsafe fn drive<R: Reducer>(call: &PreparedCall<'_>) -> Result<()> {
    let (Some(out), Some(input)) = (call.outputs.first(), call.inputs.first()) else {
        return Err(tensor_core::Error::invalid(call.op.name, "a reduction takes one input and one output"));
    };
    check_dtypes::<R>(call.op.name, input.dtype, out.dtype)?;
    let reducer = R::new(call.params);
    // SAFETY: the contract, and the dtypes were checked above.
    unsafe { walk::walk(&reducer, out, input, call.index_strides(), None) };
    Ok(())
}

/// [`drive`] over a computed input (a [`FusedReduceFn`]).
///
/// # Safety
/// The [`FusedReduceFn`] contract.
pub unsafe fn drive_fused<R: Reducer>(
    out: &tensor_core::registry::RawTensor<'_>,
    input: &tensor_core::registry::RawTensor<'_>,
    index: &[isize],
    params: &[Scalar],
    source: &dyn InputSource,
) -> Result<()> {
    check_dtypes::<R>("fused", input.dtype, out.dtype)?;
    let reducer = R::new(params);
    // SAFETY: the contract; the walk reads the input only through `source`.
    unsafe { walk::walk(&reducer, out, input, index, Some(source)) };
    Ok(())
}
