//! Parses the attribute arguments: `#[tensor_op(debug, name = "op", dtypes = [float, i32])]`.

use crate::dtype::{expand_name, Dtype};
use crate::errors::{error, Errors};
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, Ident, LitStr, Token};

/// One listed dtype and the token that produced it (a group yields several).
#[derive(Debug, Clone)]
pub struct ListedDtype {
    /// The dtype.
    pub dtype: Dtype,
    /// The name in the attribute (`f32` or `float`), for spans.
    pub token: Ident,
}

/// The parsed attribute.
#[derive(Debug, Clone)]
pub struct OpAttr {
    /// Dtypes in promotion order, without duplicates.
    pub dtypes: Vec<ListedDtype>,
    /// `debug` flag: print the generated CUDA C at compile time.
    pub debug: bool,
    /// `name = "..."`: the registered op name, when it differs from the fn name.
    pub name: Option<LitStr>,
    /// `reduce`: the item is a reduction (`mod op { fn identity .. fold .. combine .. finish }`).
    pub reduce: Option<Ident>,
    /// `widen` (reductions): bool and integer inputs accumulate in `i64`, and a `-> T`
    /// result is `I64` for them (as `sum`).
    pub widen: Option<Ident>,
    /// `sparse_intersection` (maps): a zero of any input gives zero (`OpSpec::sparse_intersection`).
    pub sparse_intersection: Option<Ident>,
    /// `sparse = sum|max|min` (reductions): what the op is on sparse entries
    /// (`ReduceSpec::sparse`).
    pub sparse: Option<Ident>,
}

impl Parse for OpAttr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut dtypes: Option<Vec<ListedDtype>> = None;
        let mut debug = false;
        let mut name = None;
        let mut reduce = None;
        let mut widen = None;
        let mut sparse_intersection = None;
        let mut sparse = None;
        let mut errors = Errors::default();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            match key.to_string().as_str() {
                "debug" => debug = true,
                "reduce" => reduce = Some(key.clone()),
                "widen" => widen = Some(key.clone()),
                "sparse_intersection" => sparse_intersection = Some(key.clone()),
                "sparse" => {
                    input.parse::<Token![=]>()?;
                    let kind: Ident = input.parse()?;
                    if !matches!(kind.to_string().as_str(), "sum" | "max" | "min") {
                        errors.push(error(
                            &kind,
                            format!("unknown sparse kind `{kind}`: expected `sum`, `max` or `min`"),
                        ));
                    }
                    sparse = Some(kind);
                }
                "name" => {
                    input.parse::<Token![=]>()?;
                    let lit: LitStr = input.parse()?;
                    if !is_c_identifier(&lit.value()) {
                        errors.push(error(&lit, "the op name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)"));
                    }
                    name = Some(lit);
                }
                "dtypes" => {
                    input.parse::<Token![=]>()?;
                    let content;
                    bracketed!(content in input);
                    let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
                    let mut list = Vec::new();
                    for token in names {
                        match expand_name(&token.to_string()) {
                            Some(ds) => {
                                list.extend(ds.into_iter().map(|dtype| ListedDtype { dtype, token: token.clone() }))
                            }
                            None => errors.push(error(
                                &token,
                                format!(
                                    "unknown dtype `{token}`: expected one of bool, u8, i8, i16, i32, i64, f8e4m3, \
                                     f8e5m2, f16, bf16, f32, f64, qint8, quint8, qint32 or a group float, int, \
                                     numeric, all, quantized"
                                ),
                            )),
                        }
                    }
                    list.sort_by_key(|l| l.dtype);
                    list.dedup_by_key(|l| l.dtype);
                    if list.is_empty() && errors.is_empty() {
                        errors.push(error(&key, "`dtypes` lists no dtype"));
                    }
                    dtypes = Some(list);
                }
                other => {
                    errors.push(error(
                        &key,
                        format!(
                            "unknown argument `{other}`: expected `dtypes = [...]`, `name = \"...\"`, `debug`, `reduce`, `widen`, \
                             `sparse_intersection` or `sparse = sum|max|min`"
                        ),
                    ));
                    // Skip the rest of this argument.
                    while !input.is_empty() && !input.peek(Token![,]) {
                        input.parse::<proc_macro2::TokenTree>()?;
                    }
                }
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        errors.finish()?;
        let dtypes = dtypes.ok_or_else(|| {
            syn::Error::new(Span::call_site(), "missing `dtypes = [...]`, e.g. #[tensor_op(dtypes = [float])]")
        })?;
        Ok(OpAttr { dtypes, debug, name, reduce, widen, sparse_intersection, sparse })
    }
}

/// True when `s` is usable as (part of) a C and Rust identifier.
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groups_and_flags() {
        let a: OpAttr = syn::parse_quote!(debug, name = "lrelu", dtypes = [f32, float, i32]);
        assert!(a.debug);
        assert_eq!(a.name.unwrap().value(), "lrelu");
        let ds: Vec<Dtype> = a.dtypes.iter().map(|l| l.dtype).collect();
        assert_eq!(ds, vec![Dtype::I32, Dtype::F8E4M3, Dtype::F8E5M2, Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64]);
    }

    #[test]
    fn rejects_unknown_dtype() {
        let r = syn::parse_str::<OpAttr>("dtypes = [f32, f128]");
        assert!(r.unwrap_err().to_string().contains("unknown dtype `f128`"));
        assert!(syn::parse_str::<OpAttr>("debug").is_err());
    }
}
