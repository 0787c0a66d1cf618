//! Unit tests of the CUDA C text and of the validation errors, without a compiler run.

use crate::attr::OpAttr;
use crate::cuda::emit_cuda;
use crate::dtype::Dtype;
use crate::op::{parse_op, OpDef};
use quote::quote;

fn op(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> syn::Result<OpDef> {
    let attr: OpAttr = syn::parse2(attr)?;
    parse_op(attr, &syn::parse2(item)?)
}

fn cuda(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream, dtype: Dtype) -> String {
    let op = op(attr, item).unwrap_or_else(|e| panic!("{e}"));
    emit_cuda(&op.name, &op.sig, &op.body, dtype).source
}

fn err(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
    match op(attr, item) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
    }
}

#[test]
fn leaky_relu_cuda() {
    let item = quote! {
        fn leaky_relu<T: Float>(x: T, #[param] slope: f32) -> T {
            if x > T::zero() { x } else { x * T::from_f32(slope) }
        }
    };
    let attr = quote!(dtypes = [float]);
    assert_eq!(
        cuda(attr.clone(), item.clone(), Dtype::F32),
        "__device__ __forceinline__ float tensor_op_leaky_relu_f32(float x, float slope) {\n    \
         return (tops_gt(x, tops_cast<float>(0)) ? x : tops_mul(x, tops_cast<float>(slope)));\n}\n"
    );
    assert_eq!(
        cuda(attr.clone(), item.clone(), Dtype::F64),
        "__device__ __forceinline__ double tensor_op_leaky_relu_f64(double x, float slope) {\n    \
         return (tops_gt(x, tops_cast<double>(0)) ? x : tops_mul(x, tops_cast<double>(slope)));\n}\n"
    );
    // 16-bit floats compute in float.
    assert!(cuda(attr, item, Dtype::BF16)
        .starts_with("__device__ __forceinline__ float tensor_op_leaky_relu_bf16(float x,"));
}

#[test]
fn binary_with_literals_and_methods() {
    let item = quote! {
        fn blend<T: Num>(a: T, b: T) -> T {
            (a + b * 2 - 1.5).max(a.abs()) / -b
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [i32, f32]), item, Dtype::I32),
        "__device__ __forceinline__ int tensor_op_blend_i32(int a, int b) {\n    return tops_div(tops_max(\
         tops_sub(tops_add(a, tops_mul(b, tops_cast<int>(2LL))), tops_cast<int>(1.5)), tops_abs(a)), tops_neg(b));\n}\n"
    );
}

#[test]
fn predicate_with_mask_logic() {
    let item = quote! {
        fn in_range<T: Num>(x: T, #[param] lo: f64, #[param] hi: f64) -> bool {
            x >= T::from_f64(lo) && !(x > T::from_f64(hi)) || x == T::one()
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [u8, i8, i16]), item, Dtype::I8),
        "__device__ __forceinline__ bool tensor_op_in_range_i8(signed char x, double lo, double hi) {\n    return \
         ((tops_ge(x, tops_cast<signed char>(lo)) && (!tops_gt(x, tops_cast<signed char>(hi)))) || tops_eq(x, \
         tops_cast<signed char>(1)));\n}\n"
    );
}

#[test]
fn lets_blocks_and_else_if() {
    let item = quote! {
        fn gelu_ish<T: Float>(x: T) -> T {
            let y: T = x * x;
            let z = { let w = y.exp(); w.sqrt() };
            if y < T::one() { z } else if y > T::from_f32(4.0) { x.tanh() } else { x.powf(y) }
        }
    };
    assert_eq!(
        cuda(quote!(name = "gelu", dtypes = [f64]), item, Dtype::F64),
        "__device__ __forceinline__ double tensor_op_gelu_f64(double x) {\n    const auto y = tops_mul(x, x);\n    \
         const auto z = ([&]() { const auto w = tops_exp(y); return tops_sqrt(w); }());\n    return (tops_lt(y, \
         tops_cast<double>(1)) ? z : (tops_gt(y, tops_cast<double>(4.0f)) ? tops_tanh(x) : tops_pow(x, y)));\n}\n"
    );
}

#[test]
fn shadowing_locals_get_fresh_names() {
    let item = quote! {
        fn twice<T: Num>(x: T, #[param] k: i64) -> T {
            let x = x + T::from_i64(k * 2);
            let x = x * x;
            x - 3
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [i64]), item, Dtype::I64),
        "__device__ __forceinline__ long long tensor_op_twice_i64(long long x, long long k) {\n    const auto x_2 = \
         tops_add(x, tops_cast<long long>(tops_mul(k, 2LL)));\n    const auto x_3 = tops_mul(x_2, x_2);\n    return \
         tops_sub(x_3, tops_cast<long long>(3LL));\n}\n"
    );
}

#[test]
fn bool_params_and_literals() {
    let item = quote! {
        fn pick<T>(a: T, b: T, #[param] first: bool) -> T {
            if first { a } else { b + true }
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [bool, u8]), item, Dtype::Bool),
        "__device__ __forceinline__ bool tensor_op_pick_bool(bool a, bool b, bool first) {\n    return (first ? a : \
         tops_add(b, tops_cast<bool>(true)));\n}\n"
    );
}

#[test]
fn whole_expansion_parses_as_items() {
    let ts = crate::expand(
        quote!(dtypes = [all]),
        quote! {
            /// Doc.
            pub fn clamp01<T: Num>(x: T) -> T { x.max(T::zero()).min(T::one()) }
        },
    )
    .unwrap();
    let file: syn::File = syn::parse2(ts).unwrap();
    assert_eq!(file.items.len(), 5); // the hidden module, its alias + 3 public fns
}

#[test]
fn calls_of_other_ops_leave_a_mark_for_the_callee_name() {
    let op = op(
        quote!(dtypes = [f32]),
        quote! {
            fn silu2<T: Float>(x: T, #[param] k: f32) -> T { x * ops::sigmoid(x * T::from_f32(k)) + leaky(x, 2) }
        },
    )
    .unwrap();
    assert_eq!(op.body.callees.iter().map(|c| c.text()).collect::<Vec<_>>(), ["ops::sigmoid", "leaky"]);
    let f = emit_cuda(&op.name, &op.sig, &op.body, Dtype::F32);
    use crate::cuda::Piece::{Callee, Text};
    assert_eq!(
        f.pieces()[1..],
        [Callee(0), Text("(tops_mul(x, tops_cast<float>(k)))), ".into()), Callee(1), Text("(x, 2LL));\n}\n".into())]
    );
}

#[test]
fn errors_point_at_the_offending_token() {
    let any = quote!(dtypes = [f32]);
    let cases: Vec<(proc_macro2::TokenStream, proc_macro2::TokenStream, &str)> = vec![
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    for i in 0..3 {}
                    x
                }
            ),
            "loops are not allowed",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    f(x)
                }
            ),
            "`f` cannot call itself",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    ops::g::<f32>(x)
                }
            ),
            "generic arguments are not allowed here",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    a::g(x) + b::g(x)
                }
            ),
            "one body may call one op of each name",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    g(x > T::zero())
                }
            ),
            "a condition cannot be an op's argument",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x.cbrt()
                }
            ),
            "unknown method `cbrt`",
        ),
        (
            quote!(dtypes = [i32]),
            quote!(
                fn f<T: Num>(x: T) -> T {
                    x.exp()
                }
            ),
            "`exp` is only available on floats",
        ),
        (
            quote!(dtypes = [float, i32]),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x
                }
            ),
            "`i32` is not a float dtype",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) {
                    x
                }
            ),
            "missing return type",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(#[param] p: f32) -> T {
                    T::zero()
                }
            ),
            "needs at least one tensor argument",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T, p: f32) -> T {
                    x
                }
            ),
            "mark runtime scalars with #[param]",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T, #[param] p: u32) -> T {
                    x
                }
            ),
            "#[param] has type f32",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    return x;
                }
            ),
            "`return` is not allowed",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    println!("{}", 1);
                    x
                }
            ),
            "macros are not allowed",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float, U>(x: T) -> T {
                    x
                }
            ),
            "exactly one type parameter",
        ),
        (
            any.clone(),
            quote!(
                fn f(x: f32) -> f32 {
                    x
                }
            ),
            "exactly one type parameter",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    if x > 0.0 {
                        x
                    }
                }
            ),
            "needs an `else`",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x > 0.0
                }
            ),
            "found a condition",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> bool {
                    x + 1.0
                }
            ),
            "found an element value",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x % 2.0
                }
            ),
            "operator `%` is not supported",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T, #[param] p: f64) -> T {
                    T::from_f32(p)
                }
            ),
            "use `T::from_f64(p)`",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    y
                }
            ),
            "cannot find `y`",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    T::two()
                }
            ),
            "unknown function `two`",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    |y| y;
                    x
                }
            ),
            "closures are not allowed",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    let mut y = x;
                    y = x;
                    y
                }
            ),
            "no `mut`",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x as T
                }
            ),
            "`as` casts",
        ),
        (
            any.clone(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    (&x).abs()
                }
            ),
            "references are",
        ),
        (
            quote!(dtypes = [f32, q8]),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x
                }
            ),
            "unknown dtype `q8`",
        ),
        (
            quote!(),
            quote!(
                fn f<T: Float>(x: T) -> T {
                    x
                }
            ),
            "missing `dtypes",
        ),
    ];
    for (attr, item, want) in cases {
        let got = match syn::parse2::<OpAttr>(attr.clone()) {
            Err(e) => e.to_string(),
            Ok(_) => err(attr, item.clone()),
        };
        assert!(got.contains(want), "{item}: expected `{want}`, got `{got}`");
    }
}

#[test]
fn float_only_methods_are_allowed_for_floats_and_abs_for_all() {
    assert!(op(
        quote!(dtypes = [all]),
        quote!(
            fn f<T>(x: T, y: T) -> T {
                x.abs().max(y).pow(y)
            }
        )
    )
    .is_ok());
    assert!(op(
        quote!(dtypes = [float]),
        quote!(
            fn f<T: Float>(x: T) -> T {
                x.ln().recip().floor().ceil().round()
            }
        )
    )
    .is_ok());
}

#[test]
fn integer_scalar_arithmetic_is_total_in_c_and_rust() {
    let item = quote! {
        fn q<T: Num>(x: T, #[param] n: i64, #[param] d: i64, #[param] s: f64) -> T {
            x + T::from_i64(-n / d - (n * 3 + 1)) + T::from_f64(s / 2.0 - -s)
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [i8]), item.clone(), Dtype::I8),
        "__device__ __forceinline__ signed char tensor_op_q_i8(signed char x, long long n, long long d, double s) \
         {\n    return tops_add(tops_add(x, tops_cast<signed char>(tops_sub(tops_div(tops_neg(n), d), \
         tops_add(tops_mul(n, 3LL), 1LL)))), tops_cast<signed char>(tops_sub(tops_div(s, 2.0), tops_neg(s))));\n}\n"
    );
    // Rust: i64 arithmetic through the total `Lane<i64>` operators, floats plain.
    let ts = crate::expand(quote!(dtypes = [i8]), item).unwrap().to_string().replace(' ', "");
    let lane = "::tensor_ops::__private::tensor_kernels_cpu::value::Lane::<i64>";
    assert!(ts.contains(&format!("((-{lane}(self.n)).0)")) || ts.contains(&format!("(-{lane}(self.n)).0")), "{ts}");
    assert!(ts.contains(&format!("/{lane}(self.d)).0")), "{ts}");
    assert!(ts.contains("(self.s/2.0f64)"), "{ts}");
}

#[test]
fn i64_min_literal_and_from_bool() {
    let item = quote! {
        fn m<T: Num>(x: T, #[param] b: bool) -> T {
            x + T::from_i64(-9223372036854775808) * T::from_bool(b) + T::from_bool(true)
        }
    };
    assert_eq!(
        cuda(quote!(dtypes = [i64, f32]), item.clone(), Dtype::I64),
        "__device__ __forceinline__ long long tensor_op_m_i64(long long x, bool b) {\n    return tops_add(tops_add(x, \
         tops_mul(tops_cast<long long>((-9223372036854775807LL - 1LL)), tops_cast<long long>(b))), \
         tops_cast<long long>(true));\n}\n"
    );
    let ts = crate::expand(quote!(dtypes = [i64, f32]), item).unwrap().to_string().replace(' ', "");
    assert!(ts.contains("from_i64(::core::primitive::i64::MIN)"), "{ts}");
    assert!(ts.contains("from_bool(self.b)"), "{ts}");
    // a value where a bool param is expected suggests `from_bool`, which exists
    let e = err(
        quote!(dtypes = [f32]),
        quote!(
            fn f<T: Num>(x: T, #[param] b: bool) -> T {
                x * T::from_f32(b)
            }
        ),
    );
    assert!(e.contains("use `T::from_bool(b)`"), "{e}");
}

#[test]
fn constant_integer_expressions_that_fail_are_errors() {
    let cases: Vec<(proc_macro2::TokenStream, &str)> = vec![
        (quote!(x + T::from_i64(1 / 0)), "divides by zero"),
        (quote!(x * (2 / (1 - 1))), "divides by zero"),
        (quote!(x + T::from_f64(7 / 0)), "divides by zero"),
        (quote!(x + T::from_i64(9223372036854775807 + 1)), "overflows i64"),
        (quote!(x + (9223372036854775807 + 1)), "overflows i64"),
        (quote!(x + T::from_i64(-(-9223372036854775808))), "overflows i64"),
        (quote!(x + -(-9223372036854775808)), "overflows i64"),
        (quote!(x + T::from_i64(-9223372036854775808 / -1)), "overflows i64"),
        (quote!(x + T::from_i64(4294967296 * 4294967296)), "overflows i64"),
        (quote!(x + T::from_i64(9223372036854775808)), "out of the range of i64"),
        (quote!(x * T::from_f32(1e40)), "out of the range of f32"),
        (quote!(x * T::from_f32(-3.5e38 * 0.5)), "out of the range of f32"),
        (quote!(x * 1e400), "out of the range of f64"),
    ];
    for (body, want) in cases {
        let item = quote!(
            fn f<T: Num>(x: T) -> T {
                #body
            }
        );
        let e = err(quote!(dtypes = [i32, f32]), item);
        assert!(e.contains(want), "{body}: expected `{want}`, got `{e}`");
    }
    // fine: in range, and run-time divisions (total) by params or element values
    for body in [
        quote!(x + T::from_i64(-9223372036854775808 + 9223372036854775807)),
        quote!(x * T::from_f32(3.4e38) + T::from_f64(1e300)),
        quote!(x / T::zero() + T::from_i64(0 / 5)),
    ] {
        let item = quote!(
            fn f<T: Num>(x: T, #[param] n: i64) -> T {
                #body + T::from_i64(n / 0)
            }
        );
        assert!(op(quote!(dtypes = [i32, f32]), item).is_ok(), "{body}");
    }
}

#[test]
fn input_and_param_counts_are_checked_against_the_core_limits() {
    let ts = crate::expand(
        quote!(dtypes = [f32]),
        quote!(
            fn f<T: Float>(a: T, b: T, #[param] p: f32, #[param] q: bool) -> T {
                a + b
            }
        ),
    )
    .unwrap()
    .to_string()
    .replace(' ', "");
    for (i, what) in [(0, "INPUTS"), (1, "INPUTS"), (0, "PARAMS"), (1, "PARAMS")] {
        let want = format!(
            "const_:()=::core::assert!({i}usize<::tensor_ops::__private::tensor_core::MAX_{what},\"{{}}\",\
             ::tensor_ops::__private::tensor_core::limits::TOO_MANY_{what});"
        );
        assert!(ts.contains(&want), "missing {want} in {ts}");
    }
    assert!(!ts.contains("2usize<"), "{ts}");
}
