//! Reductions on the one call path: checked dims, the result dtype rule, the output (new,
//! or a given `_out` with a cast), locks and the canonical reduction plan handed to the
//! backend as a [`PreparedCall`] whose output has stride 0 along every reduced dim.

use crate::call::can_cast;
use crate::registry::{registry, PreparedCall, RawTensor, ReduceSpec};
use crate::shape::{Dims, Strides};
use crate::{lock_many_for, Access, Error, Layout, Result, Scalar, Tensor};
use smallvec::SmallVec;

/// Which dims a reduction runs over.
#[derive(Debug, Clone, Copy)]
pub enum ReduceDims<'a> {
    /// Every dim (the `_all` forms; a 0-dim tensor reduces its one element).
    All,
    /// These dims: non-empty, distinct, each `< ndim`.
    Dims(&'a [usize]),
}

/// Runs the reduction `spec` of `input` over `dims`, into a new tensor (`out: None`, the
/// result is returned) or into `out` (exactly the result's shape; a dtype the result can be
/// cast to).
///
/// The result's shape is the input's without the reduced dims, or with them as size 1 when
/// `keepdim`. Reducing an empty extent into a non-empty result is an error for reductions
/// without an identity (`amax`, `argmax`, ...).
///
/// ```no_run
/// # mod tensor_ops { pub use ::tensor_core::{self, *}; } // the paths of tensor_ops
/// # fn demo(sum: &'static tensor_ops::tensor_core::registry::ReduceSpec) -> tensor_ops::Result<()> {
/// use tensor_ops::tensor_core::call::{reduce, ReduceDims};
/// use tensor_ops::Tensor;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let rows = reduce(sum, &a, ReduceDims::Dims(&[1]), false, &[], None)?.unwrap();
/// assert_eq!(rows.to_vec::<f32>()?, vec![3.0, 7.0]);
/// # Ok(()) }
/// ```
pub fn reduce(
    spec: &'static ReduceSpec,
    input: &Tensor,
    dims: ReduceDims<'_>,
    keepdim: bool,
    params: &[Scalar],
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let name = spec.op.name;
    if params.len() != spec.op.params.len() {
        return Err(Error::invalid(
            name,
            format!("{name} takes {} param(s) ({:?}), got {}", spec.op.params.len(), spec.op.params, params.len()),
        ));
    }
    let reduced = reduced_mask(name, input.shape(), dims)?;
    let result = spec.output.result(input.dtype());
    let row = registry().lookup_spec(&spec.op, input.device(), Layout::Strided, input.dtype())?;
    let shape = input.shape();
    let out_shape: Dims = (0..shape.len())
        .filter_map(|d| match (reduced[d], keepdim) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let extent: usize = (0..shape.len()).filter(|&d| reduced[d]).map(|d| shape[d]).product();
    let out_numel: usize = out_shape.iter().product();
    if extent == 0 && out_numel > 0 && !spec.has_identity {
        return Err(Error::invalid(
            name,
            format!(
                "{name} of an empty extent has no value: input shape {shape:?} reduced over dims {:?} (each output would reduce 0 elements)",
                reduced_list(&reduced)
            ),
        ));
    }
    if let Some(out) = out {
        input.check_same_device(name, out)?;
        let what = || format!("{name} of shape {shape:?} over dims {:?} (keepdim = {keepdim})", reduced_list(&reduced));
        check_reduce_out(name, out, &out_shape, result, what)?;
        if out_numel == 0 {
            return Ok(None);
        }
        // Straight into `out` when it has the result's dtype, cannot overlap itself and
        // does not overlap the input; otherwise through a private result and a cast copy.
        let direct = out.dtype() == result && !out.may_overlap(input);
        if direct {
            run(spec, row, input, out, &reduced, keepdim, extent, params)?;
        } else {
            let tmp = Tensor::empty(&out_shape, result, input.device())?;
            run(spec, row, input, &tmp, &reduced, keepdim, extent, params)?;
            out.copy_(&tmp).map_err(|e| e.renamed(name))?;
        }
        return Ok(None);
    }
    crate::shape::checked_numel(name, &out_shape, result)?;
    let target = Tensor::empty(&out_shape, result, input.device())?;
    if out_numel > 0 {
        run(spec, row, input, &target, &reduced, keepdim, extent, params)?;
    }
    Ok(Some(target))
}

/// Checks a reduction's given `out` before anything is computed: writable, the result's
/// shape exactly, a dtype the result can be cast to, and no element written twice (an
/// expanded or overlapping view). `what` describes the reduction for the messages.
pub(crate) fn check_reduce_out(
    name: &'static str,
    out: &Tensor,
    out_shape: &[usize],
    result: crate::DType,
    what: impl Fn() -> String,
) -> Result<()> {
    out.check_writable(name)?;
    if out.shape() != out_shape {
        return Err(Error::invalid_output(
            name,
            format!("the out tensor has shape {:?} but {} has shape {out_shape:?}", out.shape(), what()),
        ));
    }
    if !can_cast(result, out.dtype()) {
        return Err(Error::invalid_output(
            name,
            format!(
                "the result dtype {result} cannot be written into the out tensor of dtype {} (float → integer/bool and non-bool → bool are not allowed)",
                out.dtype()
            ),
        ));
    }
    let overlap = out.internal_overlap();
    if overlap.is_overlapping() {
        return Err(Error::invalid_output(name, overlap.describe("the out tensor", out.shape(), out.strides())));
    }
    Ok(())
}

/// The dims of `dims` as a per-dim flag, checked.
pub(crate) fn reduced_mask(name: &'static str, shape: &[usize], dims: ReduceDims<'_>) -> Result<SmallVec<[bool; 8]>> {
    let ndim = shape.len();
    let mut mask: SmallVec<[bool; 8]> = SmallVec::from_elem(false, ndim);
    match dims {
        ReduceDims::All => mask.iter_mut().for_each(|m| *m = true),
        ReduceDims::Dims(list) => {
            if list.is_empty() {
                return Err(Error::invalid(
                    name,
                    format!(
                        "{name} needs at least one dim to reduce (shape {shape:?}); use {name}_all to reduce every dim"
                    ),
                ));
            }
            for &d in list {
                if d >= ndim {
                    return Err(Error::invalid(
                        name,
                        format!(
                            "dim {d} is out of range for shape {shape:?} ({ndim} dims: valid dims are 0..{ndim}{}){}",
                            if ndim == 0 { "; a 0-dim tensor has no dims, use the _all form" } else { "" },
                            crate::error::negative_dim_hint(d)
                        ),
                    ));
                }
                if mask[d] {
                    return Err(Error::invalid(name, format!("dim {d} is listed twice in {list:?} (shape {shape:?})")));
                }
                mask[d] = true;
            }
        }
    }
    Ok(mask)
}

fn reduced_list(mask: &[bool]) -> Vec<usize> {
    (0..mask.len()).filter(|&d| mask[d]).collect()
}

/// The canonical layout of one reduction, as the core hands it to a backend in a
/// [`PreparedCall`]: both operands walk `shape` (size-1 dims dropped, dims by decreasing
/// input |stride|, coalesced where input, output and logical index all allow); the output's
/// stride is 0 along reduced dims; `index` gives each reduced dim's logical-index step (0 on
/// kept dims).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::{self, *}; } // the paths of tensor_ops
/// use tensor_ops::tensor_core::call::{reduction_plan, ReduceDims};
/// use tensor_ops::{DType, Device, Tensor};
/// let a = Tensor::zeros(&[4, 6], DType::F32, Device::Cpu).unwrap();
/// let out = Tensor::zeros(&[4], DType::F32, Device::Cpu).unwrap();
/// let p = reduction_plan(&a, &out, ReduceDims::Dims(&[1]), false).unwrap();
/// assert_eq!((p.shape.as_slice(), p.output.as_slice(), p.index.as_slice()), (&[4, 6][..], &[1, 0][..], &[0, 1][..]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReductionPlan {
    /// Sizes of the plan dims, outermost first.
    pub shape: Dims,
    /// The input's strides along them.
    pub input: Strides,
    /// The output's strides (0 along reduced dims).
    pub output: Strides,
    /// Logical-index steps (0 along kept dims).
    pub index: Strides,
}

/// The [`ReductionPlan`] of reducing `input` over `dims` into `target` (a tensor of the
/// result's shape, for its strides); for backends' tests and tools that plan launches
/// outside a call.
pub fn reduction_plan(input: &Tensor, target: &Tensor, dims: ReduceDims<'_>, keepdim: bool) -> Result<ReductionPlan> {
    let reduced = reduced_mask("reduction_plan", input.shape(), dims)?;
    let shape = input.shape();
    let kept = (0..shape.len()).filter(|&d| !reduced[d] || keepdim).count();
    if target.ndim() != kept {
        return Err(Error::invalid(
            "reduction_plan",
            format!("the target has {} dims but the result of reducing {shape:?} has {kept}", target.ndim()),
        ));
    }
    let extent: usize = (0..shape.len()).filter(|&d| reduced[d]).map(|d| shape[d]).product();
    Ok(plan(input, target, &reduced, keepdim, extent))
}

/// One dim of the reduction plan: size, input stride, output stride (0 when reduced),
/// logical-index step (0 when kept).
#[derive(Debug, Clone, Copy)]
struct PlanDim {
    size: usize,
    input: isize,
    output: isize,
    index: isize,
}

/// Writes the reduction of `input` into `target` (the result's shape and dtype).
#[allow(clippy::too_many_arguments)]
fn run(
    spec: &'static ReduceSpec,
    row: &'static crate::registry::KernelRow,
    input: &Tensor,
    target: &Tensor,
    reduced: &[bool],
    keepdim: bool,
    extent: usize,
    params: &[Scalar],
) -> Result<()> {
    let name = spec.op.name;
    let overlap = target.internal_overlap();
    if overlap.is_overlapping() {
        return Err(Error::invalid_output(name, overlap.describe("the output", target.shape(), target.strides())));
    }
    let ReductionPlan { shape, input: in_strides, output: out_strides, index: index_strides } =
        plan(input, target, reduced, keepdim, extent);
    let wants = [(input.storage(), Access::Read), (target.storage(), Access::Write)];
    let locks = lock_many_for(name, &wants)?;
    let base = |t: &Tensor| locks.base(t.storage()).wrapping_add(t.storage_offset() * t.elem_size());
    let outputs = [RawTensor {
        ptr: base(target),
        dtype: target.dtype(),
        shape: &shape,
        strides: &out_strides,
        device: target.device(),
    }];
    let inputs = [RawTensor {
        ptr: base(input),
        dtype: input.dtype(),
        shape: &shape,
        strides: &in_strides,
        device: input.device(),
    }];
    let call = PreparedCall {
        op: &spec.op,
        outputs: &outputs,
        inputs: &inputs,
        params,
        index_strides: &index_strides,
        fused: None,
    };
    // SAFETY: both storages are locked above (the target exclusively); the plan walks each
    // operand's own view (dims permuted, size-1 dims dropped, coalesced only where every
    // operand is contiguous across them), so every reachable element is in bounds; the
    // target has no internal overlap (checked) along kept dims and does not overlap the
    // input (the caller routes any overlap through a private result).
    unsafe { row.kernel.run(&call) }
}

/// The canonical reduction plan of `input` → `target`: size-1 dims dropped, dims ordered
/// by the input's |stride| (outermost first, so the last dim is the innermost walk), and
/// adjacent dims of one kind coalesced where the input, the target and the logical index
/// are all contiguous across them.
fn plan(input: &Tensor, target: &Tensor, reduced: &[bool], keepdim: bool, extent: usize) -> ReductionPlan {
    plan_strided(input.shape(), input.strides(), target.strides(), reduced, keepdim, extent)
}

/// [`plan`] of an input given by its shape and strides (a fused chain's virtual result).
pub(crate) fn plan_strided(
    shape: &[usize],
    in_strides: &[isize],
    target_strides: &[isize],
    reduced: &[bool],
    keepdim: bool,
    extent: usize,
) -> ReductionPlan {
    let mut dims: SmallVec<[PlanDim; 8]> = SmallVec::new();
    let mut out_dim = 0;
    // Logical index steps: row-major over the reduced dims in the input's order.
    let mut index_step = extent.max(1) as isize;
    for d in 0..shape.len() {
        let (output, index) = if reduced[d] {
            index_step /= shape[d].max(1) as isize;
            if keepdim {
                out_dim += 1;
            }
            (0, index_step)
        } else {
            let s = target_strides[out_dim];
            out_dim += 1;
            (s, 0)
        };
        if shape[d] != 1 {
            dims.push(PlanDim { size: shape[d], input: in_strides[d], output, index });
        }
    }
    dims.sort_by_key(|d| std::cmp::Reverse(d.input.unsigned_abs()));
    let mut merged: SmallVec<[PlanDim; 8]> = SmallVec::new();
    for d in dims {
        if let Some(last) = merged.last_mut() {
            let same_kind = (last.output == 0) == (d.output == 0) && (last.index == 0) == (d.index == 0);
            let n = d.size as isize;
            if same_kind
                && last.input == d.input * n
                && last.output == d.output * n
                && last.index == d.index * n
                && d.size > 0
            {
                last.size *= d.size;
                last.input = d.input;
                last.output = d.output;
                last.index = d.index;
                continue;
            }
        }
        merged.push(d);
    }
    ReductionPlan {
        shape: merged.iter().map(|d| d.size).collect(),
        input: merged.iter().map(|d| d.input).collect(),
        output: merged.iter().map(|d| d.output).collect(),
        index: merged.iter().map(|d| d.index).collect(),
    }
}
