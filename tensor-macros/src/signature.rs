//! Validates the signature of an op definition: one type parameter with an optional bound,
//! tensor arguments of type `T` (at least one), `#[param]` scalars, and `-> T` or `-> bool`.
//!
//! How many inputs and params an op may have is not decided here: the one definition of
//! each limit is `tensor_core::MAX_INPUTS` / `MAX_PARAMS`, which a proc macro cannot read,
//! so [`crate::emit`] checks the counts with generated `const` assertions.

use crate::errors::{error, Errors};
use syn::{FnArg, GenericParam, Ident, ItemFn, Pat, ReturnType, Type, TypeParamBound};

/// The bound on the element type parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `T: Float`: float dtypes only; float-only methods allowed.
    Float,
    /// `T: Num`, `Numeric`, `Element` or no bound: any dtype.
    Any,
}

/// The Rust type of a runtime scalar parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarTy {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `i64`.
    I64,
    /// `bool`.
    Bool,
}

impl ScalarTy {
    /// Every scalar type.
    pub const ALL: [ScalarTy; 4] = [ScalarTy::F32, ScalarTy::F64, ScalarTy::I64, ScalarTy::Bool];

    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::F32 => "f32",
            ScalarTy::F64 => "f64",
            ScalarTy::I64 => "i64",
            ScalarTy::Bool => "bool",
        }
    }

    /// The CUDA C type.
    pub fn c_type(self) -> &'static str {
        match self {
            ScalarTy::F32 => "float",
            ScalarTy::F64 => "double",
            ScalarTy::I64 => "long long",
            ScalarTy::Bool => "bool",
        }
    }

    pub fn from_name(s: &str) -> Option<ScalarTy> {
        ScalarTy::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// One argument of the definition, in source order.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A tensor argument (`x: T`): index among the tensor arguments.
    Tensor(Ident),
    /// A `#[param]` scalar.
    Param(Ident, ScalarTy),
}

/// A validated signature.
#[derive(Debug, Clone)]
pub struct Signature {
    /// The element type parameter (`T`).
    pub type_param: Ident,
    /// Its bound.
    pub bound: Bound,
    /// Arguments in source order.
    pub args: Vec<Arg>,
    /// True for `-> bool` (a predicate: output dtype `Bool`).
    pub predicate: bool,
}

impl Signature {
    /// The tensor arguments in order.
    pub fn inputs(&self) -> Vec<&Ident> {
        self.args.iter().filter_map(|a| if let Arg::Tensor(i) = a { Some(i) } else { None }).collect()
    }

    /// The params in order, with their types.
    pub fn params(&self) -> Vec<(&Ident, ScalarTy)> {
        self.args.iter().filter_map(|a| if let Arg::Param(i, t) = a { Some((i, *t)) } else { None }).collect()
    }
}

/// Validates `f`'s signature.
pub fn parse_signature(f: &ItemFn) -> syn::Result<Signature> {
    let sig = &f.sig;
    let mut errors = Errors::default();
    if let Some(t) = &sig.constness {
        errors.push(error(t, "a #[tensor_op] cannot be `const`"));
    }
    if let Some(t) = &sig.asyncness {
        errors.push(error(t, "a #[tensor_op] cannot be `async`"));
    }
    if let Some(t) = &sig.unsafety {
        errors.push(error(t, "a #[tensor_op] cannot be `unsafe`"));
    }
    if let Some(t) = &sig.abi {
        errors.push(error(t, "a #[tensor_op] cannot have an ABI"));
    }
    if let Some(t) = &sig.variadic {
        errors.push(error(t, "a #[tensor_op] cannot be variadic"));
    }
    let generic = errors.take(type_param(sig));
    let type_param = generic.as_ref().map(|g| g.0.clone());

    let mut args = Vec::new();
    for input in &sig.inputs {
        if let Some(a) = errors.take(parse_arg(input, type_param.as_ref())) {
            args.push(a);
        }
    }
    let n_inputs = args.iter().filter(|a| matches!(a, Arg::Tensor(_))).count();
    if n_inputs == 0 && errors.is_empty() {
        errors.push(error(&sig.ident, "a #[tensor_op] needs at least one tensor argument of type `T`"));
    }
    let mut seen: Vec<&Ident> = Vec::new();
    for a in &args {
        let (Arg::Tensor(i) | Arg::Param(i, _)) = a;
        if seen.contains(&i) {
            errors.push(error(i, format!("duplicate argument `{i}`")));
        }
        seen.push(i);
    }
    let predicate = match &sig.output {
        ReturnType::Default => {
            errors.push(error(sig, "missing return type: a #[tensor_op] returns `T` or `bool`"));
            false
        }
        ReturnType::Type(_, ty) => match (type_name(ty), &type_param) {
            (Some(n), Some(tp)) if *tp == n => false,
            (Some(n), _) if n == "bool" => true,
            (_, None) => false,
            _ => {
                errors.push(error(ty, "a #[tensor_op] returns `T` (the element type) or `bool`"));
                false
            }
        },
    };
    errors.finish()?;
    let Some((type_param, bound)) = generic else {
        return Err(syn::Error::new_spanned(&f.sig.generics, "expected one type parameter, e.g. `<T: Float>`"));
    };
    Ok(Signature { type_param, bound, args, predicate })
}

/// The single type parameter and its bound.
pub(crate) fn type_param(sig: &syn::Signature) -> syn::Result<(Ident, Bound)> {
    let g = &sig.generics;
    if let Some(w) = &g.where_clause {
        return Err(error(w, "a #[tensor_op] takes no `where` clause; write the bound as `<T: Float>`"));
    }
    let mut params = g.params.iter();
    let (Some(first), None) = (params.next(), params.next()) else {
        let msg = "a #[tensor_op] has exactly one type parameter: `fn op<T: Float>(..)` or `fn op<T: Num>(..)`";
        return Err(if g.params.is_empty() { error(&sig.ident, msg) } else { error(g, msg) });
    };
    let GenericParam::Type(tp) = first else {
        return Err(error(first, "expected a type parameter (`T`), not a lifetime or const generic"));
    };
    if let Some(d) = &tp.default {
        return Err(error(d, "the type parameter cannot have a default"));
    }
    let mut bounds = tp.bounds.iter();
    let bound = match (bounds.next(), bounds.next()) {
        (None, _) => Bound::Any,
        (Some(b), None) => bound_kind(b)?,
        (Some(_), Some(extra)) => {
            return Err(error(extra, "a #[tensor_op] type parameter has one bound: Float, Num, Numeric or Element"))
        }
    };
    Ok((tp.ident.clone(), bound))
}

fn bound_kind(b: &TypeParamBound) -> syn::Result<Bound> {
    let unknown = || error(b, "unknown bound: expected `Float`, `Num`, `Numeric` or `Element`");
    let TypeParamBound::Trait(t) = b else { return Err(unknown()) };
    let last = t.path.segments.last().ok_or_else(unknown)?;
    if !last.arguments.is_none() || t.lifetimes.is_some() || !matches!(t.modifier, syn::TraitBoundModifier::None) {
        return Err(unknown());
    }
    match last.ident.to_string().as_str() {
        "Float" => Ok(Bound::Float),
        "Num" | "Numeric" | "Element" => Ok(Bound::Any),
        _ => Err(unknown()),
    }
}

fn parse_arg(input: &FnArg, tp: Option<&Ident>) -> syn::Result<Arg> {
    let FnArg::Typed(pt) = input else {
        return Err(error(input, "a #[tensor_op] is a free function; `self` is not allowed"));
    };
    let mut is_param = false;
    for attr in &pt.attrs {
        if attr.path().is_ident("param") && matches!(attr.meta, syn::Meta::Path(_)) {
            is_param = true;
        } else {
            return Err(error(attr, "only `#[param]` is allowed on a #[tensor_op] argument"));
        }
    }
    let ident = match &*pt.pat {
        Pat::Ident(pi) if pi.by_ref.is_none() && pi.mutability.is_none() && pi.subpat.is_none() => pi.ident.clone(),
        other => return Err(error(other, "expected a plain argument name")),
    };
    let ty_name = type_name(&pt.ty);
    if is_param {
        match ty_name.as_deref().and_then(ScalarTy::from_name) {
            Some(t) => Ok(Arg::Param(ident, t)),
            None => Err(error(&pt.ty, "a #[param] has type f32, f64, i64 or bool")),
        }
    } else {
        match (ty_name, tp) {
            (Some(n), Some(tp)) if *tp == n => Ok(Arg::Tensor(ident)),
            (_, None) => Ok(Arg::Tensor(ident)),
            _ => Err(error(
                &pt.ty,
                "a tensor argument has the element type `T`; mark runtime scalars with #[param] (f32, f64, i64 or bool)",
            )),
        }
    }
}

/// The identifier of a one-segment path type (`T`, `f32`), if it is one.
pub(crate) fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Type::Paren(p) => type_name(&p.elem),
        Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}
