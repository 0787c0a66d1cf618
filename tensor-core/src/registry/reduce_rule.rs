//! A reduction's spec and its dtype rule — written once here: the call path sizes outputs
//! by it, and the backends' row tables (CPU reducer types, CUDA accumulate/output dtypes)
//! and `#[tensor_op(reduce)]`'s rows are derived from it ([`for_each_reduce_row!`]).

use super::OpSpec;
use crate::DType;

/// What a reduction accumulates in, from its input dtype (f16/bf16 always in f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulate {
    /// Each dtype as itself (amax, amin, argmax).
    Same,
    /// Bool and integers in `I64`, floats as themselves (sum, prod).
    Widen,
    /// Bool and integers in `F32`, floats as themselves (mean, var, logsumexp).
    Float,
    /// Every dtype as a `Bool` (all, any).
    Bool,
}

impl Accumulate {
    /// The accumulate dtype for an input of `input`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::registry::Accumulate;
    /// use tensor_ops::DType;
    /// assert_eq!(Accumulate::Widen.dtype(DType::U8), DType::I64);
    /// assert_eq!(Accumulate::Same.dtype(DType::BF16), DType::F32);
    /// ```
    pub const fn dtype(self, input: DType) -> DType {
        match self {
            Accumulate::Widen if !input.is_float() => DType::I64,
            Accumulate::Float if !input.is_float() => DType::F32,
            Accumulate::Bool => DType::Bool,
            _ => input.compute(),
        }
    }
}

/// The dtype rule of a reduction: what it accumulates in and what it stores, from its input
/// dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOutput {
    /// Accumulates as [`Accumulate::Same`]; stores the input's dtype (amax, amin).
    Same,
    /// Accumulates as [`Accumulate::Widen`]: bool and integers → `I64`; floats keep theirs
    /// (sum, prod).
    Widen,
    /// Accumulates as [`Accumulate::Float`]: floats keep theirs; bool and integers → `F32`
    /// (mean, var, logsumexp, softmax).
    Float,
    /// Accumulates by the rule, stores always this dtype (argmax → `I64` accumulating as
    /// `Same`, all/any → `Bool`, count_nonzero → `I64`).
    Fixed(Accumulate, DType),
}

impl ReduceOutput {
    /// How it accumulates.
    pub const fn accumulate_rule(self) -> Accumulate {
        match self {
            ReduceOutput::Same => Accumulate::Same,
            ReduceOutput::Widen => Accumulate::Widen,
            ReduceOutput::Float => Accumulate::Float,
            ReduceOutput::Fixed(a, _) => a,
        }
    }

    /// The accumulate dtype for an input of `input`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::registry::ReduceOutput;
    /// use tensor_ops::DType;
    /// assert_eq!(ReduceOutput::Widen.accumulate(DType::F16), DType::F32);
    /// assert_eq!(ReduceOutput::Float.accumulate(DType::I32), DType::F32);
    /// ```
    pub const fn accumulate(self, input: DType) -> DType {
        self.accumulate_rule().dtype(input)
    }

    /// The result dtype for an input of `input`: the fixed dtype, else the input's own for
    /// floats (f16 stays f16), else the accumulate dtype.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::tensor_core::registry::ReduceOutput;
    /// use tensor_ops::DType;
    /// assert_eq!(ReduceOutput::Widen.result(DType::I8), DType::I64);
    /// assert_eq!(ReduceOutput::Float.result(DType::Bool), DType::F32);
    /// assert_eq!(ReduceOutput::Float.result(DType::F16), DType::F16);
    /// ```
    pub const fn result(self, input: DType) -> DType {
        match self {
            ReduceOutput::Fixed(_, d) => d,
            _ if input.is_float() => input,
            _ => self.accumulate(input),
        }
    }
}

/// A reduction: its op (name, params, rows — registered like a map's, one row per *input*
/// dtype) and its rules.
#[derive(Debug)]
pub struct ReduceSpec {
    /// Name, arity 1, params, docs and rows.
    pub op: OpSpec,
    /// The result dtype rule.
    pub output: ReduceOutput,
    /// False when the reduction has no value over an empty extent (amax, argmax): reducing
    /// an empty extent into a non-empty output is then an error.
    pub has_identity: bool,
    /// How the reduction runs on a sparse input (`Unsupported`: `NoKernel`, convert with
    /// `to_dense()`).
    pub sparse: SparseReduce,
}

/// What a reduction is on a sparse tensor's stored entries, for the sparse layouts' path
/// (`call::sparse`): the sparse dims are reduced by the layouts' own segment steps, the
/// dense dims by the op's own rows over `values`. `#[tensor_op(reduce, sparse = sum)]`
/// states it; it is the op author's promise that the op *is* that sum, max or min.
///
/// ```
/// use tensor_core::registry::{reductions::AMAX, SparseReduce};
/// assert_eq!(AMAX.sparse, SparseReduce::Max);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparseReduce {
    /// No sparse path: a sparse input is `Error::NoKernel`.
    Unsupported,
    /// A sum: implicit zeros add nothing (`sum`).
    Sum,
    /// The greatest element, NaN propagating: a group with an unspecified position also
    /// sees one zero (`amax`).
    Max,
    /// The least element, as `Max` (`amin`).
    Min,
}

/// A reduction's rows, one per dtype of the one dtype list ([`crate::for_each_dtype!`]),
/// with the types its dtype rule gives: invokes `$m! { $($args)* D, In, Acc, Out }` for every
/// dtype `D`, where `In`, `Acc`, `Out` are the Rust types of `D`, of
/// `$rule.accumulate(D)` and of `$rule.result(D)`. `$rule` is a `const`
/// [`ReduceOutput`] (the built-ins' are in [`crate::registry::reductions::rule`]).
///
/// ```
/// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
/// use tensor_ops::tensor_core::registry::ReduceOutput;
/// const WIDEN: ReduceOutput = ReduceOutput::Widen;
/// macro_rules! sizes { ($d:ident, $i:ty, $c:ty, $o:ty) => {
///     assert_eq!(std::mem::size_of::<$c>(), if tensor_ops::DType::$d.is_float() { 4.max(std::mem::size_of::<$i>()) } else { 8 });
/// } }
/// tensor_ops::tensor_core::for_each_reduce_row!(WIDEN, sizes;);
/// ```
#[macro_export]
macro_rules! for_each_reduce_row {
    ($rule:path, $($m:tt)::+; $($args:tt)*) => {
        $crate::for_each_dtype!($crate::for_each_reduce_row; @each $rule, [$($m)::+], [$($args)*];);
    };
    (@each $rule:path, $m:tt, $args:tt; $($d:ident),*) => { $(
        $crate::for_each_reduce_row!(@one $rule, $m, $args, $d);
    )* };
    (@one $rule:path, [$($m:tt)::+], [$($args:tt)*], $d:ident) => {
        $($m)::+! { $($args)* $d,
            $crate::ElemOf<{ $crate::DType::$d as u8 }>,
            $crate::ElemOf<{ $rule.accumulate($crate::DType::$d) as u8 }>,
            $crate::ElemOf<{ $rule.result($crate::DType::$d) as u8 }>
        }
    };
}
