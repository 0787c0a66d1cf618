//! Layout classes of a canonical (dst, src) loop nest: which loop a copy runs.

use tensor_core::iter::IterPlan;

/// Smallest plane edge (elements) for which the tiled transpose beats the strided loop.
const MIN_TRANSPOSE_EDGE: usize = 8;

/// How a copy walks memory, decided once per call from the canonical [`IterPlan`]
/// (operand 0 = destination, operand 1 = source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyClass {
    /// No elements.
    Empty,
    /// Both operands one dense run (memcpy-like).
    Contiguous,
    /// Rows that are contiguous in both operands, with pitches between them.
    Rows,
    /// The source is constant along the inner run (a scalar or a row broadcast): each run
    /// is a fill.
    Broadcast,
    /// The destination's inner dim is contiguous, the source is contiguous along outer dim
    /// `k` instead: cache-blocked tiled transpose of the (`k`, inner) planes.
    Transpose {
        /// The loop dim along which the source has stride 1.
        k: usize,
    },
    /// Anything else: a strided inner loop.
    General,
}

/// Classifies a canonical two-operand plan.
///
/// ```
/// use tensor_core::iter::IterPlan;
/// use tensor_kernels_cpu::copy::{classify, CopyClass};
/// let p = IterPlan::new(&[64, 32], &[&[32, 1], &[1, 64]]);
/// assert_eq!(classify(&p), CopyClass::Transpose { k: 0 });
/// let p = IterPlan::new(&[64, 32], &[&[32, 1], &[32, 1]]);
/// assert_eq!(classify(&p), CopyClass::Contiguous);
/// ```
pub fn classify(plan: &IterPlan) -> CopyClass {
    if plan.numel() == 0 {
        return CopyClass::Empty;
    }
    let n = plan.ndim();
    if n == 0 {
        return CopyClass::Contiguous;
    }
    let (ds, ss) = (&plan.strides[0], &plan.strides[1]);
    let (di, si) = (ds[n - 1], ss[n - 1]);
    if si == 0 {
        return CopyClass::Broadcast;
    }
    if di == 1 && si == 1 {
        return if n == 1 { CopyClass::Contiguous } else { CopyClass::Rows };
    }
    if di == 1
        && plan.shape[n - 1] >= MIN_TRANSPOSE_EDGE
        && let Some(k) = (0..n - 1).rev().find(|&k| ss[k] == 1 && plan.shape[k] >= MIN_TRANSPOSE_EDGE)
    {
        return CopyClass::Transpose { k };
    }
    CopyClass::General
}
