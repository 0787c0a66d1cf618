//! Vectorized `f64` functions behind [`super::F64x4`] (the `f32` ones are in `math32`,
//! which uses these only for `pow` and for sin/cos lanes beyond its reduction's range).
//!
//! The transcendental kernels work on `f64x4`: range reduction (Cody–Waite with split
//! constants) followed by Taylor polynomials of high enough degree that truncation is far
//! below an f64 ulp. `pow_for_f32` serves widened f32 arguments and is accurate to far
//! below an f32 ulp. Special values (NaN, ±inf, ±0, subnormals, overflow, underflow) are
//! fixed up with masks to match `std`. sin/cos lanes with `|x| > 1e6` (rare) fall back to
//! `std` per lane, as does f64 `pow`.

use wide::bytemuck::cast;
use wide::{f64x4, u64x4};

const MAGIC_RND: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
const TWO52: f64 = 4_503_599_627_370_496.0;
const LOG2E: f64 = std::f64::consts::LOG2_E;
const LN2: f64 = std::f64::consts::LN_2;
/// ln 2 split: `LN2_HI` has 32 significant bits (so `k * LN2_HI` is exact for |k| < 2^21).
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// pi/2 split in three: the first two have 33 significant bits (exact products for
/// |k| < 2^20).
const PIO2_1: f64 = 1.570_796_326_734_125_6;
const PIO2_2: f64 = 6.077_100_506_303_966e-11;
const PIO2_3: f64 = 2.022_266_248_795_950_6e-21;
const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
/// sin/cos reduction is accurate below this; larger lanes use `std`.
const TRIG_MAX: f64 = 1.0e6;

/// `1/k!` for `k` in `0..=20`.
const INV_FACT: [f64; 21] = {
    let mut t = [1.0; 21];
    let mut f = 1.0;
    let mut k = 1;
    while k < 21 {
        f *= k as f64;
        t[k] = 1.0 / f;
        k += 1;
    }
    t
};

/// `2/(2k+1)` for `k` in `0..12` (the series of `2 atanh(s)`).
const ATANH_C: [f64; 12] = {
    let mut t = [0.0; 12];
    let mut k = 0;
    while k < 12 {
        t[k] = 2.0 / (2 * k + 1) as f64;
        k += 1;
    }
    t
};

macro_rules! rounding {
    ($w:ident, $t:ident, $two_m:expr) => {
        /// Round toward zero (`std` `trunc`, sign of zero kept).
        #[inline(always)]
        pub fn trunc(x: $w) -> $w {
            let two_m = $w::splat($two_m);
            let one = $w::splat(1.0);
            let a = x.abs();
            let r = (a + two_m) - two_m;
            let r = r.simd_gt(a).select(r - one, r);
            let small = a.simd_lt(two_m);
            small.select(r | (x & $w::splat(-0.0)), x)
        }
        /// Round down.
        #[inline(always)]
        pub fn floor(x: $w) -> $w {
            let t = trunc(x);
            t.simd_gt(x).select(t - $w::splat(1.0), t)
        }
        /// Round up.
        #[inline(always)]
        pub fn ceil(x: $w) -> $w {
            let t = trunc(x);
            t.simd_lt(x).select(t + $w::splat(1.0), t)
        }
        /// Round half away from zero (`std` `round`).
        #[inline(always)]
        pub fn round(x: $w) -> $w {
            let t = trunc(x);
            let d = (x - t).abs();
            let one = $w::splat(1.0) | (x & $w::splat(-0.0));
            d.simd_ge($w::splat(0.5)).select(t + one, t)
        }
    };
}

/// Kernels on `f64x4`.
pub mod m64 {
    use super::*;

    rounding!(f64x4, f64, TWO52);

    #[inline(always)]
    fn s(x: f64) -> f64x4 {
        f64x4::splat(x)
    }

    /// Round to nearest even, valid for `|x| < 2^51`.
    #[inline(always)]
    fn rint_small(x: f64x4) -> f64x4 {
        (x + s(MAGIC_RND)) - s(MAGIC_RND)
    }

    /// `2^k` for integer-valued `k` in `[-1023, 1024)` (`-1023` gives 0).
    #[inline(always)]
    fn pow2i(k: f64x4) -> f64x4 {
        let b: u64x4 = cast(k + s(1023.0 + TWO52));
        cast((b - u64x4::splat(TWO52.to_bits())) << 52)
    }

    /// `y * 2^k` for integer `k` in `[-2000, 2000]`, rounding once.
    #[inline(always)]
    fn scale2(y: f64x4, k: f64x4) -> f64x4 {
        let k1 = rint_small(k * s(0.5) - s(0.25)); // floor(k / 2)
        let k2 = k - k1;
        y * pow2i(k1) * pow2i(k2)
    }

    /// `e^r - 1` for `|r| <= ln2/2` (Taylor to degree 13).
    #[inline(always)]
    fn expm1_poly(r: f64x4) -> f64x4 {
        let mut p = s(INV_FACT[13]);
        let mut k = 12;
        while k >= 2 {
            p = p * r + s(INV_FACT[k]);
            k -= 1;
        }
        p * r * r + r
    }

    /// e^x.
    #[inline]
    pub fn exp(x: f64x4) -> f64x4 {
        let xc = x.fast_max(s(-760.0)).fast_min(s(720.0));
        let kf = rint_small(xc * s(LOG2E));
        let r = (xc - kf * s(LN2_HI)) - kf * s(LN2_LO);
        let y = s(1.0) + expm1_poly(r);
        x.is_nan().select(x, scale2(y, kf))
    }

    /// 2^x.
    #[inline]
    pub fn exp2(x: f64x4) -> f64x4 {
        let xc = x.fast_max(s(-1100.0)).fast_min(s(1100.0));
        let kf = rint_small(xc);
        let r = xc - kf;
        let y = s(1.0) + expm1_poly(r * s(LN2));
        x.is_nan().select(x, scale2(y, kf))
    }

    /// `(e, f, s, hfsq, R)` with `x = 2^e (1 + f)`, `1 + f` in `[sqrt(1/2), sqrt(2)]`,
    /// `s = f / (2 + f)`, `ln(1 + f) = f - hfsq + s (hfsq + R)`.
    #[inline(always)]
    fn log_parts(x: f64x4) -> (f64x4, f64x4, f64x4, f64x4, f64x4) {
        let sub = x.simd_lt(s(f64::MIN_POSITIVE));
        let xs = sub.select(x * s(18_014_398_509_481_984.0), x); // 2^54
        let bias = sub.select(s(-54.0 - 1023.0), s(-1023.0));
        let bits: u64x4 = cast(xs);
        let eb = (bits >> 52) & u64x4::splat(0x7ff);
        let e = cast::<u64x4, f64x4>(eb | u64x4::splat(TWO52.to_bits())) - s(TWO52) + bias;
        let m: f64x4 = cast((bits & u64x4::splat(0x000f_ffff_ffff_ffff)) | u64x4::splat(1.0f64.to_bits()));
        let big = m.simd_gt(s(std::f64::consts::SQRT_2));
        let m = big.select(m * s(0.5), m);
        let e = big.select(e + s(1.0), e);
        let f = m - s(1.0);
        let sv = f / (s(2.0) + f);
        let z = sv * sv;
        let mut p = s(ATANH_C[11]);
        let mut k = 10;
        while k >= 1 {
            p = p * z + s(ATANH_C[k]);
            k -= 1;
        }
        let r = p * z;
        let hfsq = s(0.5) * f * f;
        (e, f, sv, hfsq, r)
    }

    /// ln/log2 of zero, negatives, infinities and NaN.
    #[inline(always)]
    fn log_specials(x: f64x4, res: f64x4) -> f64x4 {
        let res = x.simd_eq(s(f64::INFINITY)).select(s(f64::INFINITY), res);
        let res = x.simd_eq(s(0.0)).select(s(f64::NEG_INFINITY), res);
        let res = x.simd_lt(s(0.0)).select(s(f64::NAN), res);
        x.is_nan().select(x, res)
    }

    /// Natural log.
    #[inline]
    pub fn ln(x: f64x4) -> f64x4 {
        let (e, f, sv, hfsq, r) = log_parts(x);
        let res = e * s(LN2_HI) - ((hfsq - (sv * (hfsq + r) + e * s(LN2_LO))) - f);
        log_specials(x, res)
    }

    /// Log base 2.
    #[inline]
    pub fn log2(x: f64x4) -> f64x4 {
        let (e, f, sv, hfsq, r) = log_parts(x);
        let lnm = f - (hfsq - sv * (hfsq + r));
        log_specials(x, e + lnm * s(LOG2E))
    }

    /// Per-lane `std` fallback for lanes in `m`.
    #[inline(never)]
    fn patch(x: f64x4, v: f64x4, m: f64x4, f: fn(f64) -> f64) -> f64x4 {
        let (xa, mut va, ma) = (x.to_array(), v.to_array(), m.to_bitmask());
        for (i, v) in va.iter_mut().enumerate() {
            if (ma >> i) & 1 != 0 {
                *v = f(xa[i]);
            }
        }
        f64x4::new(va)
    }

    /// `(sin r, cos r, q)` with `x = r + q pi/2`, `|r| <= pi/4` (valid for `|x| <= TRIG_MAX`).
    #[inline(always)]
    fn sincos_parts(x: f64x4) -> (f64x4, f64x4, u64x4) {
        let t = x * s(FRAC_2_PI) + s(MAGIC_RND);
        let kf = t - s(MAGIC_RND);
        let q = cast::<f64x4, u64x4>(t) & u64x4::splat(3);
        let r = ((x - kf * s(PIO2_1)) - kf * s(PIO2_2)) - kf * s(PIO2_3);
        let z = r * r;
        // sin: r - r^3/3! + ... - r^19/19!
        let mut p = s(-INV_FACT[19]);
        let mut k = 17;
        while k >= 3 {
            let c = if (k / 2) % 2 == 1 { -INV_FACT[k] } else { INV_FACT[k] };
            p = p * z + s(c);
            k -= 2;
        }
        let sn = r + r * z * p;
        // cos: 1 - r^2/2 + r^4/4! - ... + r^20/20!
        let mut p = s(INV_FACT[20]);
        let mut k = 18;
        while k >= 4 {
            let c = if (k / 2) % 2 == 1 { -INV_FACT[k] } else { INV_FACT[k] };
            p = p * z + s(c);
            k -= 2;
        }
        let hz = s(0.5) * z;
        let w = s(1.0) - hz;
        let cs = w + (((s(1.0) - w) - hz) + z * z * p);
        (sn, cs, q)
    }

    #[inline(always)]
    fn trig(x: f64x4, cos: bool) -> f64x4 {
        let (sn, cs, q) = sincos_parts(x);
        let qq = if cos { q + u64x4::splat(1) } else { q };
        let swap: f64x4 = cast((q & u64x4::splat(1)).simd_eq(u64x4::splat(1)));
        let v = if cos { swap.select(sn, cs) } else { swap.select(cs, sn) };
        let v = v ^ cast::<u64x4, f64x4>((qq & u64x4::splat(2)) << 62);
        // sin(±0) = ±0 (the polynomial would give +0 for -0).
        let v = if cos { v } else { x.simd_eq(s(0.0)).select(x, v) };
        let far = !x.abs().simd_le(s(TRIG_MAX));
        if far.any() {
            patch(x, v, far, if cos { f64::cos } else { f64::sin })
        } else {
            v
        }
    }

    /// Sine.
    #[inline]
    pub fn sin(x: f64x4) -> f64x4 {
        trig(x, false)
    }

    /// Cosine.
    #[inline]
    pub fn cos(x: f64x4) -> f64x4 {
        trig(x, true)
    }

    /// Hyperbolic tangent.
    #[inline]
    pub fn tanh(x: f64x4) -> f64x4 {
        let a = x.abs();
        let u = a + a;
        // |x| < 0.55: t = expm1(2|x|) (k in 0..=2, no cancellation), tanh = t / (t + 2).
        let us = u.fast_min(s(1.2));
        let kf = rint_small(us * s(LOG2E));
        let r = (us - kf * s(LN2_HI)) - kf * s(LN2_LO);
        let p = expm1_poly(r);
        let sc = pow2i(kf);
        let t = sc * p + (sc - s(1.0));
        let small = t / (t + s(2.0));
        // Otherwise 1 - 2 / (e^(2|x|) + 1) (exactly 1 once e^(2|x|) is large or inf).
        let large = s(1.0) - s(2.0) / (exp(u) + s(1.0));
        let res = a.simd_lt(s(0.55)).select(small, large);
        x.is_nan().select(x, res | (x & s(-0.0)))
    }

    /// `powf`, per lane through `std`.
    #[inline]
    pub fn pow(x: f64x4, y: f64x4) -> f64x4 {
        let (xa, ya) = (x.to_array(), y.to_array());
        f64x4::new(std::array::from_fn(|i| xa[i].powf(ya[i])))
    }

    /// `a^y` for `a >= 0` and integer `|y| <= 256` by binary powering: exact whenever the
    /// result is representable, otherwise far below an f32 ulp.
    #[inline(always)]
    fn powi_abs(a: f64x4, y: f64x4) -> f64x4 {
        let mut n = y.abs().fast_min(s(256.0));
        let mut b = a;
        let mut acc = s(1.0);
        for _ in 0..9 {
            let half = trunc(n * s(0.5));
            let bit = n - (half + half);
            acc = bit.simd_eq(s(1.0)).select(acc * b, acc);
            b = b * b;
            n = half;
        }
        y.simd_lt(s(0.0)).select(s(1.0) / acc, acc)
    }

    /// `powf` for arguments that are widened f32s: `|x|^y = exp(y ln|x|)` is accurate to
    /// far below an f32 ulp over the f32 range; special cases as C99 / `std`.
    #[inline]
    pub(in crate::value) fn pow_for_f32(x: f64x4, y: f64x4) -> f64x4 {
        let one = s(1.0);
        let ax = x.abs();
        let ty = trunc(y);
        let is_int = ty.simd_eq(y);
        let ay = y.abs();
        let small_int = is_int & ay.simd_le(s(256.0));
        let r = if small_int.all() {
            powi_abs(ax, y)
        } else {
            let g = exp(y * ln(ax));
            if small_int.any() {
                small_int.select(powi_abs(ax, y), g)
            } else {
                g
            }
        };
        let hy = y * s(0.5);
        let odd = is_int & trunc(hy).simd_ne(hy);
        let sign = x & s(-0.0);
        let r = odd.select(r | sign, r);
        let neg_finite = x.simd_lt(s(0.0)) & x.abs().simd_lt(s(f64::INFINITY));
        let r = (neg_finite & !is_int).select(s(f64::NAN), r);
        let unit = x.abs().simd_eq(one) & y.abs().simd_eq(s(f64::INFINITY));
        let r = unit.select(one, r);
        let r = x.simd_eq(one).select(one, r);
        y.simd_eq(s(0.0)).select(one, r)
    }
}
