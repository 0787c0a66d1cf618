//! Shape and stride arithmetic, all overflow-checked.

use crate::{DType, Error, Result};
use smallvec::SmallVec;

/// Dims kept inline up to this many (no heap allocation for tensors of rank ≤ 6).
pub const INLINE_DIMS: usize = 6;
/// Sizes of a tensor's dims, inline up to [`INLINE_DIMS`].
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// let d = tensor_ops::tensor_core::shape::Dims::from_slice(&[2, 3]);
/// assert_eq!(&d[..], &[2, 3]);
/// ```
pub type Dims = SmallVec<[usize; INLINE_DIMS]>;
/// Strides of a tensor's dims (in elements), inline up to [`INLINE_DIMS`].
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// let s = tensor_ops::tensor_core::shape::Strides::from_slice(&[3, 1]);
/// assert_eq!(&s[..], &[3, 1]);
/// ```
pub type Strides = SmallVec<[isize; INLINE_DIMS]>;

/// Row-major (C-order) strides for `shape`, in elements.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// assert_eq!(tensor_ops::tensor_core::shape::contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
/// ```
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    dense_strides(shape).into_vec()
}

/// [`contiguous_strides`] without a heap allocation for rank ≤ [`INLINE_DIMS`].
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// assert_eq!(&tensor_ops::tensor_core::shape::dense_strides(&[2, 3])[..], &[3, 1]);
/// ```
pub fn dense_strides(shape: &[usize]) -> Strides {
    let mut strides = Strides::from_elem(0, shape.len());
    let mut acc: isize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.wrapping_mul(d.max(1) as isize);
    }
    strides
}

/// Number of elements of `shape`, or an overflow error naming `op`.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::{shape::checked_numel, DType};
/// assert_eq!(checked_numel("x", &[2, 3], DType::F32).unwrap(), 6);
/// assert!(checked_numel("x", &[usize::MAX, 2], DType::F32).is_err());
/// ```
pub fn checked_numel(op: &'static str, shape: &[usize], dtype: DType) -> Result<usize> {
    let overflow = || Error::Overflow { op, shape: shape.to_vec(), dtype };
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
    // Byte size must fit isize (Rust's allocation limit); strides must fit isize too.
    n.checked_mul(dtype.size()).filter(|&b| b <= isize::MAX as usize).ok_or_else(overflow)?;
    if shape.iter().any(|&d| d > isize::MAX as usize) {
        return Err(overflow());
    }
    Ok(n)
}

/// The NumPy broadcast of two shapes (right-aligned; each dim equal or 1).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::shape::broadcast_shapes;
/// assert_eq!(&broadcast_shapes("add", &[3, 1], &[4]).unwrap()[..], &[3, 4]);
/// assert!(broadcast_shapes("add", &[3], &[4]).is_err());
/// ```
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out = Dims::from_elem(0, n);
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(Error::Broadcast { op, lhs: a.to_vec(), rhs: b.to_vec() }),
        };
    }
    Ok(out)
}

/// Lowest and highest element offset (relative to the storage offset) a view can reach;
/// `None` for an empty view.
pub fn offset_range(shape: &[usize], strides: &[isize]) -> Option<(isize, isize)> {
    if shape.contains(&0) {
        return None;
    }
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&d, &s) in shape.iter().zip(strides) {
        let span = (d as isize - 1).saturating_mul(s);
        if span < 0 {
            lo = lo.saturating_add(span);
        } else {
            hi = hi.saturating_add(span);
        }
    }
    Some((lo, hi))
}

/// `a == b` for two shapes, compared in line: slice `==` calls `memcmp`, whose call costs
/// more than the compare of a few dims on a small op's hot path.
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::shape::same_dims;
/// assert!(same_dims(&[2, 3], &[2, 3]));
/// assert!(!same_dims(&[2, 3], &[2, 3, 1]));
/// ```
#[inline(always)]
pub fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// True when the strides of `shape` are row-major contiguous, ignoring size-1 dims.
pub fn is_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected: isize = 1;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d == 1 {
            continue;
        }
        if s != expected {
            return false;
        }
        expected *= d as isize;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity_ignores_size_one_dims() {
        assert!(is_contiguous(&[2, 1, 3], &[3, 99, 1]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(is_contiguous(&[0, 3], &[5, 7]));
        assert!(is_contiguous(&[], &[]));
    }

    #[test]
    fn offset_range_handles_negative_strides() {
        assert_eq!(offset_range(&[3, 2], &[-2, 1]), Some((-4, 1)));
        assert_eq!(offset_range(&[3, 0], &[1, 1]), None);
    }
}
