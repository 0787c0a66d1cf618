//! The built-in reductions' specs: name, params and dtype rule, one `static` each.

use tensor_core::registry::{OpSpec, ReduceOutput, ReduceSpec, RowCache};
use tensor_core::DType;

macro_rules! spec {
    ($(#[$m:meta])* $id:ident, $name:literal, [$($p:literal),*], $out:expr, $identity:expr, $doc:literal) => {
        $(#[$m])*
        pub static $id: ReduceSpec = ReduceSpec {
            op: OpSpec {
                name: $name,
                arity: 1,
                params: &[$($p),*],
                bool_output: false,
                float_only: false,
                doc: $doc,
                defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
                rows: RowCache::new(),
            },
            output: $out,
            has_identity: $identity,
        };
    };
}

spec!(/// `sum`.
    SUM, "sum", [], ReduceOutput::Widen, true, "Σ x over dims (bool/integers → i64)");
spec!(/// `prod`.
    PROD, "prod", [], ReduceOutput::Widen, true, "Π x over dims (bool/integers → i64)");
spec!(/// `mean`.
    MEAN, "mean", [], ReduceOutput::Float, true, "Σ x / n over dims (bool/integers → f32)");
spec!(/// `amax`.
    AMAX, "amax", [], ReduceOutput::Same, false, "the greatest element over dims (NaN propagates)");
spec!(/// `amin`.
    AMIN, "amin", [], ReduceOutput::Same, false, "the least element over dims (NaN propagates)");
spec!(/// `all`.
    ALL, "all", [], ReduceOutput::Fixed(DType::Bool), true, "true when every element is non-zero");
spec!(/// `any`.
    ANY, "any", [], ReduceOutput::Fixed(DType::Bool), true, "true when some element is non-zero");
spec!(/// `logsumexp`.
    LOGSUMEXP, "logsumexp", [], ReduceOutput::Float, true, "ln Σ e^x over dims, max-rescaled in one pass");
spec!(/// `var`.
    VAR, "var", ["correction"], ReduceOutput::Float, true, "variance over dims (Welford, one pass)");
spec!(/// `std`.
    STD, "std", ["correction"], ReduceOutput::Float, true, "standard deviation over dims (Welford, one pass)");
spec!(/// `argmax`.
    ARGMAX, "argmax", [], ReduceOutput::Fixed(DType::I64), false, "index of the first greatest element along a dim");
spec!(/// `argmin`.
    ARGMIN, "argmin", [], ReduceOutput::Fixed(DType::I64), false, "index of the first least element along a dim");
spec!(/// The logsumexp pass of softmax/log_softmax, stored in f64 so that `x − lse` loses
    /// nothing at large |x| (softmax of [1000, 1000] is exactly [0.5, 0.5]).
    SOFTMAX_LSE, "softmax", [], ReduceOutput::Fixed(DType::F64), true, "ln Σ e^x along a dim, in f64");
