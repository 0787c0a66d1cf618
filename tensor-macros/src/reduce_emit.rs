//! Emits a reduction: its `ReduceSpec`, the four functions (generic over the one-lane
//! value), a `Reducer` per dtype, the CUDA C reducer, the rows (through
//! `register_reduce_rows!`, which names the devices), and the public fns `op`, `op_out`, `op_all`.

use crate::dtype::{Dtype, DtypeCode};
use crate::ir::OpPath;
use crate::reduce_def::{Finish, ReduceArg, ReduceDef, ReduceFn};
use crate::signature::{Bound, ScalarTy};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use tensor_core::registry::{Accumulate, ReduceOutput};

/// The stored Rust type of a dtype.
fn storage_type(d: Dtype) -> TokenStream {
    match d {
        Dtype::F16 => quote!(::tensor_ops::__private::half::f16),
        Dtype::BF16 => quote!(::tensor_ops::__private::half::bf16),
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

/// `ts` with every `ident` token replaced by `with` (the accumulator type in `T` → the same
/// type in the lane of `C`).
fn substitute(ts: TokenStream, ident: &syn::Ident, with: &TokenStream) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    ts.into_iter()
        .flat_map(|tt| -> Vec<TokenTree> {
            match tt {
                TokenTree::Ident(i) if i == *ident => with.clone().into_iter().collect(),
                TokenTree::Group(g) => {
                    let mut ng = Group::new(g.delimiter(), substitute(g.stream(), ident, with));
                    ng.set_span(g.span());
                    vec![TokenTree::Group(ng)]
                }
                other => vec![other],
            }
        })
        .collect()
}

/// The call of one of the four functions with `values` for its positional arguments.
fn call(f: &ReduceFn, values: &[TokenStream]) -> TokenStream {
    let name = &f.item.sig.ident;
    let mut next = values.iter();
    let args = f.args.iter().map(|a| match a {
        ReduceArg::Value => next.next().cloned().unwrap_or_default(),
        ReduceArg::Param(i) => {
            let field = format_ident!("p{}", i);
            quote!(self.#field)
        }
    });
    quote!(#name::<__L<C>>(#(#args),*))
}

/// (input, accumulate-in, output) dtypes of the row for dtype `d`: the core's rule (the one
/// place the macro decides a reduction row's dtypes; [`row_types`] spells them as Rust types).
fn row_dtypes(def: &ReduceDef, d: Dtype) -> (Dtype, Dtype, Dtype) {
    let rule = rule(def);
    (d, rule.accumulate(d), rule.result(d))
}

/// The CUDA C reducer (`reduce_cuda`) with the functions of the ops it calls, kept only
/// when tensor-ops has its `cuda` feature.
fn cuda_source(def: &ReduceDef, callees: &[OpPath], computes: &[Dtype]) -> syn::Result<TokenStream> {
    let p = quote!(::tensor_ops::__private);
    let reducer = crate::reduce_cuda::emit(def, callees)?;
    let source =
        crate::reduce_compose::cuda_source(&crate::reduce_cuda::reducer_name(&def.name), &reducer, callees, computes);
    Ok(quote! {
        #p::if_cuda! {
            /// The reducer in CUDA C (a struct template over the accumulate type).
            pub const CUDA_SOURCE: &str = #source;
        }
    })
}

/// The whole expansion.
pub fn expand(def: &ReduceDef) -> TokenStream {
    let callees = match crate::reduce_compose::callees(def) {
        Ok(c) => c,
        Err(e) => return e.to_compile_error(),
    };
    let computes = crate::reduce_compose::computes(def, |d| row_dtypes(def, d).1);
    let cuda = match cuda_source(def, &callees, &computes) {
        Ok(ts) => ts,
        Err(e) => return e.to_compile_error(),
    };
    let callee_checks = crate::reduce_compose::checks(def, &callees, &computes);
    let p = quote!(::tensor_ops::__private);
    let vis = &def.vis;
    let ident = &def.ident;
    let module = format_ident!("__tensor_op_{}", ident);
    let out_fn = format_ident!("{}_out", ident);
    let all_fn = format_ident!("{}_all", ident);
    let name = &def.name;
    let docs = &def.docs;
    let tp = &def.type_param;
    let acc_of = &def.acc;
    let acc_lane = substitute(quote!(#acc_of), tp, &quote!(__L<C>));
    let pnames: Vec<&syn::Ident> = def.params.iter().map(|(n, _)| n).collect();
    let pname_strs: Vec<String> = pnames.iter().map(|n| n.to_string()).collect();
    let ptys: Vec<TokenStream> = def.params.iter().map(|(_, t)| scalar_type(*t)).collect();
    let pfields: Vec<syn::Ident> = (0..def.params.len()).map(|i| format_ident!("p{}", i)).collect();
    let pidx: Vec<usize> = (0..def.params.len()).collect();
    let rule = rule_tokens(rule(def));
    let float_only = def.bound == Bound::Float;
    let summary = format!("reduction `{name}` (a #[tensor_op(reduce)])");
    let fns = def.fns.iter().map(|f| {
        let mut item = f.item.clone();
        item.vis = syn::Visibility::Inherited;
        item.sig.generics = syn::parse_quote!(<#tp: #p::ReduceValue>);
        item.attrs.push(syn::parse_quote!(#[inline(always)]));
        let params: Vec<syn::Ident> = f
            .args
            .iter()
            .filter_map(|a| match a {
                ReduceArg::Param(i) => Some(def.params[*i].0.clone()),
                ReduceArg::Value => None,
            })
            .collect();
        crate::reduce_compose::rewrite_rust(def, &params, &mut item.block);
        crate::reduce_arith::rewrite(&mut item.block);
        item
    });
    let [identity, fold, combine, finish] = &def.fns;
    let call_identity = call(identity, &[]);
    let call_fold = call(fold, &[quote!(acc), quote!(__L(#p::Element::cast::<C>(x))), quote!(index)]);
    let call_combine = call(combine, &[quote!(a), quote!(b)]);
    let call_finish = call(finish, &[quote!(acc), quote!(n as i64)]);
    let convert = match def.finish {
        Finish::Value => quote!(#p::Element::cast::<O>(r.0)),
        Finish::I64 | Finish::Bool => quote!(#p::Element::cast::<O>(r)),
    };
    let reducer = crate::reduce_cuda::reducer_name(&def.name);
    let rows = def.dtypes.iter().map(|&d| {
        let dt = d.dtype_path();
        let (i, c, o) = row_types(def, d);
        let (_, cd, od) = row_dtypes(def, d);
        let (ct, ot) = (cd.dtype_path(), od.dtype_path());
        quote! {
            #p::register_reduce_rows! {
                spec: &SPEC.op, dtype: #dt, compute: #ct, output: #ot,
                cpu: __Reducer<#i, #c, #o>, cuda_reducer: #reducer, cuda_source: CUDA_SOURCE,
            }
        }
    });
    let doc_example = format!(
        "Reduces over `dims` (non-empty, distinct, each < ndim; `keepdim` keeps them as size 1). Generated by `#[tensor_op(reduce)]`: `{ident}_out` writes into a given tensor, `{ident}_all` reduces every element."
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
                    defined_at: ::core::concat!(::core::module_path!(), " (", ::core::file!(), ":", ::core::line!(), ")"),
                    rows: #p::RowCache::new(),
                },
                output: #rule,
                has_identity: true,
            };

            #(#fns)*

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
                    #call_identity
                }
                #[inline(always)]
                fn fold(&self, acc: Self::Acc, x: I, index: i64) -> Self::Acc {
                    #call_fold
                }
                #[inline(always)]
                fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
                    #call_combine
                }
                #[inline(always)]
                fn finish(&self, acc: Self::Acc, n: usize) -> O {
                    let r = #call_finish;
                    #convert
                }
            }

            #(#rows)*

            #cuda
        }
    }
}
