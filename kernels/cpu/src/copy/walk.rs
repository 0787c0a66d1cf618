//! An odometer over the outer dims of a loop nest, tracking one offset per operand, so
//! strided loops pay one addition per row instead of a division per dim.

/// Walks the row-major index space of `shape` from a starting linear index, keeping the
/// element offset of each of `N` operands.
#[derive(Debug)]
pub(crate) struct Walker<'a, const N: usize> {
    shape: &'a [usize],
    strides: [&'a [isize]; N],
    index: Vec<usize>,
    offsets: [isize; N],
}

impl<'a, const N: usize> Walker<'a, N> {
    /// Starts at linear index `start` of `shape` (each stride slice is `shape.len()` long).
    pub(crate) fn new(shape: &'a [usize], strides: [&'a [isize]; N], start: usize) -> Self {
        let mut index = vec![0; shape.len()];
        let mut offsets = [0isize; N];
        let mut rest = start;
        for d in (0..shape.len()).rev() {
            index[d] = rest % shape[d];
            rest /= shape[d];
            for (o, s) in offsets.iter_mut().zip(&strides) {
                *o += index[d] as isize * s[d];
            }
        }
        Walker { shape, strides, index, offsets }
    }

    /// The offsets of the current position.
    #[inline]
    pub(crate) fn offsets(&self) -> [isize; N] {
        self.offsets
    }

    /// Moves to the next index (wrapping to the start after the last).
    #[inline]
    pub(crate) fn advance(&mut self) {
        for d in (0..self.shape.len()).rev() {
            self.index[d] += 1;
            for (o, s) in self.offsets.iter_mut().zip(&self.strides) {
                *o += s[d];
            }
            if self.index[d] < self.shape[d] {
                return;
            }
            for (o, s) in self.offsets.iter_mut().zip(&self.strides) {
                *o -= s[d] * self.shape[d] as isize;
            }
            self.index[d] = 0;
        }
    }
}
