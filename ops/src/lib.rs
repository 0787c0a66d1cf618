//! tensor-ops.
