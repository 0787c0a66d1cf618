//! The `#[tensor_op]` attribute of tensor-ops.
//!
//! ```text
//! /// Leaky ReLU.
//! #[tensor_op(dtypes = [f16, bf16, f32, f64])]
//! pub fn leaky_relu<T: Float>(x: T, #[param] slope: f32) -> T {
//!     if x > T::zero() { x } else { x * T::from_f32(slope) }
//! }
//! ```
//!
//! turns one small generic function into: an `OpSpec`, a body over the `Value` lane algebra,
//! a CPU block kernel and a CUDA C `__device__` function per listed dtype, their registry
//! rows, and the public fns `leaky_relu`, `leaky_relu_` and `leaky_relu_out`. See
//! `ARCHITECTURE.md`, "What `#[tensor_op]` generates".
//!
//! Layout (private modules): `attr` (attribute arguments), `dtype` (dtypes and groups),
//! `signature` and `lower` (validation, into `ir`), `callee` (the op a call names),
//! `rust_body` and `emit` (Rust), `cuda` (CUDA C), `errors` (spanned errors); reductions:
//! `reduce_def`, `reduce_arith`, `reduce_emit`, `reduce_cuda`, `reduce_compose`.
//!
//! Arguments: `dtypes = [..]` (dtypes and the groups `float`, `int`, `numeric`, `all`),
//! `name = "op"` (registered name), `debug` (print the CUDA C at compile time; so does the
//! environment variable `TENSOR_OPS_DEBUG=1`).
//!
//! # Signature
//!
//! One type parameter `T` with the bound `Float` (float dtypes only, float methods allowed)
//! or `Num`/`Numeric`/`Element`/none (any dtype); tensor arguments of type `T`, at least one
//! and at most `tensor_core::MAX_INPUTS`; runtime scalars marked `#[param]` of type `f32`,
//! `f64`, `i64` or `bool`, at most `tensor_core::MAX_PARAMS`; `-> T`, or `-> bool` for a
//! predicate. The limits are defined once, in `tensor_core::limits`: a definition past one
//! is a compile error at the first argument too many (a generated `const` assertion).
//! Params reach the CPU body and the CUDA function exactly, in their declared types.
//!
//! # Body language
//!
//! - `let` (optionally `: T` or `: bool`), blocks, `if c { a } else { b }` (both arms are
//!   evaluated), a final expression;
//! - on values: `+ - * /`, unary `-`, comparisons (giving conditions), the methods `abs`,
//!   `max`, `min`, `pow` on any dtype and `exp`, `exp2`, `ln`, `log2`, `sqrt`, `tanh`,
//!   `sigmoid` (1 / (1 + e^-x), the bits of that expression, computed faster), `sin`,
//!   `cos`, `powf`, `recip`, `floor`, `ceil`, `round` on floats;
//! - on conditions: `&&`, `||`, `!`; a `bool` param or literal is a condition too;
//! - `T::zero()`, `T::one()`, and `T::from_f32(e)`, `T::from_f64(e)`, `T::from_i64(e)`,
//!   `T::from_bool(e)` (`as` rules; `true` is 1) of a scalar expression `e`: params of that
//!   type, literals and `+ - * /`, unary `-` of them; literals and params also stand for
//!   values directly (`x * 2`, `x + k`).
//!
//! Integer arithmetic is total everywhere: on element values, on `i64` params and on
//! constants, on the CPU (SIMD and scalar) and in the CUDA C alike, `+ - *` and unary `-`
//! wrap, division by zero gives 0 and `MIN / -1` gives `MIN` (no panic in debug builds, no
//! trap, no undefined behaviour). Integer literals are `i64` (`-9223372036854775808` is
//! `i64::MIN`); integer literal arithmetic is evaluated at compile time, and one that
//! overflows i64 or divides by zero (`1 / 0`, `9223372036854775807 + 1`) is a compile
//! error. A float literal given to `T::from_f32` must fit f32 (`1e40` is an error pointing
//! at `T::from_f64`).
//!
//! # Calling other ops (composition)
//!
//! A body may call any elementwise `#[tensor_op]` — a built-in (`tensor_ops::sigmoid`), one
//! of this crate or of another crate — by its Rust path, on element values:
//!
//! ```text
//! #[tensor_op(dtypes = [float])]
//! fn silu<T: Float>(x: T) -> T { x * sigmoid(x) }
//! ```
//!
//! The callee's body is inlined: on the CPU `sigmoid(x)` is `sigmoid::element::<V>(x)`
//! (the callee's hidden module is also exported under the fn's name, in the type namespace,
//! so a path that names the op names it), generic over the caller's SIMD lanes; in CUDA C
//! the callee's `__device__` function (its own callees included, each behind an include
//! guard) is spliced into the caller's source at compile time (`const` concatenation), so
//! `silu` is one pass over memory on every device. Tensor arguments take values or
//! literals; params take literals or the caller's params (converted as `Scalar` params
//! are). The callee's dtype rules apply: every dtype the caller lists must be one the callee
//! lists (a `const` assertion spanned at the call, e.g. `exp` from an `i32` row). A
//! predicate callee (`tensor_ops::gt(x, y)`) is a condition. Calling a function that is not
//! an elementwise op (a plain fn, a reduction), or the op itself, is a compile error at the
//! call; so is calling two different ops of the same name in one body (their CUDA functions
//! would share the name). A path such as `f32::max` is refused at the call with the list of
//! what a body may call (write `a.max(b)`); calling a reduction is one error at the call,
//! from the `NotAMapOp` bound of the reduction's `element`. Reduction functions compose the
//! same way (see below).
//!
//! # Reductions
//!
//! `#[tensor_op(reduce, dtypes = [..])]` on an inline module defining four functions:
//!
//! ```text
//! /// √Σx².
//! #[tensor_op(reduce, dtypes = [float])]
//! pub mod l2_norm {
//!     fn identity<T: Float>() -> T { T::zero() }
//!     fn fold<T: Float>(acc: T, x: T) -> T { acc + x * x }
//!     fn combine<T: Float>(a: T, b: T) -> T { a + b }
//!     fn finish<T: Float>(acc: T) -> T { acc.sqrt() }
//! }
//! ```
//!
//! generates `l2_norm(&a, &dims, keepdim)`, `l2_norm_out(.., &out)`, `l2_norm_all(&a)`, a
//! `ReduceSpec` and a CPU row per listed dtype, run by the CPU reduction driver along any
//! axis of any strided view. The accumulator is `T`, `i64`, `bool` or a tuple of one to
//! three of them, the same in all four functions; `fold` may take the element's logical
//! index along the reduced dims as `index: i64`; `finish` may take the count `n: i64`; any
//! function may take `#[param]`s (they become trailing arguments of the public fns).
//! `finish` returns `T` (the result dtype: the input's, f32 for bool/integer inputs under
//! `T: Float`, i64 for them with `widen`), `i64` or `bool`. The bodies are Rust, compiled
//! with `T` = the one-lane value of the accumulate-in element (`Lane<f32>` for f16 rows):
//! integer arithmetic on `T` wraps, `i64` slots are plain Rust `i64`. `combine` must be
//! associative (the driver combines in a fixed pairwise tree).
//!
//! The same bodies are translated to CUDA C (a reducer struct template over the accumulate
//! type, the interface of `kernels/cuda/include/reduce.cuh`) and registered as CUDA rows for
//! every listed dtype: row, column and second-pass kernels with warp shuffles, as the
//! built-ins. The translation takes what such bodies use — `let` (names, `_`, tuple
//! patterns, shadowing), `if`/`else`, `return`, arithmetic, comparisons, `&&`/`||`/`!`,
//! tuples and `.0` fields, `as` casts, `T::zero()`/`one()`/`from_*`, the value methods
//! (`sqrt`, `exp`, `min`, ...), params and calls of the four functions; anything else
//! (`match`, loops, plain functions, macros) is a spanned compile error.
//!
//! The four functions may call elementwise ops as map bodies do (`acc + square(x)`, with
//! values, literals and the function's params): on the CPU the callee's `element::<T>`, in
//! CUDA C the callee's function for the accumulate dtype, reached through a dispatcher struct
//! over the accumulate type and spliced into the reducer's source at compile time; every
//! accumulate dtype of the rows must be one the callee lists (a `const` assertion at the call).
//!
//! Registry rows go through `tensor_ops::__private::register_map_rows!` /
//! `register_reduce_rows!`, which register the CPU row and, with tensor-ops' `cuda` feature,
//! the CUDA row: the generated code names no device.

mod attr;
mod callee;
mod cuda;
mod dtype;
mod emit;
mod errors;
mod ir;
mod lower;
mod op;
mod reduce_arith;
mod reduce_compose;
mod reduce_cuda;
mod reduce_def;
mod reduce_emit;
mod rust_body;
mod signature;

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;

/// Defines an elementwise tensor op from a generic per-element function.
///
/// See the crate docs; the generated items are described in `ARCHITECTURE.md`.
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
        let def = reduce_def::parse_reduce(&attr, &m)?;
        return Ok(reduce_emit::expand(&def));
    }
    if let Some(w) = &attr.widen {
        return Err(syn::Error::new(w.span(), "`widen` is for reductions: #[tensor_op(reduce, widen, ...)]"));
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
