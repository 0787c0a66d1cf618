//! C type names of the CUDA kernels: storage types per dtype and raw bit types per size.

use tensor_core::DType;

/// A C type used in generated CUDA source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CType {
    /// Spelling in C (`"float"`, `"__half"`).
    pub name: &'static str,
    /// Short tag used in kernel names (`"f32"`, `"b4"`).
    pub tag: &'static str,
    /// Size in bytes.
    pub size: usize,
}

impl CType {
    /// The storage type of `dtype` (`bool`, `unsigned char`, ..., `__half`, `__nv_bfloat16`).
    pub const fn of(dtype: DType) -> CType {
        let (name, tag) = match dtype {
            DType::Bool => ("bool", "bool"),
            DType::U8 => ("unsigned char", "u8"),
            DType::I8 => ("signed char", "i8"),
            DType::I16 => ("short", "i16"),
            DType::I32 => ("int", "i32"),
            DType::I64 => ("long long", "i64"),
            DType::F8E4M3 => ("tops_f8e4m3", "f8e4m3"),
            DType::F8E5M2 => ("tops_f8e5m2", "f8e5m2"),
            DType::F16 => ("__half", "f16"),
            DType::BF16 => ("__nv_bfloat16", "bf16"),
            DType::F32 => ("float", "f32"),
            DType::F64 => ("double", "f64"),
            // Stored as their integers (kernels see a quantized operand's `repr`).
            DType::QInt8 => ("signed char", "i8"),
            DType::QUInt8 => ("unsigned char", "u8"),
            DType::QInt32 => ("int", "i32"),
        };
        CType { name, tag, size: dtype.size() }
    }

    /// The unsigned integer type of `bytes` bytes (1, 2, 4 or 8), for raw copies and fills.
    pub const fn bits(bytes: usize) -> Option<CType> {
        let (name, tag) = match bytes {
            1 => ("unsigned char", "b1"),
            2 => ("unsigned short", "b2"),
            4 => ("unsigned int", "b4"),
            8 => ("unsigned long long", "b8"),
            _ => return None,
        };
        Some(CType { name, tag, size: bytes })
    }
}

/// True when `s` is a C identifier (names of generated functions and kernels).
///
/// ```
/// use tensor_kernels_cuda::ctype::is_ident;
/// assert!(is_ident("tops_red_amax") && !is_ident("1x") && !is_ident("a-b"));
/// ```
pub fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}
