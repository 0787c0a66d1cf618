//! Quantized operands in the map driver: a staged block of stored integers (already
//! converted to f32) becomes values, and a block of f32 results becomes the integers to
//! store, with the core's rule ([`tensor_core::quant::Affine`]): the same bits at every
//! SIMD level.

use crate::simd_level::{simd_level, SimdLevel};
use tensor_core::quant::Affine;

/// `buf[i] = (buf[i] - zero_point) * scale` for `n` f32 values.
///
/// # Safety
/// `buf` is valid for `n` reads and writes of f32 (any alignment).
pub(crate) unsafe fn dequantize_in_place(buf: *mut f32, n: usize, a: &Affine) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: the level never exceeds the CPU's; pointer per the caller.
        return unsafe { avx2::dequantize(buf, n, a) };
    }
    for i in 0..n {
        // SAFETY: i < n, per the caller.
        unsafe { *buf.add(i) = a.dequantize(*buf.add(i)) };
    }
}

/// `buf[i] = quantize(buf[i])` (integral, within the stored range) for `n` f32 values.
///
/// # Safety
/// As [`dequantize_in_place`].
pub(crate) unsafe fn quantize_in_place(buf: *mut f32, n: usize, a: &Affine) {
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: as above.
        return unsafe { avx2::quantize(buf, n, a) };
    }
    for i in 0..n {
        // SAFETY: i < n, per the caller.
        unsafe { *buf.add(i) = a.quantize(*buf.add(i)) };
    }
}

/// `dst[i] = dequantize(src[i])` for `n` contiguous stored integers of `sdt` (i8, u8 or
/// i32): the widening load and the dequantizing in one pass (bytes: the quantizing copy's
/// [`crate::quantize::dequantize_bytes`], at any level). `false` (nothing written) for
/// another dtype, or i32 below AVX2 (callers then gather and dequantize in place).
///
/// # Safety
/// `src` valid for `n` reads of `sdt`, `dst` for `n` f32 writes; they do not overlap.
pub(crate) unsafe fn dequantize_widen(
    dst: *mut f32,
    src: *const u8,
    sdt: tensor_core::DType,
    n: usize,
    a: &Affine,
) -> bool {
    use tensor_core::DType;
    if matches!(sdt, DType::I8 | DType::U8) {
        // SAFETY: pointers per the caller.
        unsafe { crate::quantize::dequantize_bytes(dst, sdt == DType::I8, src, n, a, false) };
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 && sdt == DType::I32 {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        unsafe { avx2::dequantize_i32(dst, src as *const i32, n, a) };
        return true;
    }
    let _ = (dst, src, sdt, n, a);
    false
}

/// `dst[i] = quantize(src[i])` stored as `dtype` (the quantized dtype's integer: i8, u8 or
/// i32), for `n` contiguous elements: the quantizing and the narrowing store in one pass.
///
/// # Safety
/// `src` valid for `n` f32 reads, `dst` for `n` writes of `dtype`; they do not overlap.
pub(crate) unsafe fn quantize_narrow(dst: *mut u8, dtype: tensor_core::DType, src: *const f32, n: usize, a: &Affine) {
    use tensor_core::DType;
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 && matches!(dtype, DType::I8 | DType::U8 | DType::I32) {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::quantize_narrow(dst, dtype, src, n, a) };
    }
    macro_rules! narrow {
        ($t:ty) => {
            for i in 0..n {
                // SAFETY: i < n, per the caller; the value is integral and in range (`as`
                // saturates qint32's 2^31 to i32::MAX).
                unsafe { (dst as *mut $t).add(i).write_unaligned(a.quantize(*src.add(i)) as $t) };
            }
        };
    }
    match dtype {
        DType::I8 => narrow!(i8),
        DType::U8 => narrow!(u8),
        _ => narrow!(i32),
    }
}

/// The `"quantize_channels"` block function (a `MapFn`): `out[i] = clamp(round_half_even(
/// x[i] · inv[i]) + zp[i], qmin, qmax)`, NaN → `nan`, over f32 blocks; params `[qmin, qmax,
/// nan]`.
///
/// # Safety
/// The `MapFn` contract: `out` valid for `n` f32 writes, the three inputs for `n` f32 reads;
/// `out` equals an input or overlaps none.
pub(crate) unsafe fn quantize_channels(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    params: &[tensor_core::Scalar],
    _store: crate::kernel::Store,
) {
    let [x, inv, zp] = [0, 1, 2].map(|k| inputs[k] as *const f32);
    let p = |k: usize| params[k].to::<f32>();
    let a = Affine { scale: 1.0, inv_scale: 1.0, zero_point: 0.0, qmin: p(0), qmax: p(1), nan: p(2) };
    let out = out as *mut f32;
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: the level never exceeds the CPU's; pointers per the caller.
        return unsafe { avx2::quantize_channels(out, x, inv, zp, n, &a) };
    }
    for i in 0..n {
        // SAFETY: i < n, per the caller (reads before the write of the same index).
        unsafe {
            let one = Affine { inv_scale: *inv.add(i), zero_point: *zp.add(i), ..a };
            *out.add(i) = one.quantize(*x.add(i));
        }
    }
}

/// The `"dequantize_channels"` block function (a `MapFn`): `out[i] = (q[i] − zp[i]) ·
/// scale[i]` over f32 blocks.
///
/// # Safety
/// As [`quantize_channels`].
pub(crate) unsafe fn dequantize_channels(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    _params: &[tensor_core::Scalar],
    _store: crate::kernel::Store,
) {
    let [q, scale, zp] = [0, 1, 2].map(|k| inputs[k] as *const f32);
    let out = out as *mut f32;
    #[cfg(target_arch = "x86_64")]
    if simd_level() >= SimdLevel::Avx2 {
        // SAFETY: as above.
        return unsafe { avx2::dequantize_channels(out, q, scale, zp, n) };
    }
    for i in 0..n {
        // SAFETY: i < n, per the caller.
        unsafe { *out.add(i) = (*q.add(i) - *zp.add(i)) * *scale.add(i) };
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::convert_int::avx2::store_bytes;
    use std::arch::x86_64::*;
    use tensor_core::quant::Affine;

    /// # Safety
    /// AVX2 is available; `buf` valid for `n` f32 reads and writes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dequantize(buf: *mut f32, n: usize, a: &Affine) {
        let (zp, scale) = (_mm256_set1_ps(a.zero_point), _mm256_set1_ps(a.scale));
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements, unaligned loads/stores.
            unsafe {
                let v = _mm256_loadu_ps(buf.add(i));
                // (q - zp) * scale: two roundings' worth of ops, one inexact (q - zp is exact).
                _mm256_storeu_ps(buf.add(i), _mm256_mul_ps(_mm256_sub_ps(v, zp), scale));
            }
            i += 8;
        }
        for j in i..n {
            // SAFETY: j < n.
            unsafe { *buf.add(j) = a.dequantize(*buf.add(j)) };
        }
    }

    /// # Safety
    /// As [`dequantize`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize(buf: *mut f32, n: usize, a: &Affine) {
        let inv = _mm256_set1_ps(a.inv_scale);
        let zp = _mm256_set1_ps(a.zero_point);
        let (lo, hi, nan) = (_mm256_set1_ps(a.qmin), _mm256_set1_ps(a.qmax), _mm256_set1_ps(a.nan));
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements, unaligned loads/stores.
            unsafe {
                let x = _mm256_loadu_ps(buf.add(i));
                let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(x, inv));
                let v = _mm256_add_ps(r, zp);
                let clamped = _mm256_max_ps(_mm256_min_ps(v, hi), lo);
                let is_nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v);
                _mm256_storeu_ps(buf.add(i), _mm256_blendv_ps(clamped, nan, is_nan));
            }
            i += 8;
        }
        for j in i..n {
            // SAFETY: j < n.
            unsafe { *buf.add(j) = a.quantize(*buf.add(j)) };
        }
    }

    /// # Safety
    /// AVX2 is available; `src` valid for `n` i32 reads (any alignment), `dst` for `n` f32
    /// writes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dequantize_i32(dst: *mut f32, src: *const i32, n: usize, a: &Affine) {
        let (zp, scale) = (_mm256_set1_ps(a.zero_point), _mm256_set1_ps(a.scale));
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements of src and of dst.
            unsafe {
                let v = _mm256_cvtepi32_ps(_mm256_loadu_si256(src.add(i) as *const __m256i));
                // (q - zp) * scale: the rule's two steps
                _mm256_storeu_ps(dst.add(i), _mm256_mul_ps(_mm256_sub_ps(v, zp), scale));
            }
            i += 8;
        }
        for j in i..n {
            // SAFETY: j < n.
            unsafe { *dst.add(j) = a.dequantize(src.add(j).read_unaligned() as f32) };
        }
    }

    /// Eight quantized values (integral f32 in range) as i32; qint32's 2^31 saturates to
    /// i32::MAX.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn quantize8(x: __m256, inv: __m256, zp: __m256, lo: __m256, hi: __m256, nan: __m256) -> __m256i {
        let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(x, inv));
        let v = _mm256_add_ps(r, zp);
        let q = _mm256_blendv_ps(_mm256_max_ps(_mm256_min_ps(v, hi), lo), nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        let too_big = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(q, _mm256_set1_ps(2147483648.0)));
        _mm256_blendv_epi8(_mm256_cvtps_epi32(q), _mm256_set1_epi32(i32::MAX), too_big)
    }

    /// # Safety
    /// AVX2 is available; `src` valid for `n` f32 reads, `dst` for `n` writes of `dtype`
    /// (I8, U8 or I32).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_narrow(
        dst: *mut u8,
        dtype: tensor_core::DType,
        src: *const f32,
        n: usize,
        a: &Affine,
    ) {
        use tensor_core::DType;
        let inv = _mm256_set1_ps(a.inv_scale);
        let zp = _mm256_set1_ps(a.zero_point);
        let (lo, hi, nan) = (_mm256_set1_ps(a.qmin), _mm256_set1_ps(a.qmax), _mm256_set1_ps(a.nan));
        let q = |k: usize| {
            // SAFETY: callers pass k + 8 <= n.
            quantize8(unsafe { _mm256_loadu_ps(src.add(k)) }, inv, zp, lo, hi, nan)
        };
        let mut i = 0;
        if dtype == DType::I32 {
            while i + 8 <= n {
                // SAFETY: i + 8 <= n i32 slots.
                unsafe { _mm256_storeu_si256(dst.add(4 * i) as *mut __m256i, q(i)) };
                i += 8;
            }
        } else {
            while i + 32 <= n {
                // SAFETY: i + 32 <= n byte slots; AVX2 (this function's feature).
                unsafe { store_bytes(dst.add(i), [q(i), q(i + 8), q(i + 16), q(i + 24)], dtype == DType::I8) };
                i += 32;
            }
        }
        for j in i..n {
            // SAFETY: j < n, in bounds of src (caller's contract).
            let v = a.quantize(unsafe { *src.add(j) });
            // SAFETY: j < n; the value is integral and in range (`as` saturates 2^31).
            unsafe {
                match dtype {
                    DType::I8 => (dst as *mut i8).add(j).write(v as i8),
                    DType::U8 => dst.add(j).write(v as u8),
                    _ => (dst as *mut i32).add(j).write_unaligned(v as i32),
                }
            }
        }
    }

    /// # Safety
    /// AVX2 is available; `out` valid for `n` f32 writes, the inputs for `n` f32 reads.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_channels(
        out: *mut f32,
        x: *const f32,
        inv: *const f32,
        zp: *const f32,
        n: usize,
        a: &Affine,
    ) {
        let (lo, hi, nan) = (_mm256_set1_ps(a.qmin), _mm256_set1_ps(a.qmax), _mm256_set1_ps(a.nan));
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements of each, unaligned loads/stores.
            unsafe {
                let prod = _mm256_mul_ps(_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(inv.add(i)));
                let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(prod);
                let v = _mm256_add_ps(r, _mm256_loadu_ps(zp.add(i)));
                let clamped = _mm256_max_ps(_mm256_min_ps(v, hi), lo);
                let is_nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v);
                _mm256_storeu_ps(out.add(i), _mm256_blendv_ps(clamped, nan, is_nan));
            }
            i += 8;
        }
        for j in i..n {
            // SAFETY: j < n.
            unsafe {
                let one = Affine { inv_scale: *inv.add(j), zero_point: *zp.add(j), ..*a };
                *out.add(j) = one.quantize(*x.add(j));
            }
        }
    }

    /// # Safety
    /// As [`quantize_channels`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dequantize_channels(
        out: *mut f32,
        q: *const f32,
        scale: *const f32,
        zp: *const f32,
        n: usize,
    ) {
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n elements of each.
            unsafe {
                let d = _mm256_sub_ps(_mm256_loadu_ps(q.add(i)), _mm256_loadu_ps(zp.add(i)));
                _mm256_storeu_ps(out.add(i), _mm256_mul_ps(d, _mm256_loadu_ps(scale.add(i))));
            }
            i += 8;
        }
        for j in i..n {
            // SAFETY: j < n.
            unsafe { *out.add(j) = (*q.add(j) - *zp.add(j)) * *scale.add(j) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensor_core::DType;

    #[test]
    fn every_level_gives_the_scalar_rule() {
        let xs: Vec<f32> = (-300..300)
            .map(|i| i as f32 * 0.37)
            .chain([0.5, 1.5, 2.5, -0.5, -2.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30, -1e30])
            .collect();
        for (dtype, scale, zp) in [(DType::QInt8, 0.1, 3), (DType::QUInt8, 1.0, 10), (DType::QInt32, 1e-3, -7)] {
            let a = Affine::new(dtype, scale, zp);
            let want: Vec<f32> = xs.iter().map(|&x| a.quantize(x)).collect();
            let mut got = xs.clone();
            // SAFETY: got holds xs.len() f32.
            unsafe { quantize_in_place(got.as_mut_ptr(), got.len(), &a) };
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            let repr = dtype.repr();
            let mut bytes = vec![0u8; xs.len() * repr.size()];
            // SAFETY: bytes holds xs.len() elements of repr.
            unsafe { quantize_narrow(bytes.as_mut_ptr(), repr, xs.as_ptr(), xs.len(), &a) };
            let narrow: Vec<f32> = (0..xs.len())
                .map(|i| match repr {
                    DType::I8 => bytes[i] as i8 as f32,
                    DType::U8 => bytes[i] as f32,
                    _ => i32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()) as f32,
                })
                .collect();
            let saturated: Vec<f32> =
                want.iter().map(|&q| if q >= 2147483648.0 { i32::MAX as f32 } else { q }).collect();
            assert_eq!(narrow, saturated, "{dtype} narrow");
            let back: Vec<f32> = want.iter().map(|&q| a.dequantize(q)).collect();
            let mut widened = vec![0f32; xs.len()];
            // SAFETY: bytes holds xs.len() integers of repr, widened as many f32.
            if unsafe { dequantize_widen(widened.as_mut_ptr(), bytes.as_ptr(), repr, xs.len(), &a) } {
                let from_ints: Vec<f32> = narrow.iter().map(|&q| a.dequantize(q)).collect();
                assert_eq!(widened, from_ints, "{dtype} widen");
            }
            // SAFETY: as above.
            unsafe { dequantize_in_place(got.as_mut_ptr(), got.len(), &a) };
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                back.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}
