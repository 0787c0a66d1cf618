//! Unary maps from a one-byte dtype to a one-byte dtype through a conversion (qint8/quint8
//! dequantized and requantized, the 8-bit floats decoded and encoded): an input byte has
//! only 256 values, so the call first runs the op's own pipeline — the same driver, block
//! function, quantizers and params — over those 256 values into a table, then maps every
//! element through the table. The results are the driver's by construction (a map's body
//! sees only its element), for every op a definition lists, built-in or a user's.
//!
//! The table is applied with AVX2: as `max`/`min` on bytes when it is a clamp in signed or
//! unsigned order (`relu` with the input's quantizer is `max(q, zero_point)`), as a bitmap
//! lookup and a blend when it keeps some bytes and sends the others to one constant, but
//! for a few (`relu` of an 8-bit float), else by
//! sixteen 16-byte shuffles and a tree of fifteen byte blends; at DRAM sizes the output is written with non-temporal stores.

use crate::copy::stream::{store_fence, NT_THRESHOLD};
use crate::kernel::MapKernel;
use crate::parallel::{for_each_chunk, GRAIN};
use crate::simd_level::{simd_level, SimdLevel};
use tensor_core::iter::IterPlan;
use tensor_core::quant::OperandAffines;
use tensor_core::registry::RawTensor;
use tensor_core::{DType, Result};

/// Elements from which a call builds its table (below, the driver's own passes are cheaper
/// than the 256-value run and the classification).
const TABLE_MIN: usize = 1 << 16;

/// How a table maps a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `clamp(x, lo, hi)` comparing bytes as i8.
    ClampSigned(i8, i8),
    /// `clamp(x, lo, hi)` comparing bytes as u8.
    ClampUnsigned(u8, u8),
    /// `x` where `x` is in the kept set, else one constant, but for a few patched bytes
    /// (`relu` of an 8-bit float keeps the positive values and −0, and makes its NaNs the
    /// canonical ones).
    KeepOrConstant(Keep),
    /// Anything else.
    General,
}

/// The parts of [`Shape::KeepOrConstant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Keep {
    /// The kept set as a bitmap: bit `x % 8` of byte `x / 8`.
    kept: [u8; 32],
    /// What the other bytes become.
    other: u8,
    /// Bytes mapped elsewhere: (byte, result), the first `patched` of them.
    patches: [(u8, u8); MAX_PATCHES],
    /// How many of `patches` are used.
    patched: usize,
}

/// The most bytes a [`Keep`] shape patches (each costs a compare and a blend per vector).
const MAX_PATCHES: usize = 8;

/// The shape of `table`.
fn shape_of(table: &[u8; 256]) -> Shape {
    let (slo, shi) = (table[0x80] as i8, table[0x7f] as i8);
    if slo <= shi && (0..=255u8).all(|b| table[b as usize] as i8 == (b as i8).clamp(slo, shi)) {
        return Shape::ClampSigned(slo, shi);
    }
    let (ulo, uhi) = (table[0], table[255]);
    if ulo <= uhi && (0..=255u8).all(|b| table[b as usize] == b.clamp(ulo, uhi)) {
        return Shape::ClampUnsigned(ulo, uhi);
    }
    // The commonest result of a changed byte.
    let mut counts = [0usize; 256];
    (0..=255u8).filter(|&b| table[b as usize] != b).for_each(|b| counts[table[b as usize] as usize] += 1);
    let other = (0..256).max_by_key(|&v| counts[v]).map_or(0, |v| v as u8);
    let mut keep = Keep { kept: [0; 32], other, patches: [(0, 0); MAX_PATCHES], patched: 0 };
    for b in 0..=255u8 {
        let t = table[b as usize];
        if t == b {
            keep.kept[b as usize / 8] |= 1 << (b % 8);
        } else if t != other {
            if keep.patched == MAX_PATCHES {
                return Shape::General;
            }
            keep.patches[keep.patched] = (b, t);
            keep.patched += 1;
        }
    }
    Shape::KeepOrConstant(keep)
}

/// Runs the call through a table when it qualifies (one input; one-byte input and output
/// dtypes; a conversion on the way, which is what makes the driver's passes costly; at least
/// [`TABLE_MIN`] elements); `None` (nothing written) otherwise.
///
/// `run` is the driver with the call's kernel, params and quantizers, used to build the
/// table over a 256-element contiguous call.
///
/// # Safety
/// As the driver's `run_map_canonical` (operands on one canonical plan, in bounds, the
/// output exclusive and aliasing the input exactly or not at all).
pub(crate) unsafe fn try_run(
    kernel: &MapKernel,
    out: &RawTensor<'_>,
    inputs: &[RawTensor<'_>],
    quant: Option<&OperandAffines>,
    run: impl FnOnce(&RawTensor<'_>, &[RawTensor<'_>]) -> Result<()>,
) -> Option<Result<()>> {
    let [input] = inputs else { return None };
    let affine = |j: usize| quant.and_then(|q| q[j]);
    let converts =
        input.dtype != kernel.compute || out.dtype != kernel.output || affine(0).is_some() || affine(1).is_some();
    let numel: usize = out.shape.iter().product();
    if out.dtype.size() != 1 || input.dtype.size() != 1 || !converts || numel < TABLE_MIN {
        return None;
    }
    let values: [u8; 256] = std::array::from_fn(|b| b as u8);
    let mut table = [0u8; 256];
    let (shape, strides) = ([256usize], [1isize]);
    let raw =
        |ptr: *mut u8, dtype: DType| RawTensor { ptr, dtype, shape: &shape, strides: &strides, device: out.device };
    let table_out = raw(table.as_mut_ptr(), out.dtype);
    // The driver reads the values; it never writes an input.
    let table_in = raw(values.as_ptr() as *mut u8, input.dtype);
    if let Err(e) = run(&table_out, &[table_in]) {
        return Some(Err(e));
    }
    let plan = IterPlan::from_canonical(out.shape, out.strides, [input.strides].into_iter());
    let inner = plan.inner_strides();
    let (inner_len, total) = (plan.inner_len(), plan.numel());
    let contiguous = inner[0] == 1 && inner[1] == 1;
    let streaming = contiguous && total >= NT_THRESHOLD;
    let shape = shape_of(&table);
    let (dst, src) = (out.ptr as usize, input.ptr as usize);
    for_each_chunk(total, GRAIN, |range| {
        let mut offsets = [0isize; 2];
        let mut i = range.start;
        while i < range.end {
            let (row, col) = (i / inner_len, i % inner_len);
            plan.row_offsets(row, &mut offsets);
            let n = (inner_len - col).min(range.end - i);
            let d = (dst as *mut u8).wrapping_offset(offsets[0] + col as isize * inner[0]);
            let s = (src as *const u8).wrapping_offset(offsets[1] + col as isize * inner[1]);
            // SAFETY: elements col..col+n of this row are in bounds for both operands (the
            // plan's strides) and the output's are this task's alone.
            unsafe {
                if contiguous {
                    apply_run(d, s, n, &table, shape, streaming)
                } else {
                    for k in 0..n as isize {
                        *d.offset(k * inner[0]) = table[*s.offset(k * inner[1]) as usize];
                    }
                }
            }
            i += n;
        }
        if streaming {
            store_fence();
        }
    });
    Some(Ok(()))
}

/// `dst[i] = table[src[i]]` for `n` contiguous bytes (`shape` is the table's).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; they are equal or do not overlap.
unsafe fn apply_run(dst: *mut u8, src: *const u8, n: usize, table: &[u8; 256], shape: Shape, streaming: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::apply_run(dst, src, n, table, shape, streaming) };
    }
    let _ = (shape, streaming);
    for k in 0..n {
        // SAFETY: k < n, per the caller.
        unsafe { *dst.add(k) = table[*src.add(k) as usize] };
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Shape;
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX2 is available; as [`super::apply_run`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn apply_run(
        dst: *mut u8,
        src: *const u8,
        n: usize,
        table: &[u8; 256],
        shape: Shape,
        streaming: bool,
    ) {
        // Each sixteenth of the table in both 128-bit lanes (the shuffle's reach).
        let parts: [__m256i; 16] = std::array::from_fn(|k| {
            // SAFETY: 16 bytes from 16k, within the 256-byte table.
            let part = unsafe { _mm_loadu_si128(table.as_ptr().add(16 * k) as *const __m128i) };
            _mm256_broadcastsi128_si256(part)
        });
        // For KeepOrConstant: byte l of `kept_low` has bit h set when 16h + l is kept
        // (h < 8), of `kept_high` when 128 + 16h + l is; `bit_of_high[h]` = 1 << (h % 8).
        let (mut low_rows, mut high_rows) = ([0u8; 16], [0u8; 16]);
        if let Shape::KeepOrConstant(keep) = shape {
            for b in (0..256usize).filter(|&b| keep.kept[b / 8] & (1 << (b % 8)) != 0) {
                let rows = if b < 128 { &mut low_rows } else { &mut high_rows };
                rows[b % 16] |= 1 << ((b / 16) % 8);
            }
        }
        let broadcast = |r: &[u8; 16]| {
            // SAFETY: 16 readable bytes.
            _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(r.as_ptr() as *const __m128i) })
        };
        let (kept_low, kept_high) = (broadcast(&low_rows), broadcast(&high_rows));
        let bit_of_high = broadcast(&std::array::from_fn(|h| 1u8 << (h % 8)));
        let patches: [(__m256i, __m256i); super::MAX_PATCHES] = match shape {
            Shape::KeepOrConstant(keep) => {
                keep.patches.map(|(b, t)| (_mm256_set1_epi8(b as i8), _mm256_set1_epi8(t as i8)))
            }
            _ => [(_mm256_setzero_si256(), _mm256_setzero_si256()); super::MAX_PATCHES],
        };
        let map32 = |x: __m256i| match shape {
            Shape::ClampSigned(lo, hi) => {
                _mm256_min_epi8(_mm256_max_epi8(x, _mm256_set1_epi8(lo)), _mm256_set1_epi8(hi))
            }
            Shape::ClampUnsigned(lo, hi) => {
                _mm256_min_epu8(_mm256_max_epu8(x, _mm256_set1_epi8(lo as i8)), _mm256_set1_epi8(hi as i8))
            }
            Shape::KeepOrConstant(keep) => {
                // Membership by bitmap: the byte for x's low nibble (from the half chosen by
                // bit 7), then the bit for x's high nibble.
                let low = _mm256_and_si256(x, _mm256_set1_epi8(0x0f));
                let high = _mm256_and_si256(_mm256_srli_epi16::<4>(x), _mm256_set1_epi8(0x0f));
                let row =
                    _mm256_blendv_epi8(_mm256_shuffle_epi8(kept_low, low), _mm256_shuffle_epi8(kept_high, low), x);
                let bit = _mm256_shuffle_epi8(bit_of_high, high);
                let member = _mm256_cmpeq_epi8(_mm256_and_si256(row, bit), bit);
                let mut r = _mm256_blendv_epi8(_mm256_set1_epi8(keep.other as i8), x, member);
                for &(byte, to) in &patches[..keep.patched] {
                    r = _mm256_blendv_epi8(r, to, _mm256_cmpeq_epi8(x, byte));
                }
                r
            }
            Shape::General => {
                // Every sixteenth looked up by the low nibble, then a tree of byte blends
                // picks one by the high nibble, a bit at a time (a blend reads each byte's
                // bit 7: bit 4 + s of x shifted there).
                let low = _mm256_and_si256(x, _mm256_set1_epi8(0x0f));
                let mut picks: [__m256i; 16] = std::array::from_fn(|k| _mm256_shuffle_epi8(parts[k], low));
                let mut width = 16;
                for bit in 0..4 {
                    let select = match bit {
                        0 => _mm256_slli_epi16::<3>(x),
                        1 => _mm256_slli_epi16::<2>(x),
                        2 => _mm256_slli_epi16::<1>(x),
                        _ => x,
                    };
                    width /= 2;
                    for j in 0..width {
                        picks[j] = _mm256_blendv_epi8(picks[2 * j], picks[2 * j + 1], select);
                    }
                }
                picks[0]
            }
        };
        let scalar = |k: usize| {
            // SAFETY: k < n (callers).
            unsafe { *dst.add(k) = table[*src.add(k) as usize] };
        };
        let head = if streaming { dst.align_offset(32).min(n) } else { 0 };
        (0..head).for_each(scalar);
        let mut i = head;
        while i + 32 <= n {
            // SAFETY: i + 32 <= n bytes of each; with streaming, dst + i is 32-byte aligned
            // (the head above). An exactly aliased output is read before it is written.
            unsafe {
                let r = map32(_mm256_loadu_si256(src.add(i) as *const __m256i));
                if streaming {
                    _mm256_stream_si256(dst.add(i) as *mut __m256i, r)
                } else {
                    _mm256_storeu_si256(dst.add(i) as *mut __m256i, r)
                }
            }
            i += 32;
        }
        (i..n).for_each(scalar);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_maps_every_byte_as_the_table_says() {
        let clamp_signed: [u8; 256] = std::array::from_fn(|b| (b as u8 as i8).clamp(-3, 90) as u8);
        let clamp_unsigned: [u8; 256] = std::array::from_fn(|b| (b as u8).clamp(7, 200));
        let general: [u8; 256] = std::array::from_fn(|b| (b as u8).wrapping_mul(37).rotate_left(3) ^ 0x5a);
        // relu of an f8e4m3 byte: positives, -0 (0x80) and the NaN 0xff kept, else 0.
        let keep: [u8; 256] = std::array::from_fn(|b| if b < 0x81 || b == 0xff || b % 37 == 5 { b as u8 } else { 0 });
        // relu of an f8e5m2 byte: as above, and the NaNs made canonical.
        let patched: [u8; 256] = std::array::from_fn(|b| match b {
            0x7d | 0x7e => 0x7f,
            0xfd | 0xfe => 0xff,
            0xff => 0xff,
            _ if b < 0x80 => b as u8,
            _ => 0,
        });
        assert_eq!(shape_of(&clamp_signed), Shape::ClampSigned(-3, 90));
        assert_eq!(shape_of(&clamp_unsigned), Shape::ClampUnsigned(7, 200));
        assert_eq!(shape_of(&general), Shape::General);
        assert!(matches!(shape_of(&keep), Shape::KeepOrConstant(Keep { other: 0, patched: 0, .. })));
        assert!(matches!(shape_of(&patched), Shape::KeepOrConstant(Keep { other: 0, patched: 4, .. })));
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 256) as u8).collect();
        for table in [&clamp_signed, &clamp_unsigned, &general, &keep, &patched] {
            for start in [0, 1, 13, 31] {
                for streaming in [false, true] {
                    let s = &src[start..];
                    let mut got = vec![0u8; s.len()];
                    // SAFETY: both hold s.len() bytes.
                    unsafe { apply_run(got.as_mut_ptr(), s.as_ptr(), s.len(), table, shape_of(table), streaming) };
                    store_fence();
                    assert!(got.iter().zip(s).all(|(&g, &x)| g == table[x as usize]), "start {start}");
                }
            }
        }
    }
}
