//! The dtypes an op can list, the groups (`float`, `int`, `numeric`, `all`) and the per-dtype
//! names used in generated Rust and CUDA C.

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// One element type of `tensor_core::DType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dtype {
    /// `bool`.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `half::f16` (computes in f32).
    F16,
    /// `half::bf16` (computes in f32).
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// The floating-point dtypes (group `float`).
pub const FLOAT: [Dtype; 4] = [Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64];
/// The integer dtypes (group `int`).
pub const INT: [Dtype; 5] = [Dtype::U8, Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64];

impl Dtype {
    /// Every dtype, in promotion order.
    pub const ALL: [Dtype; 10] = [
        Dtype::Bool,
        Dtype::U8,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::F16,
        Dtype::BF16,
        Dtype::F32,
        Dtype::F64,
    ];

    /// The lowercase name used in attributes and generated identifiers (`"bf16"`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "u8",
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::F16 => "f16",
            Dtype::BF16 => "bf16",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }

    /// True for f16, bf16, f32 and f64.
    pub fn is_float(self) -> bool {
        FLOAT.contains(&self)
    }

    /// The dtype the body computes in: f32 for f16/bf16, else the dtype itself.
    pub fn compute(self) -> Dtype {
        match self {
            Dtype::F16 | Dtype::BF16 => Dtype::F32,
            d => d,
        }
    }

    /// The `DType` variant name (`"BF16"`).
    fn variant(self) -> &'static str {
        match self {
            Dtype::Bool => "Bool",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::I16 => "I16",
            Dtype::I32 => "I32",
            Dtype::I64 => "I64",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::F32 => "F32",
            Dtype::F64 => "F64",
        }
    }

    /// `::tensor_ops::__private::DType::F32`.
    pub fn dtype_path(self) -> TokenStream {
        let v = proc_macro2::Ident::new(self.variant(), Span::call_site());
        quote!(::tensor_ops::__private::DType::#v)
    }

    /// The Rust element type of this dtype's *compute* type (`f32` for f16 rows).
    pub fn compute_rust_type(self) -> TokenStream {
        let name = proc_macro2::Ident::new(self.compute().name(), Span::call_site());
        quote!(#name)
    }

    /// The CUDA C type a value of this dtype is computed in.
    pub fn c_type(self) -> &'static str {
        match self.compute() {
            Dtype::Bool => "bool",
            Dtype::U8 => "unsigned char",
            Dtype::I8 => "signed char",
            Dtype::I16 => "short",
            Dtype::I32 => "int",
            Dtype::I64 => "long long",
            Dtype::F32 => "float",
            Dtype::F64 => "double",
            Dtype::F16 | Dtype::BF16 => unreachable!("compute() maps 16-bit floats to f32"),
        }
    }
}

/// Expands one name of a `dtypes = [...]` list: a single dtype or a group.
pub fn expand_name(name: &str) -> Option<Vec<Dtype>> {
    let group: Vec<Dtype> = match name {
        "float" => FLOAT.to_vec(),
        "int" => INT.to_vec(),
        "numeric" => INT.iter().chain(FLOAT.iter()).copied().collect(),
        "all" => Dtype::ALL.to_vec(),
        single => return Dtype::ALL.into_iter().find(|d| d.name() == single).map(|d| vec![d]),
    };
    Some(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_expand() {
        assert_eq!(expand_name("float").unwrap(), FLOAT.to_vec());
        assert_eq!(expand_name("numeric").unwrap().len(), 9);
        assert_eq!(expand_name("all").unwrap().len(), 10);
        assert_eq!(expand_name("bf16").unwrap(), vec![Dtype::BF16]);
        assert!(expand_name("f128").is_none());
    }

    #[test]
    fn c_types() {
        assert_eq!(Dtype::F16.c_type(), "float");
        assert_eq!(Dtype::I64.c_type(), "long long");
        assert_eq!(Dtype::I8.c_type(), "signed char");
    }
}
