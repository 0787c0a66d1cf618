//! Calls of `#[tensor_op]` map ops inside a reduction's functions (`acc + square(x)`): the
//! lowering records them as map bodies' calls ([`crate::ir::Node::Call`]); the Rust emitter
//! calls the callee's `element::<V>` over the one-lane value the reduction computes in.
//! This file gives the rest: the callee's dtype rules (a `const` assertion spanned at the
//! call) and, in CUDA C, the callees' `__device__` functions of each accumulate dtype
//! spliced into the reducer's source at compile time behind a dispatcher per callee.

use crate::dtype::{Dtype, DtypeCode};
use crate::ir::OpPath;
use crate::reduce_def::ReduceDef;
use crate::rust_body::callee_module;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// The distinct accumulate-in dtypes of the rows (what a callee runs in).
pub fn computes(def: &ReduceDef, compute_of: impl Fn(Dtype) -> Dtype) -> Vec<Dtype> {
    let mut out: Vec<Dtype> = Vec::new();
    for &d in &def.dtypes {
        let c = compute_of(d);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// Per callee and accumulate-in dtype, a `const` assertion (spanned at the call) that the
/// callee lists that dtype.
pub fn checks(def: &ReduceDef, callees: &[OpPath], computes: &[Dtype]) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let mut out = Vec::new();
    for callee in callees {
        let m = callee_module(callee);
        for c in computes {
            let dt = c.dtype_path();
            let msg = format!(
                "reduction `{}` accumulates in {} but calls `{}`, which has no {} kernel: list only dtypes whose \
                 accumulate dtype every op it calls lists",
                def.name,
                c.name(),
                callee.text(),
                c.name()
            );
            out.push(quote_spanned! {callee.name().span()=>
                const _: () = ::core::assert!(#p::lists_dtype(#m::DTYPES, #dt), #msg);
            });
        }
    }
    quote!(#(#out)*)
}

/// The C++ name of the dispatcher of callee `k`: a struct template over the accumulate type
/// whose `call` forwards to the callee's function of that dtype.
pub fn dispatcher(reducer: &str, k: usize) -> String {
    format!("{reducer}_callee{k}")
}

/// The `CUDA_SOURCE` of a reduction that calls ops: the callees' functions (each behind its
/// include guard), a dispatcher per callee, then the reducer.
pub fn cuda_source(reducer: &str, source: &str, callees: &[OpPath], computes: &[Dtype]) -> TokenStream {
    if callees.is_empty() {
        return quote!(#source);
    }
    let p = quote!(::tensor_ops::__private);
    let mut parts = Vec::new();
    for callee in callees {
        let m = callee_module(callee);
        for c in computes {
            let dt = c.dtype_path();
            parts.push(quote!(#p::cuda_source_of(#m::CUDA_SOURCES, #dt)));
        }
    }
    for (k, callee) in callees.iter().enumerate() {
        let m = callee_module(callee);
        let name = dispatcher(reducer, k);
        let open = format!("template <class C> struct {name};\n");
        parts.push(quote!(#open));
        for c in computes {
            let dt = c.dtype_path();
            let f = quote!(#p::cuda_source_of(#m::CUDA_FUNCTIONS, #dt));
            let head = format!(
                "template <> struct {name}<{}> {{\n    template <class... A> static __device__ __forceinline__ auto \
                 call(A... a) -> decltype(",
                c.c_type()
            );
            parts.push(quote!(#head));
            parts.push(f.clone());
            parts.push(quote!("(a...)) {\n        return "));
            parts.push(f);
            parts.push(quote!("(a...);\n    }\n};\n"));
        }
    }
    parts.push(quote!(#source));
    quote!(#p::concat_source!(#(#parts),*))
}
