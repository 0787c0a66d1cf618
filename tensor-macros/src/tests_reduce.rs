//! Unit tests of reductions lowered through the map bodies' IR: the CUDA C reducer the one
//! C emitter writes, and the spanned errors of what the reduction language refuses.

use crate::attr::OpAttr;
use crate::ir::{Node, Ty};
use crate::reduce_def::parse_reduce;
use quote::quote;

fn lowered(item: proc_macro2::TokenStream) -> syn::Result<(crate::reduce_def::ReduceDef, crate::ir::ReduceBody)> {
    let attr: OpAttr = syn::parse2(quote!(reduce, dtypes = [all]))?;
    let def = parse_reduce(&attr, &syn::parse2(item)?)?;
    let body = crate::lower::lower_reduce(&def)?;
    Ok((def, body))
}

fn reducer(item: proc_macro2::TokenStream) -> String {
    let (def, body) = lowered(item).unwrap_or_else(|e| panic!("{e}"));
    crate::cuda_reducer::emit(&def, &body)
}

fn err(item: proc_macro2::TokenStream) -> String {
    match lowered(item) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
    }
}

/// A reduction with the four functions given as token bodies over `(T, i64)`.
fn arg_like(identity: proc_macro2::TokenStream, combine: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        mod pick {
            fn identity<T: Num>() -> (T, i64) { #identity }
            fn fold<T: Num>(acc: (T, i64), x: T, index: i64) -> (T, i64) { combine(acc, (x, index)) }
            fn combine<T: Num>(a: (T, i64), b: (T, i64)) -> (T, i64) { #combine }
            fn finish<T: Num>(acc: (T, i64)) -> i64 { acc.1 }
        }
    }
}

#[test]
fn welford_lowers_to_one_reducer_with_early_returns_as_conditionals() {
    let c = reducer(quote! {
        mod welford {
            fn identity<T: Float>() -> (T, T, T) { (T::zero(), T::zero(), T::zero()) }
            fn fold<T: Float>((n, mean, m2): (T, T, T), x: T) -> (T, T, T) {
                let n = n + T::one();
                let d = x - mean;
                let mean = mean + d / n;
                (n, mean, m2 + d * (x - mean))
            }
            fn combine<T: Float>(a: (T, T, T), b: (T, T, T)) -> (T, T, T) {
                if a.0 == T::zero() {
                    return b;
                }
                if b.0 == T::zero() {
                    return a;
                }
                let n = a.0 + b.0;
                let d = b.1 - a.1;
                (n, a.1 + d * b.0 / n, a.2 + b.2 + d * d * a.0 * b.0 / n)
            }
            fn finish<T: Float>((n, _, m2): (T, T, T)) -> T { m2 / n }
        }
    });
    assert!(
        c.starts_with("template <class C> struct tensor_op_reduce_welford {\n    typedef tops_tuple3<C, C, C> acc_t;"),
        "{c}"
    );
    // Shadowed names get fresh locals; tuple patterns read fields of the argument.
    assert!(
        c.contains("const auto n = (tops_acc).f0;") && c.contains("const auto n_2 = tops_add(n, tops_cast<C>(1));"),
        "{c}"
    );
    // `if c { return b; } <rest>` is `c ? b : <rest>`.
    assert!(
        c.contains("return tops_conv<acc_t>((tops_eq((tops_a).f0, tops_cast<C>(0)) ? tops_b : (tops_eq((tops_b).f0"),
        "{c}"
    );
    assert!(
        c.contains("const auto m2_2 = (tops_acc).f2;") && c.contains("return tops_cast<O>(tops_div(m2_2, n_4));"),
        "{c}"
    );
}

#[test]
fn calls_between_the_functions_are_inlined_and_i64s_typed() {
    let c = reducer(arg_like(
        quote!((T::zero(), -1)),
        quote! {
            if a.1 < 0 || (b.1 >= 0 && (b.0 > a.0 || (b.0 == a.0 && b.1 < a.1))) { b } else { a }
        },
    ));
    // -1 is an i64 where the accumulator's second slot is one.
    assert!(c.contains("return tops_conv<acc_t>(tops_tuple(tops_cast<C>(0), -1LL));"), "{c}");
    // fold's body is combine's, over (acc, (x, index)).
    assert!(c.contains("const auto b = tops_tuple(tops_x, tops_index);"), "{c}");
    assert!(c.contains("tops_lt((a).f1, 0LL)") || c.contains("tops_lt((tops_acc).f1, 0LL)"), "{c}");
    assert!(!c.contains("fold_value") && !c.contains("tops_r_"), "{c}");
}

#[test]
fn casts_counts_and_conversions_of_runtime_integers() {
    let (_, body) = lowered(quote! {
        mod mean_pos {
            fn identity<T: Num>() -> i64 { 0 }
            fn fold<T: Num>(acc: i64, x: T) -> i64 { acc + (x > T::zero()) as i64 * 2 }
            fn combine<T: Num>(a: i64, b: i64) -> i64 { a.max(b) }
            fn finish<T: Num>(acc: i64, n: i64) -> T { T::from_i64(acc) / T::from_i64(n) }
        }
    })
    .unwrap();
    assert_eq!((body.acc.clone(), body.finish.clone()), (Ty::I64, Ty::Value));
    assert!(matches!(body.fns[2], Node::IntMethod(..)), "{:?}", body.fns[2]);
    let Node::Arith(_, a, _) = &body.fns[3] else { panic!("{:?}", body.fns[3]) };
    assert!(matches!(**a, Node::Convert { from: Ty::I64, to: Ty::Value, .. }), "{a:?}");
}

#[test]
fn what_the_reduction_language_refuses_is_spanned() {
    let e = err(arg_like(quote!((T::zero(), -1)), quote!(fold(a, b.0, b.1))));
    assert!(e.contains("`fold` is called while it runs (fold → combine → fold)"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote! { if a.1 < 0 { b } a }));
    assert!(e.contains("must `return` in its branch"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote! { let c = if a.1 < 0 { return b } else { a }; c }));
    assert!(e.contains("`return` may only end a function's body"), "{e}");
    let e = err(arg_like(quote!((T::zero(), 0.5)), quote!(a)));
    assert!(e.contains("expected an `i64`, found a f64 literal or param"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote!((a.0 + b.1, a.1))));
    assert!(e.contains("this mixes an element value and an `i64`: convert the `i64` with `T::from_i64(..)`"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote!((a.0, a.0 as i64))));
    assert!(e.contains("`as i64` converts a condition or an `i64`"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote! { let (mut x, _) = a; (x, b.1) }));
    assert!(e.contains("locals are immutable"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote!(a.2)));
    assert!(e.contains("a tuple of 2 has no field 2"), "{e}");
    let e = err(arg_like(quote!((T::zero(), -1)), quote! { return a; b }));
    assert!(e.contains("unreachable: this follows a `return`"), "{e}");
}
