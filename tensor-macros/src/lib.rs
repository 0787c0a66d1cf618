//! The `#[tensor_op]` attribute of tensor-ops.
//!
//! This is an implementation crate: use the attribute through `tensor_ops::tensor_op`
//! (`use tensor_ops::prelude::*;`), where its reference is documented — the attribute
//! arguments, the body language, composition, reductions and the generated functions, with
//! runnable examples (`cargo doc -p tensor-ops --open`). The generated code reaches the
//! library through `tensor_ops::__private`; `ARCHITECTURE.md` ("What `#[tensor_op]`
//! generates") describes it item by item.
//!
//! Layout (private modules): `attr` (attribute arguments), `dtype` (dtypes and groups),
//! `signature` and `lower` (validation, into `ir`), `callee` (the op a call names),
//! `rust_body` and `emit` (Rust), `cuda` (CUDA C), `errors` (spanned errors); reductions
//! (read by `reduce_def`, lowered by `lower` into the same IR, written by the same two
//! emitters): `reduce_emit`, `cuda_reducer`, `reduce_compose`.

mod attr;
mod callee;
mod cuda;
mod cuda_reducer;
mod dtype;
mod emit;
mod errors;
mod ir;
mod lower;
mod lower_const;
mod op;
mod reduce_compose;
mod reduce_def;
mod reduce_emit;
mod rust_body;
mod signature;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_reduce;

use proc_macro2::TokenStream;

/// The `#[tensor_op]` attribute (implementation; documented as `tensor_ops::tensor_op`).
#[proc_macro_attribute]
pub fn tensor_op(attr: proc_macro::TokenStream, item: proc_macro::TokenStream) -> proc_macro::TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The whole expansion, over `proc_macro2` types (testable outside a macro).
fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attr: attr::OpAttr = syn::parse2(attr)?;
    if attr.reduce.is_some() {
        let m: syn::ItemMod = syn::parse2(item).map_err(|e| {
            syn::Error::new(
                e.span(),
                "#[tensor_op(reduce)] goes on a module: `mod op { fn identity .. fold .. combine .. finish }`",
            )
        })?;
        if let Some(s) = &attr.sparse_intersection {
            return Err(syn::Error::new(
                s.span(),
                "`sparse_intersection` is for elementwise ops; a reduction states `sparse = sum|max|min`",
            ));
        }
        let def = reduce_def::parse_reduce(&attr, &m)?;
        return Ok(reduce_emit::expand(&def));
    }
    if let Some(w) = &attr.widen {
        return Err(syn::Error::new(w.span(), "`widen` is for reductions: #[tensor_op(reduce, widen, ...)]"));
    }
    if let Some(s) = &attr.sparse {
        return Err(syn::Error::new(
            s.span(),
            "`sparse = ..` is for reductions: #[tensor_op(reduce, sparse = sum, ...)]; an elementwise op states \
             `sparse_intersection`",
        ));
    }
    let f: syn::ItemFn = syn::parse2(item)?;
    let op = op::parse_op(attr, &f)?;
    if op.debug || std::env::var("TENSOR_OPS_DEBUG").is_ok_and(|v| v == "1") {
        for f in emit::cuda_fns(&op) {
            eprintln!("// #[tensor_op] {}: {}\n{}", op.name, f.name, f.source);
        }
    }
    Ok(emit::expand(&op))
}
