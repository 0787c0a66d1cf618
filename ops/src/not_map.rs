//! What a `#[tensor_op]` body that calls a reduction finds: a composed call `sum(x)` reads
//! `sum::element`, `sum::DTYPES`, `sum::CUDA_SOURCES` and `sum::CUDA_FUNCTIONS` in the type
//! namespace, where a map op keeps its hidden module. A reduction's module (the generated
//! ones, and the markers below for the built-in reductions) has these names too, with an
//! `element` requiring [`NotAMapOp`](crate::compose::NotAMapOp), which no type implements:
//! the call fails with one error, at the call, saying what a body may call, instead of
//! naming missing internals.

/// The items of a module standing for something a body cannot call (a reduction).
#[macro_export]
#[doc(hidden)]
macro_rules! __tensor_ops_not_a_map_op {
    () => {
        /// Every dtype (the call is reported by `element` alone).
        pub const DTYPES: &[$crate::__private::DType] = &$crate::__private::DType::ALL;
        /// No CUDA functions.
        pub const CUDA_SOURCES: &[($crate::__private::DType, &str)] = &[];
        /// No CUDA functions.
        pub const CUDA_FUNCTIONS: &[($crate::__private::DType, &str)] = &[];
        /// Not an elementwise op: calling it in a body is a compile error.
        pub fn element<V: $crate::__private::Value>(a: impl $crate::__private::NotAMapOp) -> V {
            a.never()
        }
    };
}

/// A marker module per built-in reduction, beside its fn (the fn is in the value namespace,
/// the module in the type namespace). `std` has none: a module of that name would make
/// `std::..` ambiguous in crates that `use tensor_ops::*`.
macro_rules! markers {
    ($($name:ident)*) => { $(
        #[doc(hidden)]
        pub mod $name {
            crate::__tensor_ops_not_a_map_op! {}
        }
    )* };
}

markers! {
    amax amin logsumexp var argmax argmin softmax log_softmax
    sum_all prod_all mean_all amax_all amin_all logsumexp_all
}
