//! Rust emission of a whole op: the hidden module (spec, body struct, per-dtype CPU kernels,
//! CUDA sources, registry rows through `register_map_rows!`) and the public fns.

use crate::cuda::{emit_cuda, CudaFn, Piece};
use crate::dtype::DtypeCode;
use crate::op::OpDef;
use crate::rust_body::{callee_module, emit_rust};
use crate::signature::{Arg, Bound};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

/// The CUDA C functions of `op`, one per listed dtype.
pub fn cuda_fns(op: &OpDef) -> Vec<CudaFn> {
    op.dtypes.iter().map(|&d| emit_cuda(&op.name, &op.sig, &op.body, d)).collect()
}

/// Everything `#[tensor_op]` expands to.
pub fn expand(op: &OpDef) -> TokenStream {
    let module = hidden_module(op);
    let public = public_fns(op);
    let (vis, ident, hidden) = (&op.vis, &op.ident, module_ident(op));
    // The hidden module also under the fn's own name (the type namespace, beside the fn):
    // whoever can name the op `sigmoid` can name `sigmoid::element` to call it in a body.
    quote! {
        #module
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #hidden as #ident;
        #public
    }
}

/// The per-dtype constant names: `CUDA_SOURCE_F32`, `CUDA_FUNCTION_F32`.
fn cuda_consts(dtype: crate::dtype::Dtype) -> (Ident, Ident) {
    let up = dtype.name().to_uppercase();
    (format_ident!("CUDA_SOURCE_{}", up), format_ident!("CUDA_FUNCTION_{}", up))
}

/// 64-bit FNV-1a of `text`, for include guards that differ when definitions differ.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// The `CUDA_SOURCE_<D>` const of one dtype: the callees' sources (each behind its own
/// include guard, so shared callees appear once) followed by this op's guarded function,
/// whose calls name the callees' functions through their `CUDA_FUNCTION_<D>` consts.
fn cuda_source_const(op: &OpDef, dtype: crate::dtype::Dtype, f: &CudaFn) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let (source, _) = cuda_consts(dtype);
    let dt = dtype.dtype_path();
    if op.body.callees.is_empty() {
        let text = guarded(f, &f.source);
        return quote!(pub const #source: &str = #text;);
    }
    let guard = guard_name(f, &f.source);
    let mut parts = Vec::new();
    for callee in &op.body.callees {
        let m = callee_module(callee);
        parts.push(quote!(#p::cuda_source_of(#m::CUDA_SOURCES, #dt)));
    }
    let open = format!("#ifndef {guard}\n#define {guard}\n");
    parts.push(quote!(#open));
    for piece in f.pieces() {
        parts.push(match piece {
            Piece::Text(t) => quote!(#t),
            Piece::Callee(i) => {
                let m = callee_module(&op.body.callees[i]);
                quote!(#p::cuda_source_of(#m::CUDA_FUNCTIONS, #dt))
            }
        });
    }
    parts.push(quote!("#endif\n"));
    quote!(pub const #source: &str = #p::concat_source!(#(#parts),*);)
}

/// The include guard of `f` with source `text`: differs when definitions differ.
fn guard_name(f: &CudaFn, text: &str) -> String {
    format!("TOPS_FN_{}_{:016x}", f.name, fnv(text))
}

/// `f`'s text (no calls) inside its include guard.
fn guarded(f: &CudaFn, text: &str) -> String {
    let guard = guard_name(f, text);
    format!("#ifndef {guard}\n#define {guard}\n{text}#endif\n")
}

/// Per called op and listed dtype, a `const` assertion (spanned at the call) that the callee
/// lists the dtype too: the callee's dtype rules apply inside a composed body.
fn callee_checks(op: &OpDef) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let mut out = Vec::new();
    for callee in &op.body.callees {
        let m = callee_module(callee);
        for d in &op.dtypes {
            let dt = d.dtype_path();
            let msg = format!(
                "`{}` lists {} but calls `{}`, which has no {} kernel: list only dtypes that every op it calls lists",
                op.name,
                d.name(),
                callee.text(),
                d.name()
            );
            let span = callee.name().span();
            out.push(quote_spanned! {span=>
                const _: () = ::core::assert!(#p::lists_dtype(#m::DTYPES, #dt), #msg);
            });
        }
    }
    quote!(#(#out)*)
}

/// `__tensor_op_<fn>`: the name of the hidden module.
pub fn module_ident(op: &OpDef) -> Ident {
    format_ident!("__tensor_op_{}", op.ident)
}

fn hidden_module(op: &OpDef) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let module = module_ident(op);
    let vis = &op.vis;
    let name = &op.name;
    let inputs: Vec<&Ident> = op.sig.inputs();
    let params = op.sig.params();
    let arity = inputs.len();
    let param_idents: Vec<Ident> = params.iter().map(|(i, _)| (*i).clone()).collect();
    let param_names: Vec<String> = param_idents.iter().map(|i| i.to_string()).collect();
    let param_tys: Vec<Ident> = params.iter().map(|(_, t)| Ident::new(t.name(), Span::call_site())).collect();
    let predicate = op.sig.predicate;
    let float_only = op.sig.bound == Bound::Float;
    let summary = op.summary();
    let internal = op.is_hidden();
    let sparse_intersection = op.sparse_intersection;

    let input_idents: Vec<Ident> = inputs.iter().map(|i| (*i).clone()).collect();
    let body = emit_rust(&op.body, &input_idents, &param_idents);
    let (body_trait, ret, block_fn) = if predicate {
        (quote!(#p::PredBody<#arity>), quote!(<V as #p::Value>::Mask), quote!(#p::pred_block))
    } else {
        (quote!(#p::MapBody<#arity>), quote!(V), quote!(#p::map_block))
    };
    let indices = 0..params.len();
    let build_body = quote!(Body { #(#param_idents: params[#indices].to::<#param_tys>()),* });

    let cuda = cuda_fns(op);
    let mut kernels = Vec::new();
    // The one-pass map over quantized bytes (qint8/quint8 per tensor), over the f32 body:
    // one fn per op, registered with those dtypes' (quantized) rows (not for predicates,
    // whose output is bool).
    let byte_coded = |d: crate::dtype::Dtype| {
        use crate::dtype::Dtype;
        !predicate && matches!(d, Dtype::QInt8 | Dtype::QUInt8 | Dtype::F8E4M3 | Dtype::F8E5M2)
    };
    if op.dtypes.iter().any(|d| byte_coded(*d)) {
        let safety = format!(
            "The one-pass CPU map of `{name}` over byte codes (qint8, quint8, the 8-bit floats; `ByteMapFn`).\n\n# Safety\n\nThe `ByteMapFn` \
             contract: `out` is valid for `n` one-byte writes, each of the {arity} `inputs` for `n` one-byte reads, \
             stored as `codes` says; `out` equals an input or overlaps none; `params` holds the op's {} params.",
            params.len()
        );
        kernels.push(quote! {
            #[doc = #safety]
            unsafe fn cpu_bytes(
                out: *mut u8,
                inputs: &[*const u8],
                n: usize,
                params: &[#p::Scalar],
                codes: &#p::ByteCodes,
                store: #p::Store,
            ) -> bool {
                let body = #build_body;
                // SAFETY: this fn's contract is map_bytes's (see the doc above).
                unsafe { #p::map_bytes::<#arity, Body>(out, inputs, n, &body, codes, store) }
            }
        });
    }
    for dtype in &op.dtypes {
        let bytes = if byte_coded(*dtype) { quote!(Some(cpu_bytes)) } else { quote!(None) };
        let f = format_ident!("cpu_{}", dtype.name());
        let dt = dtype.dtype_path();
        let compute = dtype.compute().dtype_path();
        let output = if predicate { crate::dtype::Dtype::Bool.dtype_path() } else { compute.clone() };
        let elem = dtype.compute_rust_type();
        let safety = format!(
            "CPU block kernel of `{name}` for {} rows (computes in {}).\n\n# Safety\n\nThe `MapFn` contract: `out` \
             is valid for `n` writes of the output dtype, each of the {arity} `inputs` for `n` reads of {}, `out` \
             equals an input or overlaps none, and `params` holds the op's {} params. This is exactly the contract \
             of `{}_block`, which the body forwards to.",
            dtype.name(),
            dtype.compute().name(),
            dtype.compute().name(),
            params.len(),
            if predicate { "pred" } else { "map" },
        );
        let (source, function) = cuda_consts(*dtype);
        // Quantized rows: the f32 kernel (CPU) and function (CUDA), their operands
        // dequantized on load and quantized on store by the drivers.
        let f32_listed = op.dtypes.contains(&crate::dtype::Dtype::F32);
        if dtype.is_quantized() && f32_listed {
            // The f32 row's kernel is this row's (same compute and output dtypes).
            let f32_fn = format_ident!("cpu_f32");
            kernels.push(quote! {
                #p::register_quantized_map_rows! {
                    spec: &SPEC, dtype: #dt, compute: #compute, output: #output,
                    cpu: #f32_fn, cpu_bytes: #bytes, cuda_function: #function, cuda_source: #source,
                }
            });
            continue;
        }
        let register = if dtype.is_quantized() {
            quote!(#p::register_quantized_map_rows! {
                spec: &SPEC, dtype: #dt, compute: #compute, output: #output,
                cpu: #f, cpu_bytes: #bytes, cuda_function: #function, cuda_source: #source,
            })
        } else {
            quote!(#p::register_map_rows! {
                spec: &SPEC, dtype: #dt, compute: #compute, output: #output,
                cpu: #f, cpu_bytes: #bytes, cuda_function: #function, cuda_source: #source,
            })
        };
        kernels.push(quote! {
            #[doc = #safety]
            unsafe fn #f(out: *mut u8, inputs: &[*const u8], n: usize, params: &[#p::Scalar], store: #p::Store) {
                let body = #build_body;
                // SAFETY: this fn's contract is the block function's contract (see the doc above).
                unsafe { #block_fn::<#elem, #arity, Body>(out, inputs, n, &body, store) }
            }
            // One row per linked device (CUDA only with tensor-ops' `cuda` feature).
            #register
        });
    }
    let limits = limit_checks(op);
    let callee_checks = callee_checks(op);
    let dts: Vec<TokenStream> = op.dtypes.iter().map(|d| d.dtype_path()).collect();
    let source_consts = op.dtypes.iter().zip(&cuda).map(|(d, f)| cuda_source_const(op, *d, f));
    let (sources, functions): (Vec<Ident>, Vec<Ident>) = op.dtypes.iter().map(|d| cuda_consts(*d)).unzip();
    let function_names = cuda.iter().map(|c| &c.name);
    let functions2 = functions.clone();
    let elem_inputs: Vec<TokenStream> = input_idents.iter().map(|i| quote!(#i: impl #p::ComposeInput<V>)).collect();
    let elem_params: Vec<TokenStream> =
        param_idents.iter().zip(&param_tys).map(|(i, t)| quote!(#i: impl #p::ComposeParam<#t>)).collect();
    let dts2 = dts.clone();
    let dts3 = dts.clone();
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_parens, unused_variables, unused_braces, dead_code, clippy::all)]
        #vis mod #module {
            // The definition's scope, so that the ops a body calls resolve as written.
            #[allow(unused_imports)]
            use super::*;

            #limits
            #callee_checks

            /// What the op is.
            pub static SPEC: #p::OpSpec = #p::OpSpec {
                name: #name,
                arity: #arity,
                params: &[#(#param_names),*],
                bool_output: #predicate,
                float_only: #float_only,
                doc: #summary,
                internal: #internal,
                sparse_intersection: #sparse_intersection,
                defined_at: ::core::concat!(::core::module_path!(), " (", ::core::file!(), ":", ::core::line!(), ")"),
                rows: #p::RowCache::new(),
            };
            /// The listed dtypes.
            pub const DTYPES: &[#p::DType] = &[#(#dts),*];
            #(#source_consts)*
            #(pub const #functions2: &str = #function_names;)*
            /// The CUDA C `__device__` function per dtype (with the functions of the ops it
            /// calls, each behind an include guard).
            pub const CUDA_SOURCES: &[(#p::DType, &str)] = &[#((#dts2, #sources)),*];
            /// The name of the CUDA C function per dtype.
            pub const CUDA_FUNCTIONS: &[(#p::DType, &str)] = &[#((#dts3, #functions)),*];

            /// The op on element values, for the bodies of other ops (`sigmoid(x)` in a
            /// `#[tensor_op]` body calls this): tensor arguments take values or literals,
            /// params take literals or the caller's params.
            #[inline(always)]
            pub fn element<V: #p::Value>(#(#elem_inputs,)* #(#elem_params),*) -> #ret {
                let __tensor_op_body = Body { #(#param_idents: #p::ComposeParam::param(#param_idents)),* };
                <Body as #body_trait>::call(&__tensor_op_body, [#(#p::ComposeInput::input(#input_idents)),*])
            }

            /// The body, instantiated on scalars and on SIMD lanes.
            struct Body {
                #(#param_idents: #param_tys),*
            }

            impl #body_trait for Body {
                #[inline(always)]
                fn call<V: #p::Value>(&self, [#(#input_idents),*]: [V; #arity]) -> #ret {
                    #body
                }
            }

            #(#kernels)*
        }
    }
}

/// One `const` assertion per tensor argument and per param that its index is below
/// `tensor_core::MAX_INPUTS` / `MAX_PARAMS` (the one definition of each limit, which the
/// macro cannot read), spanned at the argument: the first argument past a limit is a
/// compile error pointing at it, with `tensor_core::limits::TOO_MANY_*` as the message.
fn limit_checks(op: &OpDef) -> TokenStream {
    let core = quote!(::tensor_ops::__private::tensor_core);
    let inputs = op.sig.inputs().into_iter().enumerate().map(|(i, ident)| {
        quote_spanned! {ident.span()=>
            const _: () = ::core::assert!(#i < #core::MAX_INPUTS, "{}", #core::limits::TOO_MANY_INPUTS);
        }
    });
    let params = op.sig.params().into_iter().enumerate().map(|(i, (ident, _))| {
        quote_spanned! {ident.span()=>
            const _: () = ::core::assert!(#i < #core::MAX_PARAMS, "{}", #core::limits::TOO_MANY_PARAMS);
        }
    });
    quote!(#(#inputs)* #(#params)*)
}

fn public_fns(op: &OpDef) -> TokenStream {
    let p = quote!(::tensor_ops::__private);
    let module = module_ident(op);
    let (vis, docs, attrs) = (&op.vis, &op.docs, &op.attrs);
    let ident = &op.ident;
    let inplace = format_ident!("{}_", ident);
    let out_fn = format_ident!("{}_out", ident);
    let mut args = Vec::new();
    for a in &op.sig.args {
        args.push(match a {
            Arg::Tensor(i) => quote!(#i: &#p::Tensor),
            Arg::Param(i, t) => {
                let t = Ident::new(t.name(), Span::call_site());
                quote!(#i: #t)
            }
        });
    }
    let taken = |s: &str| op.sig.args.iter().any(|a| matches!(a, Arg::Tensor(i) | Arg::Param(i, _) if i == s));
    let out = if taken("out") { format_ident!("out_tensor") } else { format_ident!("out") };
    let inputs = op.sig.inputs();
    let params: Vec<&Ident> = op.sig.params().into_iter().map(|(i, _)| i).collect();
    let scalars = quote!(&[#(#p::Scalar::from(#params)),*]);
    let dtypes: Vec<&str> = op.dtypes.iter().map(|d| d.name()).collect();
    let what = if op.sig.predicate { "`true`/`false` per element (a `bool` tensor)" } else { "per element" };
    let note = format!(
        "Elementwise op `{}` (generated by `#[tensor_op]`), computing {what}: `{}`. Inputs broadcast; dtypes: {}{}.",
        op.name,
        op.body_text,
        dtypes.join(", "),
        " (16-bit floats compute in f32)",
    );
    let first = inputs[0];
    let new_note = "Returns a new tensor.";
    let inplace_note = format!("In place: writes the result into `{first}`.");
    let out_note = format!("Writes the result into `{out}`, which must have the broadcast shape.");
    let sep = if docs.is_empty() { quote!() } else { quote!(#[doc = ""]) };
    quote! {
        #(#docs)* #sep #[doc = #note] #[doc = ""] #[doc = #new_note]
        #(#attrs)*
        #vis fn #ident(#(#args),*) -> #p::Result<#p::Tensor> {
            #p::call_map_new(&#module::SPEC, &[#(#inputs),*], #scalars)
        }

        #(#docs)* #sep #[doc = #note] #[doc = ""] #[doc = #inplace_note]
        #(#attrs)*
        #vis fn #inplace(#(#args),*) -> #p::Result<()> {
            #p::call_map_inplace(&#module::SPEC, &[#(#inputs),*], #scalars)
        }

        #(#docs)* #sep #[doc = #note] #[doc = ""] #[doc = #out_note]
        #(#attrs)*
        #vis fn #out_fn(#(#args,)* #out: &#p::Tensor) -> #p::Result<()> {
            #p::call_map_out(&#module::SPEC, &[#(#inputs),*], #scalars, #out)
        }
    }
}
