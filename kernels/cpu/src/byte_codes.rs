//! What the one-pass map over quantized bytes (`byte_map.rs`) needs to know of a
//! call's operands: that they are all qint8 or all quint8, and their quantizers.

use tensor_core::quant::Affine;
use tensor_core::DType;

/// Most operands of a map (the inputs and the output).
pub(crate) const MAX_OPERANDS: usize = tensor_core::MAX_INPUTS + 1;

/// How every operand of a call stores its values: all qint8 or all quint8, each with its
/// quantizer (the output first, then the inputs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByteCodes {
    /// i8 storage (qint8), else u8 (quint8).
    pub signed: bool,
    /// Per operand, output first.
    pub affines: [Affine; MAX_OPERANDS],
}

impl ByteCodes {
    /// The codes of operands stored as `dtypes` with `affines` (output first) when they
    /// are all qint8 or all quint8 per tensor (storage i8/u8 with an affine) and the
    /// output's rule stores NaN as qmax (the byte dtypes' rule) and its zero point is at
    /// most 1024 in magnitude; `None` otherwise (mixed, qint32, per-channel, plain
    /// integers, the 8-bit floats).
    ///
    /// ```
    /// use tensor_kernels_cpu::byte_codes::ByteCodes;
    /// use tensor_core::{quant::Affine, DType};
    /// let a = Some(Affine::new(DType::QInt8, 0.1, 3));
    /// assert!(ByteCodes::of(&[DType::I8; 3], &[a; 3]).is_some_and(|c| c.signed));
    /// assert_eq!(ByteCodes::of(&[DType::I8, DType::U8], &[a, a]), None);
    /// assert_eq!(ByteCodes::of(&[DType::U8, DType::U8], &[None, None]), None);
    /// assert_eq!(ByteCodes::of(&[DType::F8E4M3; 2], &[None, None]), None);
    /// ```
    pub fn of(dtypes: &[DType], affines: &[Option<Affine>]) -> Option<ByteCodes> {
        let first = *dtypes.first()?;
        if dtypes.len() > MAX_OPERANDS || affines.len() != dtypes.len() || dtypes.iter().any(|&d| d != first) {
            return None;
        }
        if !matches!(first, DType::I8 | DType::U8) {
            return None;
        }
        let mut all = [Affine::new(DType::QInt8, 1.0, 0); MAX_OPERANDS];
        for (slot, a) in all.iter_mut().zip(affines) {
            *slot = (*a)?;
        }
        // The loop adds the output's zero point in 16-bit lanes (any qint8/quint8 one fits).
        let out = &all[0];
        (out.nan == out.qmax && out.zero_point.abs() <= 1024.0)
            .then_some(ByteCodes { signed: first == DType::I8, affines: all })
    }
}
