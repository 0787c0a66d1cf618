//! The dtypes an op can list, the groups (`float`, `int`, `numeric`, `all` — the plain
//! dtypes —, `quantized`: qint8, quint8, qint32, computed in f32 like the narrow floats) and the per-dtype
//! names used in generated Rust and CUDA C.
//!
//! The dtypes themselves are the core's: this crate depends on `tensor-core` and uses
//! `tensor_core::DType` and its `ALL` list, so the core, the macro and the kernels share one
//! list (a new variant makes every `match` below a compile error until it is handled).

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// One element type: the core's `tensor_core::DType`.
pub use tensor_core::DType as Dtype;

/// The floating-point dtypes (group `float`), in promotion order.
pub fn float() -> Vec<Dtype> {
    Dtype::ALL.into_iter().filter(|d| d.is_float()).collect()
}

/// The integer dtypes (group `int`), in promotion order.
pub fn int() -> Vec<Dtype> {
    Dtype::ALL.into_iter().filter(|d| d.is_int()).collect()
}

/// What generated code needs of a dtype beyond what the core says.
pub trait DtypeCode {
    /// `::tensor_ops::__private::DType::F32`.
    fn dtype_path(self) -> TokenStream;
    /// The Rust element type of this dtype's *compute* type (`f32` for f16 rows).
    fn compute_rust_type(self) -> TokenStream;
    /// The CUDA C type a value of this dtype is computed in.
    fn c_type(self) -> &'static str;
}

impl DtypeCode for Dtype {
    fn dtype_path(self) -> TokenStream {
        // The variant's name is its Debug form (`BF16`).
        let v = proc_macro2::Ident::new(&format!("{self:?}"), Span::call_site());
        quote!(::tensor_ops::__private::DType::#v)
    }

    fn compute_rust_type(self) -> TokenStream {
        let name = proc_macro2::Ident::new(self.compute().name(), Span::call_site());
        quote!(#name)
    }

    fn c_type(self) -> &'static str {
        match self.compute() {
            Dtype::Bool => "bool",
            Dtype::U8 => "unsigned char",
            Dtype::I8 => "signed char",
            Dtype::I16 => "short",
            Dtype::I32 => "int",
            Dtype::I64 => "long long",
            Dtype::F32 => "float",
            Dtype::F64 => "double",
            // compute() maps the 8- and 16-bit floats to f32
            Dtype::F8E4M3 | Dtype::F8E5M2 | Dtype::F16 | Dtype::BF16 => "float",
            // and the quantized dtypes too
            Dtype::QInt8 | Dtype::QUInt8 | Dtype::QInt32 => "float",
        }
    }
}

/// Expands one name of a `dtypes = [...]` list: a single dtype or a group.
pub fn expand_name(name: &str) -> Option<Vec<Dtype>> {
    let group: Vec<Dtype> = match name {
        "float" => float(),
        "int" => int(),
        "numeric" => int().into_iter().chain(float()).collect(),
        "all" => Dtype::ALL.to_vec(),
        "quantized" => Dtype::QUANTIZED.to_vec(),
        single => return Dtype::ALL.into_iter().chain(Dtype::QUANTIZED).find(|d| d.name() == single).map(|d| vec![d]),
    };
    Some(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_expand() {
        assert_eq!(expand_name("float").unwrap(), float());
        assert_eq!(expand_name("numeric").unwrap().len(), 11);
        assert_eq!(expand_name("all").unwrap().len(), 12);
        assert_eq!(expand_name("f8e4m3").unwrap(), vec![Dtype::F8E4M3]);
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
