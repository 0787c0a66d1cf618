//! Emits a reduction: its `ReduceSpec`, the `Reducer` whose four methods are the lowered
//! functions ([`crate::lower::lower_reduce`], written by the map bodies' Rust emitter over
//! the one-lane value), the CUDA C reducer ([`crate::cuda_reducer`]), the rows (through
//! `register_reduce_rows!`, which names the devices), and the public fns `op`, `op_out`,
//! `op_all`.

use crate::dtype::{Dtype, DtypeCode};
use crate::ir::{OpPath, ReduceBody, Ty};
use crate::reduce_def::{Finish, ReduceDef};
use crate::signature::{Bound, ScalarTy};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use tensor_core::registry::{Accumulate, ReduceOutput};

/// The stored Rust type of a dtype.
fn storage_type(d: Dtype) -> TokenStream {
    match d {
        Dtype::F16 => quote!(::tensor_ops::__private::half::f16),
        Dtype::BF16 => quote!(::tensor_ops::__private::half::bf16),
        Dtype::F8E4M3 => quote!(::tensor_ops::__private::F8E4M3),
        Dtype::F8E5M2 => quote!(::tensor_ops::__private::F8E5M2),
        other => {
            let i = proc_macro2::Ident::new(other.name(), Span::call_site());
            quote!(#i)
        }
    }
}

/// The reduction's dtype rule, as the core writes it ([`ReduceOutput`]): `widen` accumulates
/// bool/integers in i64, a `Float` bound in f32, else each dtype as itself; the result is
/// that value, or the `i64`/`bool` the finish returns.
fn rule(def: &ReduceDef) -> ReduceOutput {
    let (acc, value) = if def.widen {
        (Accumulate::Widen, ReduceOutput::Widen)
    } else if def.bound == Bound::Float {
        (Accumulate::Float, ReduceOutput::Float)
    } else {
        (Accumulate::Same, ReduceOutput::Same)
    };
    match def.finish {
        Finish::Value => value,
        Finish::I64 => ReduceOutput::Fixed(acc, Dtype::I64),
        Finish::Bool => ReduceOutput::Fixed(acc, Dtype::Bool),
    }
}

/// The tokens of a rule (the spec's `output`).
fn rule_tokens(rule: ReduceOutput) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    match rule {
        ReduceOutput::Same => quote!(#p::ReduceOutput::Same),
        ReduceOutput::Widen => quote!(#p::ReduceOutput::Widen),
        ReduceOutput::Float => quote!(#p::ReduceOutput::Float),
        ReduceOutput::Fixed(acc, d) => {
            let acc = proc_macro2::Ident::new(&format!("{acc:?}"), Span::call_site());
            let d = d.dtype_path();
            quote!(#p::ReduceOutput::Fixed(#p::Accumulate::#acc, #d))
        }
    }
}

/// (input, accumulate-in, output) Rust types of the row for dtype `d` (as [`row_dtypes`]).
fn row_types(def: &ReduceDef, d: Dtype) -> (TokenStream, TokenStream, TokenStream) {
    let (input, compute, out) = row_dtypes(def, d);
    (storage_type(input), storage_type(compute), storage_type(out))
}

fn scalar_type(t: ScalarTy) -> TokenStream {
    let i = proc_macro2::Ident::new(t.name(), Span::call_site());
    quote!(#i)
}

/// The Rust type of a reduction type over the one-lane value `__L<C>`.
fn rust_type(ty: &Ty) -> TokenStream {
    match ty {
        Ty::Value => quote!(__L<C>),
        Ty::Mask => quote!(bool),
        Ty::I64 => quote!(i64),
        Ty::Tuple(items) => {
            let items = items.iter().map(rust_type);
            quote!((#(#items,)*))
        }
    }
}

/// The four methods' bodies (identity, fold, combine, finish) over `__L<C>`, reading the
/// arguments the `Reducer` impl names and the params from `self.p<i>`.
fn rust_bodies(def: &ReduceDef, body: &ReduceBody) -> [TokenStream; 4] {
    let params: Vec<syn::Ident> = (0..def.params.len()).map(|i| format_ident!("p{}", i)).collect();
    let inputs: [&[&str]; 4] =
        [&[], &["tops_acc", "tops_x", "tops_index"], &["tops_a", "tops_b"], &["tops_acc", "tops_n"]];
    std::array::from_fn(|k| {
        let idents: Vec<syn::Ident> = inputs[k].iter().map(|i| format_ident!("{}", i)).collect();
        crate::rust_body::emit_rust_reduce(&body.fns[k], &body.locals, &body.callees, &idents, &params, quote!(__L<C>))
    })
}

/// (input, accumulate-in, output) dtypes of the row for dtype `d`: the core's rule (the one
/// place the macro decides a reduction row's dtypes; [`row_types`] spells them as Rust types).
fn row_dtypes(def: &ReduceDef, d: Dtype) -> (Dtype, Dtype, Dtype) {
    let rule = rule(def);
    (d, rule.accumulate(d), rule.result(d))
}

/// The CUDA C reducer ([`crate::cuda_reducer`]) with the functions of the ops it calls,
/// kept only when tensor-ops has its `cuda` feature.
fn cuda_source(def: &ReduceDef, body: &ReduceBody, callees: &[OpPath], computes: &[Dtype]) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let reducer = crate::cuda_reducer::emit(def, body);
    let source =
        crate::reduce_compose::cuda_source(&crate::cuda_reducer::reducer_name(&def.name), &reducer, callees, computes);
    quote! {
        #p::if_cuda! {
            /// The reducer in CUDA C (a struct template over the accumulate type).
            pub const CUDA_SOURCE: &str = #source;
        }
    }
}

/// The whole expansion.
pub fn expand(def: &ReduceDef) -> TokenStream {
    let body = match crate::lower::lower_reduce(def) {
        Ok(b) => b,
        Err(e) => return e.to_compile_error(),
    };
    let callees = &body.callees;
    let computes = crate::reduce_compose::computes(def, |d| row_dtypes(def, d).1);
    let cuda = cuda_source(def, &body, callees, &computes);
    let callee_checks = crate::reduce_compose::checks(def, callees, &computes);
    let p = quote!(::tensor_ops::__private);
    let vis = &def.vis;
    let ident = &def.ident;
    let module = format_ident!("__tensor_op_{}", ident);
    let out_fn = format_ident!("{}_out", ident);
    let all_fn = format_ident!("{}_all", ident);
    let all_out_fn = format_ident!("{}_all_out", ident);
    let name = &def.name;
    let docs = &def.docs;
    let acc_lane = rust_type(&body.acc);
    let pnames: Vec<&syn::Ident> = def.params.iter().map(|(n, _)| n).collect();
    let pname_strs: Vec<String> = pnames.iter().map(|n| n.to_string()).collect();
    let ptys: Vec<TokenStream> = def.params.iter().map(|(_, t)| scalar_type(*t)).collect();
    let pfields: Vec<syn::Ident> = (0..def.params.len()).map(|i| format_ident!("p{}", i)).collect();
    let pidx: Vec<usize> = (0..def.params.len()).collect();
    let rule = rule_tokens(rule(def));
    let float_only = def.bound == Bound::Float;
    let sparse = match def.sparse.as_ref().map(|k| k.to_string()).as_deref() {
        Some("sum") => format_ident!("Sum"),
        Some("max") => format_ident!("Max"),
        Some("min") => format_ident!("Min"),
        _ => format_ident!("Unsupported"),
    };
    let summary = format!("reduction `{name}` (a #[tensor_op(reduce)])");
    let [identity, fold, combine, finish] = rust_bodies(def, &body);
    let convert = match def.finish {
        Finish::Value => quote!(#p::Element::cast::<O>(r.0)),
        Finish::I64 | Finish::Bool => quote!(#p::Element::cast::<O>(r)),
    };
    // A fold without `index`: runs fold without the index arithmetic (same order, same bits).
    let indexed = def.fns[1].args.iter().filter(|a| matches!(a, crate::reduce_def::ReduceArg::Value)).count() == 3;
    let fold_run = if indexed {
        quote!()
    } else {
        quote! {
            #[inline(always)]
            fn fold_run(&self, xs: &[I], _: i64, _: i64) -> Self::Acc {
                #p::fold_run_unindexed(self, xs)
            }
        }
    };
    let reducer = crate::cuda_reducer::reducer_name(&def.name);
    // A reduction with a sparse form has rows under the sparse layouts too.
    let layouts = if def.sparse.is_some() { quote!(Strided, SparseCoo, SparseCsr) } else { quote!(Strided) };
    let rows = def.dtypes.iter().map(|&d| {
        let dt = d.dtype_path();
        let (i, c, o) = row_types(def, d);
        let (_, cd, od) = row_dtypes(def, d);
        let (ct, ot) = (cd.dtype_path(), od.dtype_path());
        quote! {
            #p::register_reduce_rows! {
                spec: &SPEC.op, layouts: [#layouts], dtype: #dt, compute: #ct, output: #ot,
                cpu: __Reducer<#i, #c, #o>, cuda_reducer: #reducer, cuda_source: CUDA_SOURCE,
            }
        }
    });
    let doc_example = format!(
        "Reduces over `dims` (non-empty, distinct, each < ndim; `keepdim` keeps them as size 1). Generated by `#[tensor_op(reduce)]`: `{ident}_out` writes into a given tensor, `{ident}_all` reduces every element (`{ident}_all_out` into a given 0-dim tensor)."
    );
    quote! {
        // The hidden module under the reduction's own name (type namespace): `l2_norm::SPEC`
        // names the reduction for fused chains (`Expr::reduce`).
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #module as #ident;
        #(#docs)*
        #[doc = ""]
        #[doc = #doc_example]
        #vis fn #ident(a: &#p::Tensor, dims: &[usize], keepdim: bool #(, #pnames: #ptys)*) -> #p::Result<#p::Tensor> {
            #p::call_reduce_new(&#module::SPEC, a, #p::ReduceDims::Dims(dims), keepdim, &[#(#p::Scalar::from(#pnames)),*])
        }
        #[doc = concat!("[`", stringify!(#ident), "`](fn@", stringify!(#ident), ") into `out` (exactly the result's shape, a dtype the result can be cast to).")]
        #vis fn #out_fn(a: &#p::Tensor, dims: &[usize], keepdim: bool #(, #pnames: #ptys)*, out: &#p::Tensor) -> #p::Result<()> {
            #p::call_reduce(&#module::SPEC, a, #p::ReduceDims::Dims(dims), keepdim, &[#(#p::Scalar::from(#pnames)),*], Some(out))
                .map(|_| ())
        }
        #[doc = concat!("[`", stringify!(#ident), "`](fn@", stringify!(#ident), ") of every element → a 0-dim tensor.")]
        #vis fn #all_fn(a: &#p::Tensor #(, #pnames: #ptys)*) -> #p::Result<#p::Tensor> {
            #p::call_reduce_new(&#module::SPEC, a, #p::ReduceDims::All, false, &[#(#p::Scalar::from(#pnames)),*])
        }
        #[doc = concat!("[`", stringify!(#all_fn), "`](fn@", stringify!(#all_fn), ") into a 0-dim `out` (a dtype the result can be cast to).")]
        #vis fn #all_out_fn(a: &#p::Tensor #(, #pnames: #ptys)*, out: &#p::Tensor) -> #p::Result<()> {
            #p::call_reduce(&#module::SPEC, a, #p::ReduceDims::All, false, &[#(#p::Scalar::from(#pnames)),*], Some(out))
                .map(|_| ())
        }
        #[doc(hidden)]
        #[allow(non_snake_case, unused_parens, unused_variables, dead_code, clippy::all)]
        #vis mod #module {
            // The definition's scope, so that the ops the functions call resolve as written.
            #[allow(unused_imports)]
            use super::*;
            use #p::Value as _;
            use #p::Lane as __L;

            #callee_checks
            // What a map body calling this reduction finds: an error saying what it may call.
            #p::not_a_map_op! {}

            /// What the op is.
            pub static SPEC: #p::ReduceSpec = #p::ReduceSpec {
                op: #p::OpSpec {
                    name: #name,
                    arity: 1,
                    params: &[#(#pname_strs),*],
                    bool_output: false,
                    float_only: #float_only,
                    doc: #summary,
                    internal: false,
                    sparse_intersection: false,
                    defined_at: ::core::concat!(::core::module_path!(), " (", ::core::file!(), ":", ::core::line!(), ")"),
                    rows: #p::RowCache::new(),
                },
                output: #rule,
                has_identity: true,
                sparse: #p::SparseReduce::#sparse,
            };

            /// The reducer for input `I`, accumulating in `C`, stored as `O`.
            pub struct __Reducer<I, C, O> {
                #(#pfields: #ptys,)*
                _types: ::core::marker::PhantomData<fn() -> (I, C, O)>,
            }

            impl<I: #p::Element, C: #p::Element, O: #p::Element> #p::Reducer for __Reducer<I, C, O>
            where
                __L<C>: #p::ReduceValue,
            {
                type In = I;
                type Acc = #acc_lane;
                type Out = O;
                fn new(params: &[#p::Scalar]) -> Self {
                    Self {
                        #(#pfields: params.get(#pidx).map(|s| s.to::<#ptys>()).unwrap_or_default(),)*
                        _types: ::core::marker::PhantomData,
                    }
                }
                #[inline(always)]
                fn identity(&self) -> Self::Acc {
                    #identity
                }
                #[inline(always)]
                fn fold(&self, tops_acc: Self::Acc, tops_x: I, tops_index: i64) -> Self::Acc {
                    let tops_x = __L(#p::Element::cast::<C>(tops_x));
                    #fold
                }
                #[inline(always)]
                fn combine(&self, tops_a: Self::Acc, tops_b: Self::Acc) -> Self::Acc {
                    #combine
                }
                #[inline(always)]
                fn finish(&self, tops_acc: Self::Acc, tops_n: usize) -> O {
                    let tops_n = tops_n as i64;
                    let r = #finish;
                    #convert
                }
                #fold_run
            }

            #(#rows)*

            #cuda
        }
    }
}
