//! The sparse layouts' kernels: their specs and the one kernel kind they share.
//!
//! Each is a step of a conversion or of `coalesce`, with one output of a size known before
//! it runs (the size-dependent steps first produce counts or segment numbers, whose last
//! element the core reads), so the same steps can become CUDA kernels (a sort, a scan, a
//! segmented sum) without changing the core. Rows are keyed by the sparse layout the step
//! belongs to and by the dtype named on each spec; a backend registers them with
//! [`ComponentKernel`]s. Every operand is a contiguous strided component, handed to the
//! kernel with its own shape and strides (`call::run_components`).

use super::{KernelImpl, OpSpec, PreparedCall, RowCache};
use crate::Result;

/// A step of a sparse layout over contiguous components: `outputs[0]` from `inputs` and
/// `params`, as its spec documents.
///
/// # Safety
/// `call` satisfies the [`PreparedCall`] contract for operands walked as they are: each
/// operand's storage locked (the output exclusively) for the call, every element its shape
/// and strides reach inside its storage, the output disjoint from every input. Index
/// inputs hold what the spec promises (checked by the constructors or produced by earlier
/// steps).
pub type ComponentFn = unsafe fn(call: &PreparedCall<'_>) -> Result<()>;

/// A backend's implementation of one sparse step as a kernel.
///
/// ```
/// use tensor_core::registry::{sparse::ComponentKernel, KernelImpl};
/// unsafe fn nothing(_: &tensor_core::registry::PreparedCall<'_>) -> tensor_core::Result<()> { Ok(()) }
/// let k = ComponentKernel { kind: "cpu-sparse", func: nothing };
/// assert_eq!(k.kind(), "cpu-sparse");
/// ```
#[derive(Debug)]
pub struct ComponentKernel {
    /// The kind's name (e.g. `"cpu-sparse"`).
    pub kind: &'static str,
    /// The step.
    pub func: ComponentFn,
}

impl KernelImpl for ComponentKernel {
    fn kind(&self) -> &'static str {
        self.kind
    }
    unsafe fn run(&self, call: &PreparedCall<'_>) -> Result<()> {
        // SAFETY: forwarded from `run`'s contract (the call path's `run_components`).
        unsafe { (self.func)(call) }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

macro_rules! sparse_spec {
    ($(#[$doc:meta])* $name:ident, $op:literal, $arity:literal, [$($param:literal),*], $what:literal) => {
        $(#[$doc])*
        pub static $name: OpSpec = OpSpec {
            name: $op,
            arity: $arity,
            params: &[$($param),*],
            bool_output: false,
            float_only: false,
            doc: $what,
            internal: true,
            sparse_intersection: false,
            defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
            rows: RowCache::new(),
        };
    };
}

sparse_spec!(
    /// `to_dense` of COO (rows keyed `SparseCoo` × values dtype): inputs `indices`
    /// `[sd, nnz]`, `values` `[nnz, *dense]`; output the dense tensor, whose contents on
    /// entry are unspecified: the step zeros it and adds each entry in (duplicates sum);
    /// param `coalesced` (Bool: sorted, no duplicates, so the scatter may run in parallel).
    COO_TO_DENSE, "sparse_coo_to_dense", 2, ["coalesced"], "zero a dense tensor and scatter-add COO entries into it"
);
sparse_spec!(
    /// `coalesce` step 1 (keyed `SparseCoo` × I64): input `indices` `[sd, nnz]`; output
    /// I64 `[nnz]`, the permutation putting the index columns in row-major order (stable).
    COO_SORT, "sparse_coo_sort", 1, [], "the stable row-major order of COO index columns"
);
sparse_spec!(
    /// `coalesce` step 2 (keyed `SparseCoo` × I64): inputs `indices`, `perm`; output I64
    /// `[nnz]`, the segment of each sorted entry (0 for the first, +1 at each new index).
    COO_SEGMENTS, "sparse_coo_segments", 2, [], "the segment number of each sorted COO entry"
);
sparse_spec!(
    /// `coalesce` step 3 (keyed `SparseCoo` × I64): inputs `indices`, `perm`, `segments`;
    /// output I64 `[sd, segments]`, each segment's index column.
    COO_UNIQUE_INDICES, "sparse_coo_unique_indices", 3, [], "the index column of each segment"
);
sparse_spec!(
    /// `coalesce` step 4 (keyed `SparseCoo` × values dtype): inputs `values`, `perm`,
    /// `segments`; output the zeroed `[segments, *dense]`, each segment's values summed in
    /// sorted order.
    COO_SEGMENT_SUM, "sparse_coo_segment_sum", 3, [], "the sum of each segment's values"
);
sparse_spec!(
    /// `to_sparse` step 1 (keyed `SparseCoo` × dense dtype): input the dense tensor, param
    /// `sparse_dims` (I64); output I64 `[prod(shape[..sparse_dims])]`, the inclusive count of
    /// positions holding a nonzero element (its last element is nnz).
    DENSE_COUNT, "dense_to_sparse_count", 1, ["sparse_dims"], "inclusive counts of nonzero sparse positions"
);
sparse_spec!(
    /// `to_sparse` step 2 (keyed `SparseCoo` × dense dtype): inputs `counts`, the dense
    /// tensor; output I64 `[sparse_dims, nnz]`, the multi-index of each nonzero position.
    DENSE_INDICES, "dense_to_sparse_indices", 2, [], "the indices of the nonzero sparse positions"
);
sparse_spec!(
    /// `to_sparse` step 3 (keyed `SparseCoo` × dense dtype): inputs `counts`, the dense
    /// tensor; output `[nnz, *dense]`, the values at the nonzero positions.
    DENSE_VALUES, "dense_to_sparse_values", 2, [], "the values at the nonzero sparse positions"
);
sparse_spec!(
    /// COO → CSR (keyed `SparseCsr` × I64): input the sorted row indices `[nnz]`; output I64
    /// `[rows + 1]`, the row pointers.
    ROWS_TO_CROW, "sparse_rows_to_crow", 1, [], "CSR row pointers from sorted row indices"
);
sparse_spec!(
    /// CSR → COO (keyed `SparseCsr` × I64): input `crow_indices` `[rows + 1]`; output I64
    /// `[nnz]`, the row of each entry.
    CROW_TO_ROWS, "sparse_crow_to_rows", 1, [], "the row of each CSR entry from the row pointers"
);
sparse_spec!(
    /// The positions of index columns in a coalesced pattern (keyed `SparseCoo` × I64):
    /// inputs `table` I64 `[sd, m]` (sorted row-major, unique), `queries` I64 `[sd, n]`;
    /// output I64 `[n]`, for each query column its column number in `table` plus one, or 0
    /// when `table` does not hold it (so the nonzero elements mark the found queries).
    COO_LOOKUP, "sparse_coo_lookup", 2, [], "where each query column sits in a coalesced pattern (one-based, 0: absent)"
);
sparse_spec!(
    /// Rows of a component by position (keyed `SparseCoo` × the source's dtype): inputs
    /// `source` `[m, *inner]`, `positions` I64 `[n]`; param `base` (I64); output
    /// `[n, *inner]`, row `j` = `source[positions[j] - base]`, or zeros where
    /// `positions[j] < base`. A position past `m - 1 + base` is an `Err`.
    GATHER_ROWS, "sparse_gather_rows", 2, ["base"], "rows of a component by position, zeros where absent"
);
sparse_spec!(
    /// The greatest (`kind` 0) or least (`kind` 1) value of each segment (keyed `SparseCoo`
    /// × values dtype), NaN propagating: inputs `values` `[nnz, *inner]`, `perm`,
    /// `segments` (as `coalesce`'s); param `group` (I64): a segment with fewer than `group`
    /// entries has unspecified positions, so it also takes a zero (`group` 0: never).
    /// Output `[segments, *inner]`.
    SEGMENT_EXTREME, "sparse_segment_extreme", 3, ["kind", "group"], "the max or min of each segment, with the implicit zeros"
);
sparse_spec!(
    /// softmax (`log` false) or log_softmax (`log` true) within each segment (keyed
    /// `SparseCoo` × a float values dtype), unspecified positions being −∞ (they take no
    /// share): inputs `values` `[nnz, *inner]`, `perm`, `segments` (as `coalesce`'s, over the
    /// group key); output `[nnz, *inner]` in the entries' own order (`out[perm[p]]` for
    /// sorted position `p`), computed in f64 (f32 is f64 too: one rounding at the store).
    SEGMENT_SOFTMAX, "sparse_segment_softmax", 3, ["log"], "softmax within each segment, unspecified entries −∞"
);
sparse_spec!(
    /// A dense tensor's rows at a pattern (keyed `SparseCoo` × the dense dtype): inputs the
    /// dense tensor (contiguous `[*sparse_sizes, *inner]`, `sd` sparse sizes), `indices` I64
    /// `[sd, n]`; output `[n, *inner]`, row `j` the dense slice at column `j`. An index
    /// outside its size is an `Err`.
    DENSE_GATHER, "sparse_dense_gather", 2, [], "a dense tensor's slices at the columns of a pattern"
);
sparse_spec!(
    /// `spmm`/`spmv` (keyed `SparseCsr` × values dtype, float dtypes): inputs `crow_indices`
    /// `[m + 1]`, `col_indices` `[nnz]` (both I64 or both I32), `values` `[nnz]`, the dense operand
    /// `[k, n]` (contiguous, of the values' dtype); output `[m, n]`, every element written:
    /// `out[i, :] = Σ values[j] * dense[col[j], :]` over `j` in `crow[i]..crow[i + 1]`
    /// (f16/bf16 accumulate in f32). The kernel checks `crow` (from 0, monotone, up to nnz)
    /// and every column against `k`: a corrupt component is an `Err`, never a read outside.
    CSR_SPMM, "sparse_csr_spmm", 4, [], "the CSR × dense product"
);
