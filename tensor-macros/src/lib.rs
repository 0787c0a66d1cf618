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
//! Layout: [`attr`] (attribute arguments), [`dtype`] (dtypes and groups), [`signature`] and
//! [`lower`] (validation, into [`ir`]), [`rust_body`] and [`emit`] (Rust), [`cuda`] (CUDA C),
//! [`errors`] (spanned errors).
//!
//! Arguments: `dtypes = [..]` (dtypes and the groups `float`, `int`, `numeric`, `all`),
//! `name = "op"` (registered name), `debug` (print the CUDA C at compile time; so does the
//! environment variable `TENSOR_OPS_DEBUG=1`).

mod attr;
mod cuda;
mod dtype;
mod emit;
mod errors;
mod ir;
mod lower;
mod op;
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
    let f: syn::ItemFn = syn::parse2(item)?;
    let attr: attr::OpAttr = syn::parse2(attr)?;
    let op = op::parse_op(attr, &f)?;
    if op.debug || std::env::var("TENSOR_OPS_DEBUG").is_ok_and(|v| v == "1") {
        for f in emit::cuda_fns(&op) {
            eprintln!("// #[tensor_op] {}: {}\n{}", op.name, f.name, f.source);
        }
    }
    Ok(emit::expand(&op))
}
