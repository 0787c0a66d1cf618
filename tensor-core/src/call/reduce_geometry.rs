//! The geometry of a reduction, shared by every reduction path (dense, sparse, a fused
//! chain's final reduction): which dims it runs over ([`ReduceDims`], checked), the result's
//! shape and extent ([`ReduceGeometry`]) and the canonical plan a backend walks
//! ([`ReductionPlan`]).

use crate::call::can_cast;
use crate::registry::ReduceSpec;
use crate::shape::{Dims, Strides};
use crate::{Error, Result, Tensor};
use smallvec::SmallVec;

/// Which dims a reduction runs over.
#[derive(Debug, Clone, Copy)]
pub enum ReduceDims<'a> {
    /// Every dim (the `_all` forms; a 0-dim tensor reduces its one element).
    All,
    /// These dims: non-empty, distinct, each `< ndim`.
    Dims(&'a [usize]),
}

/// The geometry of one reduction, derived once for both reduction paths ([`reduce`] and a
/// fused chain's final reduction): the reduced and kept dims, the result's shape, the
/// extent, the output checks and the plan (output strides, logical-index steps).
#[derive(Debug, Clone)]
pub(crate) struct ReduceGeometry {
    /// Per input dim: reduced.
    pub reduced: SmallVec<[bool; 8]>,
    /// Reduced dims stay as size 1.
    pub keepdim: bool,
    /// The result's shape (kept dims, and size-1 reduced dims with `keepdim`).
    pub out_shape: Dims,
    /// Elements folded into each output.
    pub extent: usize,
    /// Elements of the result.
    pub out_numel: usize,
}

impl ReduceGeometry {
    /// The geometry of reducing a tensor of `shape` over `dims` (checked: non-empty,
    /// distinct, in range; errors name `name`).
    pub(crate) fn new(name: &'static str, shape: &[usize], dims: ReduceDims<'_>, keepdim: bool) -> Result<Self> {
        let reduced = reduced_mask(name, shape, dims)?;
        let out_shape: Dims = (0..shape.len())
            .filter_map(|d| match (reduced[d], keepdim) {
                (false, _) => Some(shape[d]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let extent = (0..shape.len()).filter(|&d| reduced[d]).map(|d| shape[d]).product();
        let out_numel = out_shape.iter().product();
        Ok(ReduceGeometry { reduced, keepdim, out_shape, extent, out_numel })
    }

    /// The reduced dims, listed.
    pub(crate) fn reduced_dims(&self) -> Vec<usize> {
        (0..self.reduced.len()).filter(|&d| self.reduced[d]).collect()
    }

    /// An empty extent into a non-empty result is an error (`message`) for a reduction
    /// without an identity.
    pub(crate) fn check_extent(&self, spec: &ReduceSpec, message: impl FnOnce() -> String) -> Result<()> {
        if self.extent == 0 && self.out_numel > 0 && !spec.has_identity {
            return Err(Error::invalid(spec.op.name, message()));
        }
        Ok(())
    }

    /// Checks a reduction's given `out` before anything is computed: writable, the result's
    /// shape exactly, a dtype the result can be cast to, and no element written twice (an
    /// expanded or overlapping view). `what` describes the reduction for the messages.
    pub(crate) fn check_out(
        &self,
        name: &'static str,
        out: &Tensor,
        result: crate::DType,
        what: impl Fn() -> String,
    ) -> Result<()> {
        let out_shape = &self.out_shape;
        out.check_writable(name)?;
        if out.shape() != out_shape.as_slice() {
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

    /// The canonical plan of reducing an input of `shape` and `in_strides` (a tensor, or a
    /// fused chain's virtual result) into a target with `target_strides`: size-1 dims
    /// dropped, dims ordered by the input's |stride| (outermost first, so the last dim is
    /// the innermost walk), and adjacent dims of one kind coalesced where the input, the
    /// target and the logical index are all contiguous across them.
    pub(crate) fn plan(&self, shape: &[usize], in_strides: &[isize], target_strides: &[isize]) -> ReductionPlan {
        plan_strided(shape, in_strides, target_strides, &self.reduced, self.keepdim, self.extent)
    }
}

/// The dims of `dims` as a per-dim flag, checked.
fn reduced_mask(name: &'static str, shape: &[usize], dims: ReduceDims<'_>) -> Result<SmallVec<[bool; 8]>> {
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

/// The canonical layout of one reduction, as the core hands it to a backend in a
/// [`PreparedCall`](crate::registry::PreparedCall): both operands walk `shape` (size-1 dims dropped, dims by decreasing
/// input |stride|, coalesced where input, output and logical index all allow); the output's
/// stride is 0 along reduced dims; `index` gives each reduced dim's logical-index step (0 on
/// kept dims).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
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
    let shape = input.shape();
    let geo = ReduceGeometry::new("reduction_plan", shape, dims, keepdim)?;
    let kept = geo.out_shape.len();
    if target.ndim() != kept {
        return Err(Error::invalid(
            "reduction_plan",
            format!("the target has {} dims but the result of reducing {shape:?} has {kept}", target.ndim()),
        ));
    }
    Ok(geo.plan(shape, input.strides(), target.strides()))
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

/// The canonical reduction plan ([`ReduceGeometry::plan`]) of an input given by its shape
/// and strides (a tensor's, or a fused chain's virtual result).
fn plan_strided(
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
