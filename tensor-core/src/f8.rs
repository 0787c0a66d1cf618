//! The two 8-bit float element types of the OCP "FP8" formats: [`F8E4M3`] (the "fn" variant:
//! no infinities, one NaN pattern per sign, max 448) and [`F8E5M2`] (IEEE-like: infinities,
//! NaNs, max 57344).
//!
//! These are our own `u8` newtypes rather than a crate's, because the conversion rule must be
//! PyTorch's and the same on the CPU and in CUDA C (`kernels/cuda/include/prelude.cuh` ports
//! [`encode`] line for line). The `float8` crate saturates E5M2 overflow to the largest
//! finite value by default, where PyTorch's `float8_e5m2` gives infinity.
//!
//! **The rule** (PyTorch 2.15's `to(torch.float8_*)`, measured with its PyPI wheel: the
//! codes in this module's `pytorch_cases` test; CI's `ml_dtypes` oracle,
//! `tests/f8_oracle.py`, checks every other code):
//! - round to nearest, ties to even, from the source's `f32` value: an f64 (or integer)
//!   source is first rounded to `f32`, as PyTorch (whose f8 types convert from `float`)
//!   and `ml_dtypes` do, so `1.0625 + 2^-30` becomes the tie `1.0625` and then `1.0`;
//! - E4M3: a finite value beyond the range, and ±infinity, **saturate** to ±448 (`ml_dtypes`
//!   and PyTorch's older c10 sources give NaN there); NaN becomes `0x7f` with the source's
//!   sign (`0xff` for a negative NaN);
//! - E5M2: values from 61440 up (the midpoint above 57344) become ±infinity, infinities stay
//!   infinite, NaN becomes `0x7f` with the source's sign;
//! - decoding is exact; a NaN decodes to the quiet f32 NaN of its sign.
//!
//! ```
//! # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
//! use tensor_ops::{F8E4M3, F8E5M2};
//! assert_eq!(F8E4M3::from_f32(1000.0).to_f32(), 448.0);           // saturates
//! assert_eq!(F8E5M2::from_f32(1e6).to_f32(), f32::INFINITY);      // overflows
//! assert_eq!(F8E4M3::from_f32(0.3).to_bits(), 0x2a);               // 0.3125 = 1.25 · 2^-2, nearest
//! assert!(F8E4M3::from_f32(f32::NAN).to_f32().is_nan());
//! ```

use std::cmp::Ordering;
use std::fmt;

/// The layout of one 8-bit format.
#[derive(Debug, Clone, Copy)]
struct Format {
    /// Mantissa (fraction) bits.
    mant: u32,
    /// Exponent bias.
    bias: i32,
    /// True for E4M3 "fn" (saturating, no infinity, NaN = all exponent and mantissa bits set).
    finite_only: bool,
}

const E4M3: Format = Format { mant: 3, bias: 7, finite_only: true };
const E5M2: Format = Format { mant: 2, bias: 15, finite_only: false };

/// Rounds `m >> s` to nearest, ties to even.
const fn round_shift(m: u64, s: u32) -> u64 {
    if s == 0 {
        return m;
    }
    if s > 63 {
        return 0; // m < 2^53 <= 2^(s-1): below half of one unit
    }
    let q = m >> s;
    let rem = m & ((1u64 << s) - 1);
    let half = 1u64 << (s - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// Fraction bits of an `f32`: every source is rounded from its `f32` value.
const P: u32 = 23;

/// Encodes a finite or special value given as sign, class and (for finite values) the
/// unbiased exponent `e` and significand `m` of an `f32` ([`P`] fraction bits, `m`
/// including the implicit bit for normals): one round to nearest even, then the format's
/// overflow rule.
const fn encode(f: Format, neg: bool, nan: bool, inf: bool, e: i32, m: u64) -> u8 {
    let sign = if neg { 0x80u8 } else { 0 };
    if nan {
        return sign | 0x7f;
    }
    let max_code: u64 = if f.finite_only { 0x7e } else { 0x7b };
    let over: u8 = if f.finite_only { 0x7e } else { 0x7c };
    if inf {
        return sign | over;
    }
    if m == 0 {
        return sign;
    }
    let emin = 1 - f.bias;
    let code = if e >= emin {
        let q = round_shift(m, P - f.mant); // in [2^mant, 2^(mant+1)]
                                            // A carry out of the significand moves into the exponent field on its own.
        (((e - emin + 1) as u64) << f.mant) + q - (1u64 << f.mant)
    } else {
        let s = (P - f.mant) as i64 + (emin - e) as i64;
        round_shift(m, if s > 64 { 64 } else { s as u32 })
    };
    if code > max_code {
        sign | over
    } else {
        sign | code as u8
    }
}

/// Splits an `f32` into (neg, nan, inf, e, m): `m` with its implicit bit for normals, 23
/// fraction bits.
const fn split_f32(x: f32) -> (bool, bool, bool, i32, u64) {
    let b = x.to_bits();
    let neg = b >> 31 == 1;
    let exp = ((b >> 23) & 0xff) as i32;
    let frac = (b & 0x7f_ffff) as u64;
    if exp == 0xff {
        return (neg, frac != 0, frac == 0, 0, 0);
    }
    if exp == 0 {
        (neg, false, false, -126, frac)
    } else {
        (neg, false, false, exp - 127, frac | (1u64 << 23))
    }
}

/// Decodes `bits` of format `f` to its exact `f32` (a NaN to the quiet NaN of its sign).
const fn decode(f: Format, bits: u8) -> f32 {
    let neg = bits & 0x80 != 0;
    let sign = if neg { 0x8000_0000u32 } else { 0 };
    let exp_bits = 7 - f.mant;
    let exp_max = (1u32 << exp_bits) - 1;
    let exp = ((bits as u32) >> f.mant) & exp_max;
    let mant = bits as u32 & ((1u32 << f.mant) - 1);
    if f.finite_only {
        if bits & 0x7f == 0x7f {
            return f32::from_bits(sign | 0x7fc0_0000);
        }
    } else if exp == exp_max {
        return f32::from_bits(sign | if mant == 0 { 0x7f80_0000 } else { 0x7fc0_0000 });
    }
    if exp == 0 {
        if mant == 0 {
            return f32::from_bits(sign);
        }
        // mant * 2^(emin - mant_bits): normalise into an f32 normal (always in range).
        let lead = 31 - mant.leading_zeros(); // position of the highest set bit
        let e = 1 - f.bias - f.mant as i32 + lead as i32;
        let frac = (mant & !(1 << lead)) << (23 - lead);
        return f32::from_bits(sign | (((e + 127) as u32) << 23) | frac);
    }
    let e = exp as i32 - f.bias;
    f32::from_bits(sign | (((e + 127) as u32) << 23) | (mant << (23 - f.mant)))
}

/// The 256 decoded values of a format, computed at compile time.
const fn table(f: Format) -> [f32; 256] {
    let mut t = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode(f, i as u8);
        i += 1;
    }
    t
}

/// Every [`F8E4M3`] bit pattern decoded: `F8E4M3_TO_F32[b as usize]`.
pub static F8E4M3_TO_F32: [f32; 256] = table(E4M3);
/// Every [`F8E5M2`] bit pattern decoded.
pub static F8E5M2_TO_F32: [f32; 256] = table(E5M2);

macro_rules! f8_type {
    ($(#[$doc:meta])* $name:ident, $fmt:expr, $table:ident, $max:expr, $min_pos:expr, $eps:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// +0.
            pub const ZERO: Self = Self(0);
            /// 1.0.
            pub const ONE: Self = Self::from_f32(1.0);
            /// The largest finite value.
            pub const MAX: Self = Self($max);
            /// The smallest finite value (`-MAX`).
            pub const MIN: Self = Self($max | 0x80);
            /// The smallest positive normal value.
            pub const MIN_POSITIVE: Self = Self($min_pos);
            /// The difference between 1.0 and the next larger value.
            pub const EPSILON: Self = Self($eps);
            /// The NaN this crate writes (`0x7f`).
            pub const NAN: Self = Self(0x7f);

            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
            /// The bits of this value.
            pub const fn to_bits(self) -> u8 {
                self.0
            }
            /// Rounds an `f32` (see the module's rule).
            #[inline]
            pub const fn from_f32(x: f32) -> Self {
                let (neg, nan, inf, e, m) = split_f32(x);
                Self(encode($fmt, neg, nan, inf, e, m))
            }
            /// Rounds an `f64` through `f32` (to nearest even), as PyTorch and `ml_dtypes`
            /// cast one (see the module's rule).
            #[inline]
            pub const fn from_f64(x: f64) -> Self {
                Self::from_f32(x as f32)
            }
            /// The exact value as `f32`.
            #[inline(always)]
            pub fn to_f32(self) -> f32 {
                $table[self.0 as usize]
            }
            /// The exact value as `f64`.
            #[inline(always)]
            pub fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            /// True for a NaN.
            pub fn is_nan(self) -> bool {
                self.to_f32().is_nan()
            }
        }

        impl PartialEq for $name {
            /// As floats: NaN is unequal to everything, `-0 == +0`.
            fn eq(&self, other: &Self) -> bool {
                self.to_f32() == other.to_f32()
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        impl From<$name> for f32 {
            fn from(x: $name) -> f32 {
                x.to_f32()
            }
        }

        impl From<$name> for f64 {
            fn from(x: $name) -> f64 {
                x.to_f64()
            }
        }
    };
}

f8_type!(
    /// OCP FP8 E4M3 ("fn": finite only), PyTorch's `float8_e4m3fn`: 1 sign, 4 exponent
    /// (bias 7) and 3 mantissa bits; max ±448, no infinities, NaN `0x7f`/`0xff`.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::F8E4M3;
    /// assert_eq!(F8E4M3::MAX.to_f32(), 448.0);
    /// assert_eq!(F8E4M3::from_f32(f32::INFINITY), F8E4M3::MAX);
    /// assert_eq!(F8E4M3::from_bits(0x01).to_f32(), 1.0 / 512.0); // 2^-9
    /// ```
    F8E4M3, E4M3, F8E4M3_TO_F32, 0x7e, 0x08, 0x20
);

f8_type!(
    /// OCP FP8 E5M2, PyTorch's `float8_e5m2`: 1 sign, 5 exponent (bias 15) and 2 mantissa
    /// bits (the top byte of an IEEE half); max ±57344, infinities, NaNs.
    ///
    /// ```
    /// # mod tensor_ops { pub use ::tensor_core::*; pub mod tensor_core { pub use ::tensor_core::*; } } // tensor_ops paths
    /// use tensor_ops::F8E5M2;
    /// assert_eq!(F8E5M2::MAX.to_f32(), 57344.0);
    /// assert_eq!(F8E5M2::from_f32(61439.0), F8E5M2::MAX);
    /// assert_eq!(F8E5M2::from_f32(61440.0).to_f32(), f32::INFINITY);
    /// ```
    F8E5M2, E5M2, F8E5M2_TO_F32, 0x7b, 0x04, 0x34
);

#[cfg(test)]
mod tests {
    use super::*;

    /// 2^e, exactly (a normal f64; `powi` is not exact under Miri).
    fn pow2(e: i32) -> f64 {
        f64::from_bits(((e + 1023) as u64) << 52)
    }

    /// The naive model: the nearest of the 256 decoded values by exact f64 distance, ties to
    /// the even code; then the format's overflow rule.
    fn nearest(x: f64, table: &[f32; 256], finite_only: bool) -> u8 {
        if x.is_nan() {
            return if x.is_sign_negative() { 0xff } else { 0x7f };
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        let max_code: u8 = if finite_only { 0x7e } else { 0x7b };
        let over: u8 = if finite_only { 0x7e } else { 0x7c };
        if a.is_infinite() {
            return sign | over;
        }
        // Candidates: the finite magnitudes 0..=max_code, plus the value the next code would
        // have with an unbounded exponent (480 for E4M3, 2^16 for E5M2).
        let top = max_code + 1;
        let beyond = if finite_only { 480.0 } else { 65536.0 };
        let mut best = 0u8;
        let mut best_d = f64::INFINITY;
        for c in 0..=top {
            let v = if c == top { beyond } else { table[c as usize] as f64 };
            let d = (v - a).abs();
            if d < best_d || (d == best_d && c % 2 == 0) {
                best = c;
                best_d = d;
            }
        }
        if best > max_code || a > beyond {
            best = over;
        }
        sign | best
    }

    fn decode_model(bits: u8, e: u32, m: u32, bias: i32, finite_only: bool) -> f64 {
        let s = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = ((bits as u32) >> m) & ((1 << e) - 1);
        let man = bits as u32 & ((1 << m) - 1);
        if finite_only && bits & 0x7f == 0x7f {
            return f64::NAN;
        }
        if !finite_only && exp == (1 << e) - 1 {
            return if man == 0 { s * f64::INFINITY } else { f64::NAN };
        }
        if exp == 0 {
            s * man as f64 * pow2(1 - bias - m as i32)
        } else {
            s * (1.0 + man as f64 / (1 << m) as f64) * pow2(exp as i32 - bias)
        }
    }

    #[test]
    fn every_pattern_decodes_exactly() {
        for b in 0..=255u8 {
            let want = decode_model(b, 4, 3, 7, true);
            let got = F8E4M3::from_bits(b).to_f32();
            assert!(got as f64 == want || (want.is_nan() && got.is_nan()), "e4m3 {b:#04x}: {got} vs {want}");
            if got.is_nan() {
                assert_eq!(got.is_sign_negative(), b & 0x80 != 0);
            }
            let want = decode_model(b, 5, 2, 15, false);
            let got = F8E5M2::from_bits(b).to_f32();
            assert!(got as f64 == want || (want.is_nan() && got.is_nan()), "e5m2 {b:#04x}: {got} vs {want}");
        }
    }

    #[test]
    fn every_pattern_round_trips() {
        for b in 0..=255u8 {
            for (x, back) in [
                (F8E4M3::from_bits(b).to_f32(), F8E4M3::from_f32(F8E4M3::from_bits(b).to_f32()).to_bits()),
                (F8E5M2::from_bits(b).to_f32(), F8E5M2::from_f32(F8E5M2::from_bits(b).to_f32()).to_bits()),
            ] {
                if x.is_nan() {
                    assert_eq!(back & 0x7f, 0x7f, "{b:#04x}");
                } else {
                    assert_eq!(back, b, "{b:#04x} -> {x}");
                }
            }
        }
    }

    /// Every value next to a rounding boundary (each midpoint between neighbours, one f32
    /// ulp either side), the specials, and a sweep of every 65537th f32 pattern.
    fn probes(table: &[f32; 256]) -> Vec<f32> {
        let mut v: Vec<f32> =
            vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MAX, f32::MIN_POSITIVE, 1e-45];
        let mut mags: Vec<f64> = table.iter().filter(|x| x.is_finite() && **x >= 0.0).map(|x| *x as f64).collect();
        mags.push(480.0);
        mags.push(65536.0);
        mags.sort_by(|a, b| a.partial_cmp(b).unwrap());
        mags.dedup(); // +0 and -0
        for w in mags.windows(2) {
            let mid = ((w[0] + w[1]) / 2.0) as f32;
            for x in [mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1), w[0] as f32] {
                v.push(x);
                v.push(-x);
            }
        }
        let mut b = 0u32;
        while let Some(n) = b.checked_add(65537) {
            v.push(f32::from_bits(b));
            b = n;
        }
        v
    }

    #[test]
    #[cfg_attr(miri, ignore = "millions of probes of safe arithmetic: the native run covers it")]
    fn f32_rounding_matches_the_nearest_value_model() {
        for x in probes(&F8E4M3_TO_F32) {
            assert_eq!(F8E4M3::from_f32(x).to_bits(), nearest(x as f64, &F8E4M3_TO_F32, true), "e4m3 from {x:e}");
            assert_eq!(F8E4M3::from_f64(x as f64).to_bits(), F8E4M3::from_f32(x).to_bits(), "{x:e}");
        }
        for x in probes(&F8E5M2_TO_F32) {
            assert_eq!(F8E5M2::from_f32(x).to_bits(), nearest(x as f64, &F8E5M2_TO_F32, false), "e5m2 from {x:e}");
            assert_eq!(F8E5M2::from_f64(x as f64).to_bits(), F8E5M2::from_f32(x).to_bits(), "{x:e}");
        }
    }

    #[test]
    fn f64_rounds_through_f32_as_pytorch_and_ml_dtypes() {
        // 1 + 2^-4 + 2^-40 is just above the E4M3 midpoint between 1 and 1.125; its f32 is
        // the tie 1.0625, which rounds to even (1.0): PyTorch's and ml_dtypes' result.
        let x = 1.0 + pow2(-4) + pow2(-40);
        assert_eq!(F8E4M3::from_f64(x).to_f32(), 1.0);
        assert_eq!(nearest(x, &F8E4M3_TO_F32, true), 0x39, "(once from f64 it would be 1.125)");
        // Just below 61440 is 57344 in one rounding; its f32 is 61440, the tie: infinity.
        assert_eq!(F8E5M2::from_f64(61440.0 - pow2(-30)).to_f32(), f32::INFINITY);
    }

    #[test]
    fn pytorch_cases() {
        // Values measured with PyTorch 2.15's `tensor.to(torch.float8_*)` on this machine
        // (again on 2026-11-29 with the 2.15.0 PyPI wheel: E4M3 saturates, NaN keeps its
        // sign, an f64 source goes through f32).
        for (x, bits) in [
            (464.0, 0x7e),
            (464.03125, 0x7e),
            (479.9, 0x7e),
            (480.0, 0x7e),
            (1e6, 0x7e),
            (-1e6, 0xfe),
            (f32::INFINITY, 0x7e),
            (f32::NEG_INFINITY, 0xfe),
            (-f32::NAN, 0xff),
            (pow2(-10) as f32, 0x00),
        ] {
            assert_eq!(F8E4M3::from_f32(x).to_bits(), bits, "e4m3 {x}");
        }
        // 2^-9.5: nearer 2^-9 (the smallest subnormal) than 0
        assert_eq!(F8E4M3::from_f32((pow2(-10) * std::f64::consts::SQRT_2) as f32).to_bits(), 0x01);
        for (x, bits) in
            [(61439.0, 0x7b), (61440.0, 0x7c), (f32::INFINITY, 0x7c), (448.0, 0x5f), (480.0, 0x60), (1000.0, 0x64)]
        {
            assert_eq!(F8E5M2::from_f32(x).to_bits(), bits, "e5m2 {x}");
        }
        assert_eq!(F8E4M3::from_f32(f32::NAN).to_bits(), 0x7f);
        assert_eq!(F8E5M2::from_f32(f32::NAN).to_bits(), 0x7f);
        assert_eq!(F8E4M3::ONE.to_f32(), 1.0);
        assert_eq!(F8E5M2::ONE.to_f32(), 1.0);
        assert_eq!(F8E4M3::EPSILON.to_f32(), 0.125);
        assert_eq!(F8E5M2::EPSILON.to_f32(), 0.25);
        assert_eq!(F8E4M3::MIN_POSITIVE.to_f64(), pow2(-6));
        assert_eq!(F8E5M2::MIN_POSITIVE.to_f64(), pow2(-14));
    }
}
