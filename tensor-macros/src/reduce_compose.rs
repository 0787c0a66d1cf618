//! Calls of `#[tensor_op]` map ops inside a reduction's functions (`acc + square(x)`), as
//! map bodies make them: on the CPU the callee's `element::<T>` (generic over the one-lane
//! value the reduction computes in), in CUDA C the callee's `__device__` function of the
//! accumulate dtype, spliced into the reducer's source at compile time; the callee's dtype
//! rules apply (a `const` assertion spanned at the call).

use crate::dtype::{Dtype, DtypeCode};
use crate::errors::error;
use crate::ir::OpPath;
use crate::reduce_def::ReduceDef;
use crate::rust_body::callee_module;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprCall, ExprPath, Lit};

const OWN: [&str; 4] = ["identity", "fold", "combine", "finish"];

/// The path of `c` when it calls a map op (not `T::..`, not one of the four functions).
fn op_call<'c>(def: &ReduceDef, c: &'c ExprCall) -> Option<&'c ExprPath> {
    let Expr::Path(p) = &*c.func else { return None };
    let segs = &p.path.segments;
    let own = segs.len() == 1 && p.qself.is_none() && OWN.iter().any(|n| segs[0].ident == n);
    let t_fn = segs.len() == 2 && p.qself.is_none() && segs[0].ident == def.type_param;
    (!own && !t_fn).then_some(p)
}

/// The ops the four functions call, each once, in order of first use.
pub fn callees(def: &ReduceDef) -> syn::Result<Vec<OpPath>> {
    struct Find<'a> {
        def: &'a ReduceDef,
        found: Vec<OpPath>,
        err: Option<syn::Error>,
    }
    impl<'ast> Visit<'ast> for Find<'_> {
        fn visit_expr_call(&mut self, c: &'ast ExprCall) {
            visit::visit_expr_call(self, c);
            let Some(p) = op_call(self.def, c) else { return };
            let path = match crate::callee::op_path(p, c, &self.def.type_param) {
                Ok(path) => path,
                Err(e) => {
                    match &mut self.err {
                        Some(all) => all.combine(e),
                        None => self.err = Some(e),
                    }
                    return;
                }
            };
            if self.found.iter().any(|q| q.text() == path.text()) {
                return;
            }
            if let Some(q) = self.found.iter().find(|q| q.name() == path.name()) {
                let msg = format!(
                    "`{}` and `{}` are both called here: one reduction may call one op of each name (their CUDA \
                     functions share the name); call it through one path",
                    q.text(),
                    path.text()
                );
                self.err.get_or_insert_with(|| error(&c.func, msg));
                return;
            }
            self.found.push(path);
        }
    }
    let mut find = Find { def, found: Vec::new(), err: None };
    for f in &def.fns {
        find.visit_block(&f.item.block);
    }
    match find.err {
        Some(e) => Err(e),
        None => Ok(find.found),
    }
}

/// Rewrites the op calls of `block` into calls of the callees' `element::<T>`: literals and
/// the function's params become `Lit`s (converted as a map body's are), the rest are values.
pub fn rewrite_rust(def: &ReduceDef, params: &[syn::Ident], block: &mut syn::Block) {
    struct Rewrite<'a> {
        def: &'a ReduceDef,
        params: &'a [syn::Ident],
    }
    impl VisitMut for Rewrite<'_> {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            visit_mut::visit_expr_mut(self, e);
            let Expr::Call(c) = e else { return };
            let Some(p) = op_call(self.def, c) else { return };
            let Ok(path) = crate::callee::op_path(p, c, &self.def.type_param) else { return };
            let p = quote!(::tensor_ops::__private);
            let module = callee_module(&path);
            let element = syn::Ident::new("element", path.name().span());
            let tp = &self.def.type_param;
            let args = c.args.iter().map(|a| match a {
                Expr::Lit(l) => {
                    let lit = match &l.lit {
                        Lit::Int(i) if i.suffix().is_empty() => quote!(#i as i64),
                        Lit::Float(f) if f.suffix().is_empty() => quote!(#f as f64),
                        other => quote!(#other),
                    };
                    quote!(#p::Lit(#p::Scalar::from(#lit)))
                }
                Expr::Path(q) if q.path.get_ident().is_some_and(|i| self.params.contains(i)) => {
                    quote!(#p::Lit(#p::Scalar::from(#q)))
                }
                other => quote!(#other),
            });
            *e = syn::parse_quote!(#module::#element::<#tp>(#(#args),*));
        }
    }
    Rewrite { def, params }.visit_block_mut(block);
}

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
