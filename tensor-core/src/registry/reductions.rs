//! The built-in reductions' specs (name, params, dtype rule; one `static` each), beside the
//! other built-in specs, so that each backend registers its rows against them without
//! depending on `tensor-ops` (which holds their public fns). [`rule`] holds each spec's dtype
//! rule as a `const`, for the backends' compile-time row tables
//! ([`crate::for_each_reduce_row!`]).

use super::{Accumulate, OpSpec, ReduceOutput, ReduceSpec, RowCache, SparseReduce};
use crate::DType;

macro_rules! specs {
    ($($(#[$m:meta])* $id:ident, $name:literal, [$($p:literal),*], $out:expr, $identity:expr, $sparse:ident, $doc:literal;)*) => {
        $(
            $(#[$m])*
            pub static $id: ReduceSpec = ReduceSpec {
                op: OpSpec {
                    name: $name,
                    arity: 1,
                    params: &[$($p),*],
                    bool_output: false,
                    float_only: false,
                    doc: $doc,
                    internal: false,
                    sparse_intersection: false,
                    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
                    rows: RowCache::new(),
                },
                output: rule::$id,
                has_identity: $identity,
                sparse: SparseReduce::$sparse,
            };
        )*
        /// Each built-in reduction's dtype rule (its spec's `output`) as a `const`, for
        /// compile-time row tables.
        #[allow(missing_docs)]
        pub mod rule {
            use super::*;
            $(pub const $id: ReduceOutput = $out;)*
        }
    };
}

specs! {
    /// `amax`.
    AMAX, "amax", [], ReduceOutput::Same, false, Max, "the greatest element over dims (NaN propagates)";
    /// `amin`.
    AMIN, "amin", [], ReduceOutput::Same, false, Min, "the least element over dims (NaN propagates)";
    /// `logsumexp`.
    LOGSUMEXP, "logsumexp", [], ReduceOutput::Float, true, Unsupported, "ln Σ e^x over dims, max-rescaled in one pass";
    /// `var`.
    VAR, "var", ["correction"], ReduceOutput::Float, true, Unsupported, "variance over dims (Welford, one pass)";
    /// `std`.
    STD, "std", ["correction"], ReduceOutput::Float, true, Unsupported, "standard deviation over dims (Welford, one pass)";
    /// `argmax`.
    ARGMAX, "argmax", [], ReduceOutput::Fixed(Accumulate::Same, DType::I64), false, Unsupported, "index of the first greatest element along a dim";
    /// `argmin`.
    ARGMIN, "argmin", [], ReduceOutput::Fixed(Accumulate::Same, DType::I64), false, Unsupported, "index of the first least element along a dim";
    /// The logsumexp pass of softmax/log_softmax, folded as `logsumexp` and stored in f64 so
    /// that `x − lse` loses nothing at large |x| (softmax of [1000, 1000] is exactly [0.5, 0.5]).
    SOFTMAX_LSE, "softmax", [], ReduceOutput::Fixed(Accumulate::Float, DType::F64), true, Unsupported, "ln Σ e^x along a dim, in f64";
}
