//! The one tail of the call path. Every kind of call — the general and the dense way of a
//! map, copy and fill, a reduction, a fused chain (the node-by-node fallback runs eager
//! calls, so it ends here too) — hands its checked operands to [`Launch::run`], which
//!
//! 1. returns at once for an empty output;
//! 2. rejects an output that overlaps itself ([`Dest`]: a contiguous view never does);
//! 3. reads each input that partially overlaps the output from a private copy (exact
//!    aliasing, as in place, is fine);
//! 4. asks the call's [`Geometry`] where each (staged) operand lies on the plan the kernel
//!    walks;
//! 5. locks every storage in address order (`lock_many_for`: read for inputs, write for the
//!    output — a read-only output is `Error::ReadOnly` there);
//! 6. builds the [`RawTensor`]s and the [`PreparedCall`] (with the kind's
//!    [`CallExtra`]) and runs the row's kernel.
//!
//! **Where a layout is asked — the one place.** Every path looks its row up through
//! [`lookup`], under the layout [`layout_of`] its operands gives (the highest: `Strided`
//! unless an operand is sparse, so a map, copy or reduction given a sparse tensor finds its
//! sparse rows or is `Error::NoKernel` naming the layouts the op has), and every operand reaches its kernel placed by a
//! [`Geometry`] defined here ([`Run`] and [`MapLayout`] for maps, copies and fills,
//! `&ReductionPlan` for reductions — derived by `reduce_geometry::ReduceGeometry` for both
//! reduction paths —, [`ChainLayout`] for a fused reduction). A new layout adds its key
//! and its geometry here; kind-specific data travels in the one [`CallExtra`] slot of the
//! [`PreparedCall`].
//!
//! Up to [`MAX_INPUTS`] inputs (every map, copy, fill and reduction) the lock set and the
//! raw operands are fixed arrays, no small-vector bookkeeping (the dense way is the hot
//! path of small ops; `tests/tests/call_allocations.rs` counts its allocations).

use crate::iter::{IterPlan, PerOperand};
use crate::registry::{registry, CallExtra, KernelRow, OpSpec, PreparedCall, RawTensor};
use crate::shape::Strides;
use crate::{lock_many_for, Access, DType, Device, Error, Layout, Result, Scalar, Storage, Tensor, MAX_INPUTS};

/// The layout a call's rows are looked up under: the highest of its operands' layouts
/// ([`Layout`]'s order: `Strided` first), so one sparse operand makes a sparse call.
#[inline]
pub(super) fn layout_of<'t>(operands: impl IntoIterator<Item = &'t Tensor>) -> Layout {
    operands.into_iter().map(Tensor::layout).max().unwrap_or(Layout::Strided)
}

/// The row of `spec` for `device`, `layout` and `dtype`.
pub(super) fn lookup(
    spec: &'static OpSpec,
    layout: Layout,
    device: Device,
    dtype: DType,
) -> Result<&'static KernelRow> {
    registry().lookup_spec(spec, device, layout, dtype)
}

/// Where each operand of a call lies on the plan its kernel walks: (shape, strides in
/// elements) per operand.
pub(super) trait Geometry {
    /// The output's walk.
    fn output(&self) -> (&[usize], &[isize]);
    /// Input `i`'s walk.
    fn input(&self, i: usize) -> (&[usize], &[isize]);
}

/// The unit stride of a dense one-run plan.
const UNIT: [isize; 1] = [1];

/// Every operand one dense run of `numel` elements (no dim for a single element, as the
/// canonical plan has it).
pub(super) struct Run(pub [usize; 1]);

impl Geometry for Run {
    fn output(&self) -> (&[usize], &[isize]) {
        let dims = usize::from(self.0[0] != 1);
        (&self.0[..dims], &UNIT[..dims])
    }
    fn input(&self, _: usize) -> (&[usize], &[isize]) {
        self.output()
    }
}

/// An elementwise call's walk: one dense run (`plan: None`), or the canonical plan
/// ([`IterPlan`]: size-1 dims dropped, dims in the output's memory order, coalesced) of the
/// output's shape with broadcast inputs at stride 0.
pub(super) struct MapLayout {
    /// The run, when every operand is row-major contiguous in one shape.
    run: Run,
    /// The plan otherwise.
    plan: Option<IterPlan>,
}

impl MapLayout {
    /// The walk of `out` and `sources` (broadcastable to `out`'s shape). All operands
    /// row-major contiguous in one shape (the common case): one run, built without sorting.
    pub(super) fn of(out: &Tensor, sources: &[&Tensor]) -> Result<MapLayout> {
        let run = Run([out.numel()]);
        let dense = |t: &Tensor| t.shape() == out.shape() && t.is_contiguous();
        if out.is_contiguous() && sources.iter().all(|t| dense(t)) {
            return Ok(MapLayout { run, plan: None });
        }
        let mut strides: PerOperand<Strides> = PerOperand::new();
        strides.push(Strides::from_slice(out.strides()));
        for t in sources {
            strides.push(t.broadcast_strides(out.shape())?);
        }
        let plan_strides: PerOperand<&[isize]> = strides.iter().map(|s| s.as_slice()).collect();
        Ok(MapLayout { run, plan: Some(IterPlan::new(out.shape(), &plan_strides)) })
    }
}

impl Geometry for MapLayout {
    fn output(&self) -> (&[usize], &[isize]) {
        self.plan.as_ref().map_or_else(|| self.run.output(), |p| (&p.shape, &p.strides[0]))
    }
    fn input(&self, i: usize) -> (&[usize], &[isize]) {
        self.plan.as_ref().map_or_else(|| self.run.output(), |p| (&p.shape, &p.strides[i + 1]))
    }
}

impl Geometry for &crate::call::ReductionPlan {
    fn output(&self) -> (&[usize], &[isize]) {
        (&self.shape, &self.output)
    }
    fn input(&self, _: usize) -> (&[usize], &[isize]) {
        (&self.shape, &self.input)
    }
}

/// A fused reduction's walk: the output on the reduction plan of the chain's virtual
/// result, the leaves on the canonical plan of that result (operand 0 of `leaves` is the
/// virtual result itself).
pub(super) struct ChainLayout<'p> {
    /// The reduction plan (the output walks it).
    pub reduce: &'p crate::call::ReductionPlan,
    /// The leaves' plan.
    pub leaves: IterPlan,
}

impl Geometry for ChainLayout<'_> {
    fn output(&self) -> (&[usize], &[isize]) {
        (&self.reduce.shape, &self.reduce.output)
    }
    fn input(&self, i: usize) -> (&[usize], &[isize]) {
        (&self.leaves.shape, &self.leaves.strides[i + 1])
    }
}

/// The output of a launch and what the tail must do about it.
#[derive(Clone, Copy)]
pub(super) enum Dest<'t> {
    /// Locked for writing; inputs partially overlapping it are read from private copies.
    Shared(&'t Tensor),
    /// Locked for writing; the caller has ruled out partial overlap with every input.
    Apart(&'t Tensor),
    /// A tensor the caller has just made at this base address and holds the only handle
    /// of: nothing else can read or write it, so it is written without its lock.
    Fresh(&'t Tensor, *mut u8),
}

/// One call's kernel and what goes with it: everything but the operands.
pub(super) struct Launch<'a> {
    /// The name the lock and overlap errors report.
    pub name: &'static str,
    /// The op the kernel is handed.
    pub op: &'static OpSpec,
    /// The row whose kernel runs.
    pub row: &'static KernelRow,
    /// The op's scalar params.
    pub params: &'a [Scalar],
    /// The kind-specific data.
    pub extra: CallExtra<'a>,
}

impl Launch<'_> {
    /// Runs the kernel writing `dest` from `inputs`, laid out by `geometry` (given the
    /// output and the inputs as staged). See the module docs for the steps.
    #[inline]
    pub(super) fn run<G: Geometry>(
        &self,
        dest: Dest<'_>,
        inputs: &[&Tensor],
        geometry: impl FnOnce(&Tensor, &[&Tensor]) -> Result<G>,
    ) -> Result<()> {
        let (out, fresh) = match dest {
            Dest::Shared(t) | Dest::Apart(t) => (t, None),
            Dest::Fresh(t, base) => (t, Some(base)),
        };
        if out.numel() == 0 {
            return Ok(());
        }
        // A contiguous view never overlaps itself; anything else gets the exact check.
        if !out.is_contiguous() {
            let overlap = out.internal_overlap();
            if overlap.is_overlapping() {
                return Err(Error::invalid_output(
                    self.name,
                    overlap.describe("the output", out.shape(), out.strides()),
                ));
            }
        }
        // Partial overlap: read from a private copy so no element is overwritten before it
        // is read. (No copies, clones or heap allocations otherwise.)
        let partial = |t: &Tensor| partially_overlaps(out, t);
        let mut copies: PerOperand<Tensor> = PerOperand::new();
        if matches!(dest, Dest::Shared(_)) {
            for t in inputs.iter().filter(|t| partial(t)) {
                copies.push(private_copy(self.name, t)?);
            }
        }
        let staged: PerOperand<&Tensor>;
        let sources = if copies.is_empty() {
            inputs
        } else {
            let mut next = copies.iter();
            staged = inputs.iter().map(|&t| if partial(t) { next.next().unwrap_or(t) } else { t }).collect();
            &staged[..]
        };
        let geometry = geometry(out, sources)?;
        let n = sources.len();
        let last = match fresh {
            Some(_) => (sources.first().unwrap_or(&out).storage(), Access::Read),
            None => (out.storage(), Access::Write),
        };
        // Slots past the inputs repeat the last input (or hold the output): `lock_many_for`
        // merges repeats.
        let read = |i: usize| sources.get(i.min(n.saturating_sub(1))).map_or(last, |t| (t.storage(), Access::Read));
        let locks = if n <= MAX_INPUTS {
            let wants: [(&Storage, Access); MAX_INPUTS + 1] = [read(0), read(1), read(2), last];
            lock_many_for(self.name, &wants)?
        } else {
            let mut wants: PerOperand<(&Storage, Access)> =
                sources.iter().map(|t| (t.storage(), Access::Read)).collect();
            wants.push(last);
            lock_many_for(self.name, &wants)?
        };
        let outputs = [raw(out, fresh.unwrap_or_else(|| locks.base(out.storage())), geometry.output())];
        let input = |i: usize| {
            // Slots past the inputs repeat the last one (never read).
            let t = sources[i.min(n - 1)];
            raw(t, locks.base(t.storage()), geometry.input(i.min(n - 1)))
        };
        let few: [RawTensor<'_>; MAX_INPUTS];
        let many: PerOperand<RawTensor<'_>>;
        // (No inputs, a fill: the empty collect below, which allocates nothing.)
        let in_raw: &[RawTensor<'_>] = if (1..=MAX_INPUTS).contains(&n) {
            few = [input(0), input(1), input(2)];
            &few[..n]
        } else {
            many = (0..n).map(input).collect();
            &many
        };
        let call =
            PreparedCall { op: self.op, outputs: &outputs, inputs: in_raw, params: self.params, extra: self.extra };
        // SAFETY: every operand is a view of a storage locked above (the output exclusively)
        // or the caller's fresh output (its only handle held by the caller, so nothing else
        // reads or writes it); the geometry places each on its own view (dims permuted,
        // size-1 dims dropped, coalesced only where contiguous, broadcast at stride 0), so
        // every reachable element is in bounds by the view invariant; the output has no
        // internal overlap (checked), and inputs partially overlapping it were replaced by
        // private copies (`Dest::Shared`) or ruled out by the caller (`Apart`, `Fresh`),
        // leaving only exact aliasing: the PreparedCall contract.
        unsafe { self.row.kernel.run(&call) }
    }
}

/// `t` at `base` (its storage's address) walking `(shape, strides)`.
#[inline(always)]
fn raw<'g>(t: &Tensor, base: *mut u8, (shape, strides): (&'g [usize], &'g [isize])) -> RawTensor<'g> {
    RawTensor {
        ptr: base.wrapping_add(t.storage_offset() * t.elem_size()),
        // The stored dtype: a quantized tensor's integers (kernels never see a quantized
        // dtype; its quantizer travels in `CallExtra::Quantized`).
        dtype: t.storage().dtype(),
        shape,
        strides,
        device: t.device(),
    }
}

// `Launch::run` names one slot per input in its fixed arrays (no `array::from_fn`, which
// costs on this hot path).
const _: () = assert!(MAX_INPUTS == 3, "Launch::run lists one slot per input");

/// Whether `input` shares some but not all of its elements' places with `out`: a write to
/// `out` could change `input` before it is read.
pub(super) fn partially_overlaps(out: &Tensor, input: &Tensor) -> bool {
    out.may_overlap(input) && !out.is_same_view(input)
}

/// A private copy of `t` for `op` to read while it writes a tensor `t` overlaps.
pub(super) fn private_copy(op: &'static str, t: &Tensor) -> Result<Tensor> {
    let copy = t.empty_like_for(op, t.device())?;
    copy.copy_(t)?;
    Ok(copy)
}
