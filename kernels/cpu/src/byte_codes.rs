//! What the one-pass map over byte codes (`byte_map/`) needs to know of a call's operands:
//! that they are all qint8, all quint8 (then their quantizers), or all one 8-bit float.

use tensor_core::quant::Affine;
use tensor_core::DType;

/// Most operands of a map (the inputs and the output).
pub(crate) const MAX_OPERANDS: usize = tensor_core::MAX_INPUTS + 1;

/// Which codes a call's one-byte operands hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteFamily {
    /// qint8: i8 storage with an affine quantizer each.
    QInt8,
    /// quint8: u8 storage with an affine quantizer each.
    QUInt8,
    /// `F8E4M3` ("fn") codes.
    F8E4M3,
    /// `F8E5M2` codes.
    F8E5M2,
}

/// How every operand of a call stores its values: all qint8 or all quint8, each with its
/// quantizer (the output first, then the inputs), or all one 8-bit float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByteCodes {
    /// The operands' codes.
    pub family: ByteFamily,
    /// Per operand, output first (the quantized families; unused by the 8-bit floats).
    pub affines: [Affine; MAX_OPERANDS],
}

impl ByteCodes {
    /// The codes of operands stored as `dtypes` with `affines` (output first) when they
    /// are all qint8 or all quint8 per tensor (storage i8/u8 with an affine) — with the
    /// output's rule storing NaN as qmax (the byte dtypes' rule) and its zero point at most
    /// 1024 in magnitude — or all one 8-bit float (no affines); `None` otherwise (mixed,
    /// qint32, per-channel, plain integers).
    ///
    /// ```
    /// use tensor_kernels_cpu::byte_codes::{ByteCodes, ByteFamily};
    /// use tensor_core::{quant::Affine, DType};
    /// let a = Some(Affine::new(DType::QInt8, 0.1, 3));
    /// assert!(ByteCodes::of(&[DType::I8; 3], &[a; 3]).is_some_and(|c| c.family == ByteFamily::QInt8));
    /// assert_eq!(ByteCodes::of(&[DType::I8, DType::U8], &[a, a]), None);
    /// assert_eq!(ByteCodes::of(&[DType::U8, DType::U8], &[None, None]), None);
    /// assert!(ByteCodes::of(&[DType::F8E4M3; 2], &[None, None]).is_some_and(|c| c.family == ByteFamily::F8E4M3));
    /// assert_eq!(ByteCodes::of(&[DType::F8E4M3, DType::F8E5M2], &[None, None]), None);
    /// ```
    pub fn of(dtypes: &[DType], affines: &[Option<Affine>]) -> Option<ByteCodes> {
        let first = *dtypes.first()?;
        if dtypes.len() > MAX_OPERANDS || affines.len() != dtypes.len() || dtypes.iter().any(|&d| d != first) {
            return None;
        }
        let mut all = [Affine::new(DType::QInt8, 1.0, 0); MAX_OPERANDS];
        let family = match first {
            DType::F8E4M3 | DType::F8E5M2 => {
                if affines.iter().any(Option::is_some) {
                    return None;
                }
                let family = if first == DType::F8E4M3 { ByteFamily::F8E4M3 } else { ByteFamily::F8E5M2 };
                return Some(ByteCodes { family, affines: all });
            }
            DType::I8 => ByteFamily::QInt8,
            DType::U8 => ByteFamily::QUInt8,
            _ => return None,
        };
        for (slot, a) in all.iter_mut().zip(affines) {
            *slot = (*a)?;
        }
        // The loop adds the output's zero point in 16-bit lanes (any qint8/quint8 one fits).
        let out = &all[0];
        (out.nan == out.qmax && out.zero_point.abs() <= 1024.0).then_some(ByteCodes { family, affines: all })
    }
}
