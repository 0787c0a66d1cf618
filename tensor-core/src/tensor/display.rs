//! PyTorch-like `Display`/`Debug`.

use super::Tensor;
use std::fmt;

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, strides={:?}, offset={}, dtype={}, device={})",
            self.shape(),
            self.strides(),
            self.storage_offset(),
            self.dtype(),
            self.device()
        )
    }
}
