//! Reads and validates a reduction definition:
//!
//! ```text
//! #[tensor_op(reduce, dtypes = [float])]
//! pub mod l2_norm {
//!     fn identity<T: Float>() -> T { T::zero() }
//!     fn fold<T: Float>(acc: T, x: T) -> T { acc + x * x }
//!     fn combine<T: Float>(a: T, b: T) -> T { a + b }
//!     fn finish<T: Float>(acc: T) -> T { acc.sqrt() }
//! }
//! ```
//!
//! The accumulator is `T`, `i64`, `bool` or a tuple of one to three of them, the same in all
//! four functions. `fold` may take the element's logical index along the reduced dims as a
//! third argument `index: i64`; `finish` may take the count of folded elements as a second
//! argument `n: i64`; any function may take `#[param]` scalars (f32, f64, i64, bool; one
//! name, one type). `finish` returns `T`, `i64` or `bool`.

use crate::attr::OpAttr;
use crate::errors::{error, Errors};
use crate::signature::{type_name as type_ident, type_param, Bound, ScalarTy};
use quote::ToTokens;
use syn::{FnArg, Ident, Item, ItemFn, ItemMod, Pat, ReturnType, Type};

/// What `finish` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// `T`: the compute type, stored as the result dtype.
    Value,
    /// `i64`.
    I64,
    /// `bool`.
    Bool,
}

/// One argument of one of the four functions, in source order.
#[derive(Debug, Clone)]
pub enum ReduceArg {
    /// A positional value (accumulator, element, index, count).
    Value,
    /// The `#[param]` of this index in [`ReduceDef::params`].
    Param(usize),
}

/// One of the four functions, its `#[param]` attributes removed.
pub struct ReduceFn {
    /// The function as it will be emitted (generics rewritten by the emitter).
    pub item: ItemFn,
    /// Its arguments.
    pub args: Vec<ReduceArg>,
}

/// A validated reduction.
pub struct ReduceDef {
    /// The module's visibility (given to the public fns).
    pub vis: syn::Visibility,
    /// The op name (the module's name unless `name = ".."`).
    pub name: String,
    /// The module ident.
    pub ident: Ident,
    /// Doc attributes.
    pub docs: Vec<syn::Attribute>,
    /// The element type parameter's name and bound.
    pub type_param: Ident,
    /// Its bound.
    pub bound: Bound,
    /// The accumulator type as written.
    pub acc: Type,
    /// `identity`, `fold`, `combine`, `finish`.
    pub fns: [ReduceFn; 4],
    /// What `finish` returns.
    pub finish: Finish,
    /// The params, in order of first appearance.
    pub params: Vec<(Ident, ScalarTy)>,
    /// Listed dtypes.
    pub dtypes: Vec<crate::dtype::Dtype>,
    /// `widen`.
    pub widen: bool,
    /// `sparse = sum|max|min`: the `SparseReduce` variant's name, if stated.
    pub sparse: Option<syn::Ident>,
}

const NAMES: [&str; 4] = ["identity", "fold", "combine", "finish"];

/// Checks an accumulator type: `T`, `i64`, `bool` or a tuple of 1–3 of them.
fn check_acc(ty: &Type, tp: &Ident) -> syn::Result<()> {
    let slot_ok = |t: &Type| type_ident(t).is_some_and(|n| *tp == n || n == "i64" || n == "bool");
    let ok = match ty {
        Type::Tuple(t) => (1..=3).contains(&t.elems.len()) && t.elems.iter().all(slot_ok),
        t => slot_ok(t),
    };
    if ok {
        Ok(())
    } else {
        Err(error(ty, format!("the accumulator is `{tp}`, `i64`, `bool` or a tuple of one to three of them")))
    }
}

fn same_type(a: &Type, b: &Type) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

/// Reads the definition.
pub fn parse_reduce(attr: &OpAttr, m: &ItemMod) -> syn::Result<ReduceDef> {
    let mut errors = Errors::default();
    let Some((_, items)) = &m.content else {
        return Err(error(m, "a #[tensor_op(reduce)] module is written inline: `mod op { fn identity .. }`"));
    };
    let mut found: [Option<ItemFn>; 4] = Default::default();
    for item in items {
        match item {
            Item::Fn(f) => match NAMES.iter().position(|n| f.sig.ident == n) {
                Some(k) if found[k].is_none() => found[k] = Some(f.clone()),
                Some(_) => errors.push(error(&f.sig.ident, format!("`{}` is defined twice", f.sig.ident))),
                None => errors.push(error(
                    &f.sig.ident,
                    format!(
                        "unknown function `{}`: a reduction defines identity, fold, combine and finish",
                        f.sig.ident
                    ),
                )),
            },
            other => errors.push(error(other, "a reduction module holds only fn identity, fold, combine and finish")),
        }
    }
    for (k, f) in found.iter().enumerate() {
        if f.is_none() {
            errors.push(error(&m.ident, format!("missing `fn {}`", NAMES[k])));
        }
    }
    errors.finish()?;
    let mut errors = Errors::default();
    let found: Vec<ItemFn> = found.into_iter().flatten().collect();
    let (tp, bound) = type_param(&found[0].sig)?;
    let acc = match &found[0].sig.output {
        ReturnType::Type(_, t) => (**t).clone(),
        ReturnType::Default => return Err(error(&found[0].sig, "`identity` returns the accumulator")),
    };
    check_acc(&acc, &tp)?;
    let mut params: Vec<(Ident, ScalarTy)> = Vec::new();
    let mut fns = Vec::new();
    let mut finish = Finish::Value;
    for (k, f) in found.into_iter().enumerate() {
        let name = NAMES[k];
        match type_param(&f.sig) {
            Ok((t, b)) if t == tp && b == bound => {}
            Ok(_) => errors.push(error(
                &f.sig.generics,
                format!("`{name}` must have the same type parameter and bound as `identity`"),
            )),
            Err(e) => errors.push(e),
        }
        let mut item = f.clone();
        let mut args = Vec::new();
        let mut values: Vec<Type> = Vec::new();
        for input in item.sig.inputs.iter_mut() {
            let FnArg::Typed(pt) = input else {
                errors.push(error(input, "a reduction function takes no `self`"));
                continue;
            };
            let is_param = pt.attrs.iter().any(|a| a.path().is_ident("param"));
            pt.attrs.retain(|a| !a.path().is_ident("param"));
            if is_param {
                let Pat::Ident(pi) = &*pt.pat else {
                    errors.push(error(&pt.pat, "a #[param] is a plain name"));
                    continue;
                };
                let Some(ty) = type_ident(&pt.ty).and_then(|n| ScalarTy::ALL.into_iter().find(|t| t.name() == n))
                else {
                    errors.push(error(&pt.ty, "a #[param] has type f32, f64, i64 or bool"));
                    continue;
                };
                let idx = match params.iter().position(|(n, _)| *n == pi.ident) {
                    Some(i) if params[i].1 == ty => i,
                    Some(i) => {
                        errors.push(error(
                            &pt.ty,
                            format!("param `{}` was declared as {}", pi.ident, params[i].1.name()),
                        ));
                        i
                    }
                    None => {
                        params.push((pi.ident.clone(), ty));
                        params.len() - 1
                    }
                };
                args.push(ReduceArg::Param(idx));
            } else {
                values.push((*pt.ty).clone());
                args.push(ReduceArg::Value);
            }
        }
        let is_t = |t: &Type| type_ident(t).is_some_and(|n| tp == n);
        let is_i64 = |t: &Type| type_ident(t).is_some_and(|n| n == "i64");
        let ret = match &item.sig.output {
            ReturnType::Type(_, t) => Some((**t).clone()),
            ReturnType::Default => None,
        };
        let shape_ok = match name {
            "identity" => values.is_empty(),
            "fold" => {
                let fold_index = values.len() == 3 && is_i64(&values[2]);
                (values.len() == 2 || fold_index) && same_type(&values[0], &acc) && is_t(&values[1])
            }
            "combine" => values.len() == 2 && values.iter().all(|v| same_type(v, &acc)),
            _ => {
                let finish_count = values.len() == 2 && is_i64(&values[1]);
                (values.len() == 1 || finish_count) && same_type(&values[0], &acc)
            }
        };
        if !shape_ok {
            let want = match name {
                "identity" => "fn identity<T>() -> Acc".to_string(),
                "fold" => "fn fold<T>(acc: Acc, x: T) -> Acc, or (acc: Acc, x: T, index: i64)".to_string(),
                "combine" => "fn combine<T>(a: Acc, b: Acc) -> Acc".to_string(),
                _ => "fn finish<T>(acc: Acc) -> T | i64 | bool, or (acc: Acc, n: i64)".to_string(),
            };
            errors.push(error(
                &item.sig.inputs,
                format!(
                    "`{name}` has the wrong arguments: expected `{want}` (plus any #[param]s), with Acc = `{}`",
                    acc.to_token_stream()
                ),
            ));
        }
        match (name, &ret) {
            ("finish", Some(t)) if is_t(t) => finish = Finish::Value,
            ("finish", Some(t)) if is_i64(t) => finish = Finish::I64,
            ("finish", Some(t)) if type_ident(t).is_some_and(|n| n == "bool") => finish = Finish::Bool,
            ("finish", _) => errors.push(error(&item.sig, format!("`finish` returns `{tp}`, `i64` or `bool`"))),
            (_, Some(t)) if same_type(t, &acc) => {}
            (_, _) => {
                errors.push(error(&item.sig, format!("`{name}` returns the accumulator `{}`", acc.to_token_stream())))
            }
        }
        fns.push(ReduceFn { item, args });
    }
    errors.finish()?;
    let mut dtypes: Vec<_> = attr.dtypes.iter().map(|l| l.dtype).collect();
    dtypes.dedup();
    let fns: [ReduceFn; 4] = fns.try_into().map_err(|_| error(&m.ident, "a reduction defines four functions"))?;
    Ok(ReduceDef {
        vis: m.vis.clone(),
        name: attr.name.as_ref().map(|n| n.value()).unwrap_or_else(|| m.ident.to_string()),
        ident: m.ident.clone(),
        docs: m.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect(),
        type_param: tp,
        bound,
        acc,
        fns,
        finish,
        params,
        dtypes,
        widen: attr.widen.is_some(),
        sparse: attr.sparse.clone(),
    })
}
