//! Contiguous runs of the 8-bit floats to and from `f32`, branch-free so that they compile to
//! vector code (AVX2 / AVX-512 through [`crate::convert`]'s level dispatch), bit for bit
//! equal to `tensor_core::F8E4M3`/`F8E5M2`'s `from_f32`/`to_f32` (checked for every pattern
//! and every f32 class in `kernels/cpu/tests/value_convert.rs`).
//!
//! Encoding rounds to nearest even in integer arithmetic for results in the normal range
//! (add half an f8 ulp less one, plus the kept bit, and shift), and for the subnormal range
//! by adding the f32 whose ulp is the format's smallest subnormal (the hardware's
//! round-to-nearest-even does the rounding; the bits above it are the code). E4M3 then
//! saturates to 448, E5M2 overflows to infinity; NaN becomes `0x7f` with its sign.

/// The parameters of one format, as shifts and bit patterns of `f32`.
#[derive(Clone, Copy)]
pub(crate) struct F8Layout {
    /// f32 mantissa bits dropped: 23 − mantissa bits.
    shift: u32,
    /// (127 − bias) in the f8 code's exponent position: subtracted after the shift.
    rebias: u32,
    /// f32 bits of the smallest normal of the format: below it the subnormal path is taken.
    min_normal: u32,
    /// f32 bits of 2^k whose ulp is the format's smallest subnormal.
    denorm_magic: u32,
    /// The code finite overflow becomes (E4M3 0x7e: saturate; E5M2 0x7c: infinity).
    overflow: u32,
    /// Mantissa bits.
    mant: u32,
    /// True for E4M3 (`0x7f` is its only NaN; no infinities).
    finite_only: bool,
}

/// E4M3 ("fn").
pub(crate) const E4M3: F8Layout = F8Layout {
    shift: 20,
    rebias: 120 << 3,
    min_normal: 121 << 23,
    denorm_magic: 141 << 23,
    overflow: 0x7e,
    mant: 3,
    finite_only: true,
};
/// E5M2.
pub(crate) const E5M2: F8Layout = F8Layout {
    shift: 21,
    rebias: 112 << 2,
    min_normal: 113 << 23,
    denorm_magic: 134 << 23,
    overflow: 0x7c,
    mant: 2,
    finite_only: false,
};

/// One f32 to its f8 bits, without branches.
#[inline(always)]
pub(crate) fn encode(f: F8Layout, x: f32) -> u8 {
    let b = x.to_bits();
    let sign = (b >> 24) & 0x80;
    let a = b & 0x7fff_ffff;
    let normal = (a.wrapping_add((1 << (f.shift - 1)) - 1 + ((a >> f.shift) & 1)) >> f.shift).wrapping_sub(f.rebias);
    let sub = (f32::from_bits(a) + f32::from_bits(f.denorm_magic)).to_bits().wrapping_sub(f.denorm_magic);
    let code = if a < f.min_normal { sub } else { normal };
    let code = if code > f.overflow { f.overflow } else { code };
    let code = if a > 0x7f80_0000 { 0x7f } else { code };
    (sign | code) as u8
}

/// One f8 (bits) to its exact f32, without branches (a NaN to the quiet NaN of its sign).
#[inline(always)]
pub(crate) fn decode(f: F8Layout, bits: u8) -> f32 {
    let b = bits as u32;
    let sign = (b & 0x80) << 24;
    let mag = b & 0x7f;
    let normal = (mag << (23 - f.mant)).wrapping_add(f.rebias << (23 - f.mant));
    // mag · 2^(emin − mant) for subnormals: the magic's ulp times mag, exact.
    let unit = f32::from_bits(f.denorm_magic - (23 << 23));
    let sub = (mag as f32 * unit).to_bits();
    let v = if mag < 1 << f.mant { sub } else { normal };
    let special = if f.finite_only { mag == 0x7f } else { mag >= 0x7c };
    let special_bits = if f.finite_only || mag > 0x7c { 0x7fc0_0000 } else { 0x7f80_0000 };
    f32::from_bits(sign | if special { special_bits } else { v })
}
