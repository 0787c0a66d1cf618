//! A whole, validated op definition: attribute + signature + lowered body.

use crate::attr::OpAttr;
use crate::dtype::Dtype;
use crate::errors::{error, Errors};
use crate::ir::Body;
use crate::lower::lower_body;
use crate::signature::{parse_signature, Bound, Signature};
use syn::{Attribute, Ident, ItemFn, Visibility};

/// Everything the generators need to know about one op.
pub struct OpDef {
    /// Visibility of the definition (given to the public fns).
    pub vis: Visibility,
    /// The fn name (`leaky_relu`): names the public fns and the hidden module.
    pub ident: Ident,
    /// The registered op name (the fn name unless `name = "..."`).
    pub name: String,
    /// The definition's doc attributes.
    pub docs: Vec<Attribute>,
    /// Its other attributes, forwarded to the public fns.
    pub attrs: Vec<Attribute>,
    /// The validated signature.
    pub sig: Signature,
    /// The lowered body.
    pub body: Body,
    /// Listed dtypes in promotion order.
    pub dtypes: Vec<Dtype>,
    /// Print the CUDA C at compile time.
    pub debug: bool,
    /// `sparse_intersection`: `OpSpec::sparse_intersection`.
    pub sparse_intersection: bool,
    /// The body's source text on one line, for docs.
    pub body_text: String,
}

/// Validates `f` under `attr` and lowers its body.
pub fn parse_op(attr: OpAttr, f: &ItemFn) -> syn::Result<OpDef> {
    let mut errors = Errors::default();
    let sig = errors.take(parse_signature(f));
    if let Some(sig) = &sig
        && sig.bound == Bound::Float
    {
        for l in attr.dtypes.iter().filter(|l| !l.dtype.is_float() && !l.dtype.is_quantized()) {
            errors.push(error(
                &l.token,
                format!(
                    "`{}` is not a float dtype, but `{}: Float` only allows the float dtypes (f8e4m3, f8e5m2, f16, bf16, f32, f64); use `{}: Num` \
                         for any dtype",
                    l.dtype.name(),
                    sig.type_param,
                    sig.type_param
                ),
            ));
        }
    }
    let body = sig.as_ref().and_then(|s| errors.take(lower_body(s, &f.sig.ident, &f.block)));
    errors.finish()?;
    let (Some(sig), Some(body)) = (sig, body) else {
        return Err(syn::Error::new_spanned(&f.sig, "#[tensor_op] could not read this definition"));
    };
    let (docs, attrs): (Vec<Attribute>, Vec<Attribute>) =
        f.attrs.iter().cloned().partition(|a| a.path().is_ident("doc"));
    let mut dtypes: Vec<Dtype> = attr.dtypes.iter().map(|l| l.dtype).collect();
    dtypes.dedup();
    Ok(OpDef {
        vis: f.vis.clone(),
        ident: f.sig.ident.clone(),
        name: attr.name.map(|n| n.value()).unwrap_or_else(|| f.sig.ident.to_string()),
        docs,
        attrs,
        sig,
        body,
        dtypes,
        debug: attr.debug,
        sparse_intersection: attr.sparse_intersection.is_some(),
        body_text: block_text(&f.block),
    })
}

/// The source text of the block's contents on one line (tokens when the source is unknown).
fn block_text(block: &syn::Block) -> String {
    let text = block.brace_token.span.join().source_text().unwrap_or_else(|| {
        let stmts = &block.stmts;
        quote::quote!(#(#stmts)*).to_string()
    });
    let text = text.trim();
    let text = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl OpDef {
    /// True for a definition marked `#[doc(hidden)]`: an internal step of other ops
    /// (`OpSpec::internal`), left out of listings for users.
    pub fn is_hidden(&self) -> bool {
        self.docs.iter().any(|a| match &a.meta {
            syn::Meta::List(l) => l.tokens.to_string().trim() == "hidden",
            _ => false,
        })
    }

    /// The first line of the docs, or a generated description (for `OpSpec::doc`).
    pub fn summary(&self) -> String {
        self.docs
            .iter()
            .filter_map(|a| match &a.meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value().trim().to_string()),
                    _ => None,
                },
                _ => None,
            })
            .find(|l| !l.is_empty())
            .unwrap_or_else(|| format!("elementwise `{}` (a #[tensor_op])", self.name))
    }
}
