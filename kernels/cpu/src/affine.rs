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
            let back: Vec<f32> = want.iter().map(|&q| a.dequantize(q)).collect();
            // SAFETY: as above.
            unsafe { dequantize_in_place(got.as_mut_ptr(), got.len(), &a) };
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                back.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}
