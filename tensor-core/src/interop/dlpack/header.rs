//! Reading and checking a DLPack header before its memory is adopted: dtype and device,
//! `ndim`, shape and strides with checked arithmetic, the byte offset, the span of
//! elements, and the bytes of a CPU `bool` tensor.

use super::DlpackTensor;
use crate::iter::StridedOffsets;
use crate::{shape, DType, Device, Error, Result};
use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDeviceType};

pub(super) fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (DLDataTypeCode::BOOL, 8),
        DType::U8 => (DLDataTypeCode::UINT, 8),
        DType::I8 => (DLDataTypeCode::INT, 8),
        DType::I16 => (DLDataTypeCode::INT, 16),
        DType::I32 => (DLDataTypeCode::INT, 32),
        DType::I64 => (DLDataTypeCode::INT, 64),
        DType::F8E4M3 => (DLDataTypeCode::FLOAT8_E4M3FN, 8),
        DType::F8E5M2 => (DLDataTypeCode::FLOAT8_E5M2, 8),
        DType::F16 => (DLDataTypeCode::FLOAT, 16),
        DType::BF16 => (DLDataTypeCode::BFLOAT, 16),
        DType::F32 => (DLDataTypeCode::FLOAT, 32),
        DType::F64 => (DLDataTypeCode::FLOAT, 64),
        // DLPack has no quantized type: the exporter refuses quantized tensors before this
        // (their integers alone would lose the quantizer); the stored integer's code here.
        DType::QInt8 | DType::QUInt8 | DType::QInt32 => return dl_dtype(d.repr()),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_of(t: &DLDataType) -> Result<DType> {
    let d = match (t.code, t.bits) {
        (DLDataTypeCode::BOOL, 8) => DType::Bool,
        (DLDataTypeCode::UINT, 8) => DType::U8,
        (DLDataTypeCode::INT, 8) => DType::I8,
        (DLDataTypeCode::INT, 16) => DType::I16,
        (DLDataTypeCode::INT, 32) => DType::I32,
        (DLDataTypeCode::INT, 64) => DType::I64,
        (DLDataTypeCode::FLOAT8_E4M3FN, 8) => DType::F8E4M3,
        (DLDataTypeCode::FLOAT8_E5M2, 8) => DType::F8E5M2,
        (DLDataTypeCode::FLOAT, 16) => DType::F16,
        (DLDataTypeCode::BFLOAT, 16) => DType::BF16,
        (DLDataTypeCode::FLOAT, 32) => DType::F32,
        (DLDataTypeCode::FLOAT, 64) => DType::F64,
        _ => {
            return Err(Error::DType {
                op: "from_dlpack",
                msg: format!(
                    "DLPack dtype (code {}, {} bits) has no tensor-ops dtype (bool, u8, i8..i64, float8_e4m3fn, float8_e5m2, f16, bf16, f32, f64)",
                    t.code.0, t.bits
                ),
            })
        }
    };
    if t.lanes != 1 {
        return Err(Error::DType {
            op: "from_dlpack",
            msg: format!("DLPack vector dtypes ({} lanes) are not supported", t.lanes),
        });
    }
    Ok(d)
}

/// A DLPack header's description of a tensor, checked (everything but the memory itself).
pub(super) struct Header {
    pub(super) dtype: DType,
    pub(super) device: Device,
    pub(super) shape: Vec<usize>,
    pub(super) strides: Vec<isize>,
    /// Bytes from `data` to the first element: at most `isize::MAX`, a multiple of the
    /// element size.
    pub(super) byte_offset: usize,
    pub(super) data: *mut u8,
}

/// Reads and checks `managed`'s header for [`Tensor::from_dlpack`] (`op`).
pub(super) fn parse_header(op: &'static str, managed: &DlpackTensor) -> Result<Header> {
    let m = managed.managed();
    if m.version.major != 1 {
        return Err(Error::invalid(
            op,
            format!("DLPack version {}.{}; this library reads 1.x", m.version.major, m.version.minor),
        ));
    }
    let t = &m.dl_tensor;
    let dtype = dtype_of(&t.dtype)?;
    let device = match t.device.device_type {
        DLDeviceType::CPU => Device::Cpu,
        DLDeviceType::CUDA if t.device.device_id >= 0 => Device::Cuda(t.device.device_id as u32),
        other => {
            return Err(Error::invalid(
                op,
                format!(
                    "DLPack device type {} (id {}) is not CPU (1) or CUDA (2) with an id ≥ 0",
                    other.0, t.device.device_id
                ),
            ))
        }
    };
    let (dims, given_strides) = managed.checked_dims(op)?;
    let shape: Vec<usize> = dims
        .iter()
        .map(|&s| {
            usize::try_from(s)
                .map_err(|_| Error::shape(op, format!("negative size {s} in shape {dims:?}; sizes must be ≥ 0")))
        })
        .collect::<Result<_>>()?;
    // Element count and byte size fit isize (so row-major strides do too).
    shape::checked_numel(op, &shape, dtype)?;
    let strides: Vec<isize> = match given_strides {
        None => shape::contiguous_strides(&shape),
        Some(given) => given
            .iter()
            .map(|&s| {
                isize::try_from(s).map_err(|_| {
                    Error::invalid(op, format!("stride {s} in strides {given:?} does not fit isize on this platform"))
                })
            })
            .collect::<Result<_>>()?,
    };
    let byte_offset = usize::try_from(t.byte_offset).ok().filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
        Error::out_of_bounds(
            op,
            format!(
                "byte offset {} is larger than any object can be (at most isize::MAX = {} bytes)",
                t.byte_offset,
                isize::MAX
            ),
        )
    })?;
    let size = dtype.size();
    if !byte_offset.is_multiple_of(size) {
        return Err(Error::invalid(
            op,
            format!("byte offset {byte_offset} is not a multiple of the {dtype} size {size}"),
        ));
    }
    Ok(Header { dtype, device, shape, strides, byte_offset, data: t.data.cast() })
}

/// The lowest and highest element offsets (relative to the first element) a layout reaches,
/// with checked arithmetic; `None` for an empty tensor.
pub(super) fn checked_span(op: &'static str, shape: &[usize], strides: &[isize]) -> Result<Option<(isize, isize)>> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let overflow = || {
        Error::out_of_bounds(
            op,
            format!("strides {strides:?} over shape {shape:?} reach further than isize::MAX elements"),
        )
    };
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&n, &s) in shape.iter().zip(strides) {
        // n ≤ isize::MAX (checked_numel), so n - 1 fits.
        let reach = (n as isize - 1).checked_mul(s).ok_or_else(overflow)?;
        if reach < 0 {
            lo = lo.checked_add(reach).ok_or_else(overflow)?;
        } else {
            hi = hi.checked_add(reach).ok_or_else(overflow)?;
        }
    }
    // The element count of the span must be countable too.
    hi.checked_sub(lo).and_then(|d| d.checked_add(1)).ok_or_else(overflow)?;
    Ok(Some((lo, hi)))
}

/// The row-major index of flat position `k` in `shape`.
fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in index.iter_mut().zip(shape).rev() {
        *i = k % n;
        k /= n;
    }
    index
}

/// Refuses a CPU `bool` import whose bytes are not all 0/1: `base` is the lowest reachable
/// byte, `bytes` the span's length, `first` the first element's offset from `base`.
pub(super) fn check_bool_bytes(
    op: &'static str,
    base: *const u8,
    bytes: usize,
    h: &Header,
    first: usize,
) -> Result<()> {
    // SAFETY: `from_raw`'s contract: every byte from the lowest to the highest element
    // (`base..base + bytes`, computed with checked arithmetic) is readable and initialized;
    // they are read as `u8`, valid for any value.
    let span = unsafe { std::slice::from_raw_parts(base, bytes) };
    let Some(bad) = span.iter().position(|&b| b > 1) else {
        return Ok(());
    };
    let hint = "bool bytes must be 0 or 1 (other values are not a valid bool); import the data as u8 \
                (DLPack kDLUInt, 8 bits) and compare it with `ne(0)` to get a bool tensor";
    // The first invalid element in logical order, if the bad byte is an element at all.
    for (k, off) in StridedOffsets::new(&h.shape, &h.strides).enumerate() {
        // Inside the span by construction (`first + off` lies in `0..bytes`).
        let b = span[(first as isize + off) as usize];
        if b > 1 {
            return Err(Error::DType {
                op,
                msg: format!(
                    "bool element {:?} (flat index {k}) of shape {:?} holds the byte {b}; {hint}",
                    unravel(k, &h.shape),
                    h.shape
                ),
            });
        }
    }
    Err(Error::DType {
        op,
        msg: format!(
            "the bool view's elements are 0/1, but byte {bad} of the {bytes} bytes it spans (between its \
             elements, which `as_strided` on the import could reach) holds {}; {hint}",
            span[bad]
        ),
    })
}
