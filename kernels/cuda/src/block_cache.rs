//! The free blocks a device's stream-ordered allocator keeps for reuse, by size class, and
//! its byte counters. Held by each `runtime::CudaDevice`; filled and drained by
//! `alloc`.

use std::collections::HashMap;

/// Cached free blocks of one device's stream, by size class, and counters.
#[derive(Debug, Default)]
pub struct BlockCache {
    /// Free device addresses per size class.
    pub(crate) free: HashMap<usize, Vec<u64>>,
    /// Bytes in `free`.
    pub(crate) cached_bytes: usize,
    /// Bytes in blocks held by live tensors.
    pub(crate) allocated_bytes: usize,
}
