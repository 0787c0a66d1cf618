//! Internal overlap: can two different indices of one view reach the same element?
//!
//! An output with internal overlap would have some elements written twice (in an order the
//! kernel does not promise), so every write path (`copy_`, `fill_`, `_out`, in place) refuses
//! it. The answer is exact:
//!
//! 1. dims of size ≤ 1 never matter; a stride 0 on a dim of size > 1 overlaps
//!    ([`Overlap::Expanded`]);
//! 2. sorted by `|stride|`, when each stride exceeds the *reach* of the smaller dims
//!    (`Σ (size − 1)·|stride|` over them), every index has its own offset (a mixed-radix
//!    number): no overlap. This covers every view the library makes (slices with steps,
//!    transposes, flips, narrows);
//! 3. otherwise (interleaved strides from `as_strided`) the offsets are enumerated into a
//!    bitmap and the first repeat proves overlap ([`Overlap::Aliased`]); with none, there is
//!    none. A view too large to enumerate (more than [`EXACT_LIMIT`] elements or offsets) is
//!    reported as [`Overlap::Unproven`] and treated as overlapping.
//!
//! The sign of a stride does not matter (flipping a dim permutes its offsets).
//!
//! ```
//! # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
//! use tensor_ops::tensor_core::overlap::{internal_overlap, Overlap};
//! // a step-2 slice along the middle dim of a [3, 8, 3] tensor padded to rows of 21
//! assert_eq!(internal_overlap(&[3, 4, 3], &[21, 6, 1]), Overlap::None);
//! assert_eq!(internal_overlap(&[3, 2], &[2, 3]), Overlap::None); // interleaved, yet distinct
//! assert_eq!(internal_overlap(&[2, 3], &[1, 1]), Overlap::Aliased);
//! assert_eq!(internal_overlap(&[4, 3], &[0, 1]), Overlap::Expanded { dim: 0 });
//! ```

use crate::shape::INLINE_DIMS;
use smallvec::SmallVec;

/// The largest element count (and offset span) checked element by element.
pub const EXACT_LIMIT: usize = 1 << 24;

/// Whether, and how, a view reaches one element through two indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// Every index reaches its own element.
    None,
    /// `dim` has stride 0 and more than one element (a broadcast/expanded view).
    Expanded {
        /// The first such dim.
        dim: usize,
    },
    /// Two indices reach the same element (found by enumeration).
    Aliased,
    /// The strides interleave and the view is too large to enumerate: treated as overlap.
    Unproven,
}

impl Overlap {
    /// True unless [`Overlap::None`].
    pub fn is_overlapping(self) -> bool {
        self != Overlap::None
    }

    /// A sentence for error messages about a view of `shape` and `strides` that is `what`
    /// (e.g. "the output"), saying why it cannot be written and what would work.
    pub fn describe(self, what: &str, shape: &[usize], strides: &[isize]) -> String {
        let why = match self {
            Overlap::None => return format!("{what} (shape {shape:?}, strides {strides:?}) has no internal overlap"),
            Overlap::Expanded { dim } => format!(
                "is an expanded view: dim {dim} has stride 0 and size {}, so its elements share memory",
                shape[dim]
            ),
            Overlap::Aliased => "has overlapping strides: two different indices reach the same element".into(),
            Overlap::Unproven => format!(
                "has interleaved strides and more than {EXACT_LIMIT} elements, too many to prove that no two indices reach the same element"
            ),
        };
        format!(
            "{what} (shape {shape:?}, strides {strides:?}) {why}; write into a view without internal overlap (e.g. a contiguous tensor)"
        )
    }
}

/// Decides whether a view of `shape` and `strides` (same length) has internal overlap.
/// See the module docs for the rule.
pub fn internal_overlap(shape: &[usize], strides: &[isize]) -> Overlap {
    if shape.contains(&0) {
        return Overlap::None;
    }
    let mut dims: SmallVec<[(usize, usize); INLINE_DIMS]> = SmallVec::new();
    for (dim, (&size, &stride)) in shape.iter().zip(strides).enumerate() {
        if size > 1 {
            if stride == 0 {
                return Overlap::Expanded { dim };
            }
            dims.push((size, stride.unsigned_abs()));
        }
    }
    dims.sort_unstable_by_key(|&(_, s)| s);
    let mut reach = 0usize;
    let mut separated = true;
    for &(size, stride) in &dims {
        if stride <= reach {
            separated = false;
        }
        reach = reach.saturating_add((size - 1).saturating_mul(stride));
    }
    if separated {
        return Overlap::None;
    }
    enumerate(&dims, reach)
}

/// Marks every offset of the view in a bitmap; a repeat proves overlap.
fn enumerate(dims: &[(usize, usize)], reach: usize) -> Overlap {
    let numel = dims.iter().try_fold(1usize, |n, &(size, _)| n.checked_mul(size));
    match numel {
        Some(n) if n <= EXACT_LIMIT && reach < EXACT_LIMIT => {}
        _ => return Overlap::Unproven,
    }
    let mut seen = vec![0u64; reach / 64 + 1];
    let mut index: SmallVec<[usize; INLINE_DIMS]> = SmallVec::from_elem(0, dims.len());
    let mut offset = 0usize;
    loop {
        let (word, bit) = (offset / 64, 1u64 << (offset % 64));
        if seen[word] & bit != 0 {
            return Overlap::Aliased;
        }
        seen[word] |= bit;
        // Odometer step over the dims (smallest stride fastest).
        let mut d = 0;
        loop {
            if d == dims.len() {
                return Overlap::None;
            }
            let (size, stride) = dims[d];
            if index[d] + 1 < size {
                index[d] += 1;
                offset += stride;
                break;
            }
            offset -= index[d] * stride;
            index[d] = 0;
            d += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_sized_and_single_element_views_never_overlap() {
        assert_eq!(internal_overlap(&[0, 5], &[0, 0]), Overlap::None);
        assert_eq!(internal_overlap(&[1, 1], &[0, 0]), Overlap::None);
        assert_eq!(internal_overlap(&[], &[]), Overlap::None);
    }

    #[test]
    fn huge_interleaved_views_are_unproven() {
        assert_eq!(internal_overlap(&[1 << 13, 1 << 13], &[3, 2]), Overlap::Unproven);
    }
}
