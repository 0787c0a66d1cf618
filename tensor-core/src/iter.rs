//! Stride-aware iteration: element offsets in logical order, and the canonical loop form
//! kernels run (dims reordered by the output's strides, coalesced where every operand is
//! contiguous across them).

use crate::shape::{Dims, Strides};
use smallvec::SmallVec;

/// Storage offsets (relative to the view's first element) of every element, in logical
/// row-major order.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::iter::StridedOffsets;
/// let offs: Vec<isize> = StridedOffsets::new(&[2, 2], &[1, 2]).collect();
/// assert_eq!(offs, vec![0, 2, 1, 3]);
/// ```
#[derive(Debug, Clone)]
pub struct StridedOffsets<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    index: Vec<usize>,
    offset: isize,
    remaining: usize,
}

impl<'a> StridedOffsets<'a> {
    /// Iterates `shape` with `strides`.
    pub fn new(shape: &'a [usize], strides: &'a [isize]) -> Self {
        let remaining = shape.iter().product();
        StridedOffsets { shape, strides, index: vec![0; shape.len()], offset: 0, remaining }
    }
}

impl Iterator for StridedOffsets<'_> {
    type Item = isize;
    fn next(&mut self) -> Option<isize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.offset;
        for d in (0..self.shape.len()).rev() {
            // Wrapping arithmetic: the intermediate offset may step one stride past the
            // view (e.g. a size-1 dim with a huge as_strided stride) before it is wound
            // back; two's complement makes the result exact whenever it is in range,
            // which every offset of a valid view is.
            self.index[d] += 1;
            self.offset = self.offset.wrapping_add(self.strides[d]);
            if self.index[d] < self.shape[d] {
                break;
            }
            self.offset = self.offset.wrapping_sub(self.strides[d].wrapping_mul(self.shape[d] as isize));
            self.index[d] = 0;
        }
        Some(current)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for StridedOffsets<'_> {}

/// The canonical loop nest of one call over several operands of one shape.
///
/// Operand 0 is the output. Dims are ordered outermost first; the last dim is the inner
/// run. Size-1 dims are dropped, dims are sorted so the output is walked in memory order
/// (largest |stride| outermost, ties broken by the inputs' strides), and adjacent dims are
/// merged when every operand is contiguous across them. An empty `shape` means one element.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::iter::IterPlan;
/// // out contiguous [4, 6]; input is the transpose of a [6, 4] contiguous tensor
/// let p = IterPlan::new(&[4, 6], &[&[6, 1], &[1, 4]]);
/// assert_eq!(&p.shape[..], &[4, 6]);
/// assert_eq!(&p.inner_strides()[..], &[1, 4]);
/// // two contiguous operands coalesce into one run
/// let p = IterPlan::new(&[4, 6], &[&[6, 1], &[6, 1]]);
/// assert_eq!(&p.shape[..], &[24]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IterPlan {
    /// Loop sizes, outermost first.
    pub shape: Dims,
    /// Per operand, the stride of each loop dim (elements).
    pub strides: PlanStrides,
}

/// Operands kept inline in an [`IterPlan`] (an op's output and up to three inputs).
pub const INLINE_OPERANDS: usize = 4;
/// One [`Strides`] per operand of an [`IterPlan`], inline up to [`INLINE_OPERANDS`].
pub type PlanStrides = SmallVec<[Strides; INLINE_OPERANDS]>;
/// One value per operand (e.g. [`IterPlan::inner_strides`]), inline up to [`INLINE_OPERANDS`].
pub type PerOperand<T> = SmallVec<[T; INLINE_OPERANDS]>;

impl IterPlan {
    /// Canonicalises `shape` iterated by operands with `strides` (each `shape.len()` long,
    /// broadcast dims already at stride 0).
    pub fn new(shape: &[usize], strides: &[&[isize]]) -> IterPlan {
        let nops = strides.len();
        if shape.contains(&0) {
            return IterPlan {
                shape: Dims::from_slice(&[0]),
                strides: PlanStrides::from_elem(Strides::from_slice(&[0]), nops),
            };
        }
        let mut dims: Dims = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        // Stable sort: outermost = largest |stride| of the output, then of each input.
        dims.sort_by(|&a, &b| {
            for op in strides {
                let (sa, sb) = (op[a].unsigned_abs(), op[b].unsigned_abs());
                if sa != sb {
                    return sb.cmp(&sa);
                }
            }
            std::cmp::Ordering::Equal
        });
        let mut out_shape = Dims::new();
        let mut out_strides = PlanStrides::from_elem(Strides::new(), nops);
        for &d in &dims {
            if let Some(&outer) = out_shape.last() {
                let mergeable = strides
                    .iter()
                    .enumerate()
                    .all(|(i, op)| out_strides[i].last().copied() == op[d].checked_mul(shape[d] as isize));
                if mergeable {
                    let n = out_shape.len();
                    out_shape[n - 1] = outer * shape[d];
                    for (i, op) in strides.iter().enumerate() {
                        out_strides[i][n - 1] = op[d];
                    }
                    continue;
                }
            }
            out_shape.push(shape[d]);
            for (i, op) in strides.iter().enumerate() {
                out_strides[i].push(op[d]);
            }
        }
        IterPlan { shape: out_shape, strides: out_strides }
    }

    /// A plan from operands already in canonical form (as a `PreparedCall` hands them):
    /// copies the shape and strides without sorting or merging.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::iter::IterPlan;
    /// let p = IterPlan::new(&[4, 6], &[&[1, 4], &[6, 1]]);
    /// let q = IterPlan::from_canonical(&p.shape, &p.strides[0], [&p.strides[1][..]].into_iter());
    /// assert_eq!(p, q);
    /// ```
    pub fn from_canonical<'a>(
        shape: &[usize],
        out_strides: &[isize],
        input_strides: impl Iterator<Item = &'a [isize]>,
    ) -> IterPlan {
        let mut strides = PlanStrides::new();
        strides.push(Strides::from_slice(out_strides));
        strides.extend(input_strides.map(Strides::from_slice));
        IterPlan { shape: Dims::from_slice(shape), strides }
    }

    /// Number of loop dims (0 for a single element).
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Total elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// Length of the innermost run (1 for a single element).
    pub fn inner_len(&self) -> usize {
        self.shape.last().copied().unwrap_or(1)
    }
    /// Each operand's stride along the inner run (0 for a single element).
    pub fn inner_strides(&self) -> PerOperand<isize> {
        self.strides.iter().map(|s| s.last().copied().unwrap_or(0)).collect()
    }
    /// Offset of each operand at the start of outer row `row` (rows in row-major order of
    /// every dim but the last).
    pub fn row_offsets(&self, mut row: usize, out: &mut [isize]) {
        out.iter_mut().for_each(|o| *o = 0);
        for d in (0..self.ndim().saturating_sub(1)).rev() {
            let i = row % self.shape[d];
            row /= self.shape[d];
            for (o, s) in out.iter_mut().zip(&self.strides) {
                *o += i as isize * s[d];
            }
        }
    }
    /// Number of outer rows (product of every dim but the last).
    pub fn outer_rows(&self) -> usize {
        match self.shape.len() {
            0 => 1,
            n => self.shape[..n - 1].iter().product(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(strides: &PlanStrides) -> Vec<Vec<isize>> {
        strides.iter().map(|s| s.to_vec()).collect()
    }

    fn naive(shape: &[usize], strides: &[isize]) -> Vec<isize> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut i| {
                let mut off = 0;
                for d in (0..shape.len()).rev() {
                    off += (i % shape[d]) as isize * strides[d];
                    i /= shape[d];
                }
                off
            })
            .collect()
    }

    #[test]
    fn offsets_match_naive_model() {
        let cases: &[(&[usize], &[isize])] =
            &[(&[], &[]), (&[3], &[-1]), (&[2, 3, 4], &[1, 2, 6]), (&[2, 0, 3], &[3, 3, 1]), (&[3, 2], &[0, 1])];
        for (shape, strides) in cases {
            assert_eq!(StridedOffsets::new(shape, strides).collect::<Vec<_>>(), naive(shape, strides));
        }
    }

    #[test]
    fn plan_coalesces_broadcast_and_drops_unit_dims() {
        let p = IterPlan::new(&[2, 1, 3], &[&[3, 3, 1], &[0, 7, 0]]);
        assert_eq!(p.shape.to_vec(), vec![6]);
        assert_eq!(nested(&p.strides), vec![vec![1], vec![0]]);
        let p = IterPlan::new(&[2, 3], &[&[3, 1], &[0, 1]]);
        assert_eq!(p.shape.to_vec(), vec![2, 3]);
        assert_eq!(nested(&p.strides), vec![vec![3, 1], vec![0, 1]]);
    }

    #[test]
    fn plan_reorders_by_output_strides() {
        // output is a transposed view: walk it in memory order
        let p = IterPlan::new(&[3, 4], &[&[1, 3], &[4, 1]]);
        assert_eq!(p.shape.to_vec(), vec![4, 3]);
        assert_eq!(nested(&p.strides), vec![vec![3, 1], vec![1, 4]]);
    }

    #[test]
    fn plan_covers_every_element_once() {
        let shape = [2usize, 3, 4];
        let out = [12isize, 4, 1];
        let inp = [1isize, 2, 6];
        let p = IterPlan::new(&shape, &[&out, &inp]);
        let mut pairs: Vec<(isize, isize)> = Vec::new();
        let mut base = vec![0isize; 2];
        for row in 0..p.outer_rows() {
            p.row_offsets(row, &mut base);
            let inner = p.inner_strides();
            for k in 0..p.inner_len() as isize {
                pairs.push((base[0] + k * inner[0], base[1] + k * inner[1]));
            }
        }
        let mut expect: Vec<(isize, isize)> = naive(&shape, &out).into_iter().zip(naive(&shape, &inp)).collect();
        pairs.sort();
        expect.sort();
        assert_eq!(pairs, expect);
    }
}
