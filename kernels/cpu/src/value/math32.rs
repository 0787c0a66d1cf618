//! Vectorized `f32` functions behind [`super::F32x16`], computed in `f32` lanes.
//!
//! Every function is written once as a branch-free function of one lane (`*_lane`) and
//! applied to the sixteen lanes of a `[f32; 16]` by [`per_lane`], a plain loop that LLVM
//! vectorizes with whatever the enclosing function's target features allow (four SSE
//! registers by default, two AVX registers in the block kernels' AVX2 copy, one 512-bit
//! register in their AVX-512 copy, see `cpu::map`). Results are bit-identical whichever
//! instruction set computes them: a product and a sum are either separate operations or an
//! explicit `mul_add` (rounded once on every level: FMA instructions in the AVX2/AVX-512
//! copies and on aarch64, libm's correctly rounded `fmaf` in an x86-64 baseline copy),
//! never contracted by the compiler.
//!
//! Methods (all constants are computed here from `f64` values):
//! - `exp`, `exp2`: Cody–Waite reduction `x = n ln2 + r` (`|r| <= ln2/2`) with a split
//!   `ln 2`, a degree-6 minimax polynomial for `e^r - 1` evaluated with `mul_add` (`exp`:
//!   ≤ 1 ulp from the rounded `f64` result for every `f32`, checked exhaustively) or the
//!   Taylor polynomial of `2^r` to degree 7 (`exp2`), and a scale by `2^n` done as two exact power-of-two factors so
//!   that a subnormal result is rounded once;
//! - `ln`, `log2`: `x = 2^e (1 + f)` with `1 + f` in `[sqrt(1/2), sqrt(2))`,
//!   `ln(1 + f) = f - f²/2 + s (f²/2 + R(s²))` with `s = f / (2 + f)` and `R` the series
//!   of `2 atanh(s) / s - 2`;
//! - `sin`, `cos`: `x = q pi/2 + r` reduced in `f64` (see `sincos_parts`), Taylor
//!   polynomials in `f32` on `|r| <= pi/4`; lanes with `|x| > TRIG_MAX` (2^18) are computed
//!   by the `f64` kernels instead;
//! - `tanh`: its odd Taylor series to `x^19` below 0.55, `1 - 2 / (e^(2|x|) + 1)` above;
//! - `pow` computes through the `f64` kernels.

use super::array::lanes_from_fn;
use super::math::m64;
use wide::f64x4;

/// Sixteen `f32` lanes.
pub type V16 = [f32; 16];

/// `1.5 * 2^23`: adding and subtracting it rounds an `f32` with `|x| < 2^22` to an integer
/// (nearest, ties to even), and the integer is the low bits of the sum.
const RND: f32 = 12_582_912.0;
const RND_BITS: i32 = 0x4b40_0000;
const LOG2E: f32 = std::f64::consts::LOG2_E as f32;
/// `ln 2` split: `LN2_HI` has 15 significant bits, so `k * LN2_HI` is exact for `|k| < 512`.
const LN2_HI: f32 = 0.693_145_751_953_125_f64 as f32;
const LN2_LO: f32 = (std::f64::consts::LN_2 - 0.693_145_751_953_125) as f32;
const SQRT2: f32 = std::f32::consts::SQRT_2;
/// sin/cos lanes above this use the `f64` kernels (see `sincos_parts`).
pub(super) const TRIG_MAX: f32 = 262_144.0;

/// `1/k!` for `k` in `0..=10`.
const INV_FACT: [f32; 11] = {
    let mut t = [1.0f32; 11];
    let mut f = 1.0f64;
    let mut k = 1;
    while k < 11 {
        f *= k as f64;
        t[k] = (1.0 / f) as f32;
        k += 1;
    }
    t
};

/// Taylor coefficients of `tanh(x) / x` in powers of `x^2`, to `x^18`.
const TANH_C: [f32; 10] = [
    1.0,
    (-1.0 / 3.0) as f32,
    (2.0 / 15.0) as f32,
    (-17.0 / 315.0) as f32,
    (62.0 / 2835.0) as f32,
    (-1382.0 / 155_925.0) as f32,
    (21_844.0 / 6_081_075.0) as f32,
    (-929_569.0 / 638_512_875.0) as f32,
    (6_404_582.0 / 10_854_718_875.0) as f32,
    (-443_861_162.0 / 1_856_156_927_625.0) as f32,
];

/// `ln(2)^k / k!` for `k` in `0..=7` (Taylor coefficients of `2^r`).
const EXP2_C: [f32; 8] = {
    let mut t = [1.0f32; 8];
    let mut c = 1.0f64;
    let mut k = 1;
    while k < 8 {
        c = c * std::f64::consts::LN_2 / k as f64;
        t[k] = c as f32;
        k += 1;
    }
    t
};

/// Applies `f` to each lane.
#[inline(always)]
pub fn per_lane(a: V16, f: impl Fn(f32) -> f32) -> V16 {
    lanes_from_fn(|i| f(a[i]))
}

/// `if c { a } else { b }` (LLVM turns it into a blend).
#[inline(always)]
fn sel(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// `|a|` with the sign of `s`, for `a >= 0` (or NaN).
#[inline(always)]
fn with_sign_of(a: f32, s: f32) -> f32 {
    f32::from_bits(a.to_bits() | (s.to_bits() & 0x8000_0000))
}

/// `(round(x), round(x) as i32)` for `|x| < 2^22`, ties to even.
#[inline(always)]
fn rint(x: f32) -> (f32, i32) {
    rint_of_sum(x + RND)
}

/// [`rint`] from `t = x + RND` already summed (with one rounding, e.g. by a `mul_add`).
#[inline(always)]
fn rint_of_sum(t: f32) -> (f32, i32) {
    (t - RND, (t.to_bits() as i32).wrapping_sub(RND_BITS))
}

/// `2^n` for `n` in `[-126, 127]`.
#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) << 23) as u32)
}

/// `y * 2^n` for `y` in `[0.5, 2]`, `n` in `[-252, 254]`: the first factor is exact, so a
/// subnormal result is rounded once.
#[inline(always)]
fn scale2(y: f32, n: i32) -> f32 {
    let n1 = n >> 1;
    y * pow2i(n1) * pow2i(n.wrapping_sub(n1))
}

/// Coefficients of `q(r) = (e^r - 1 - r) / r²` of degree 4, minimax (relative error of
/// `q` at most 1.3e-7) on `|r| <= 1.0005 ln2/2` (Remez exchange in 50-digit arithmetic):
/// `r + r² q(r)` is within 0.1 ulp of `e^r - 1`, as close as the degree-7 Taylor
/// polynomial with one multiply-add pair fewer.
const EXPM1_Q: [f32; 5] = [
    0.499_999_995_515_170_7_f64 as f32,
    0.166_665_771_412_202_6_f64 as f32,
    0.041_666_853_719_687_71_f64 as f32,
    0.008_363_170_210_955_05_f64 as f32,
    0.001_390_129_743_784_395_f64 as f32,
];

/// e^x. Written with `mul_add` (one rounding each: hardware FMA in the AVX2 and AVX-512
/// copies and on aarch64, libm's correctly rounded `fmaf` in an x86-64 baseline copy, so
/// every level still computes the same bits), and no NaN fix-up: 1.5× faster than the
/// separate multiply-and-add form in the AVX-512 copy, 1.8× in the AVX2 one.
#[inline(always)]
pub fn exp_lane(x: f32) -> f32 {
    // Clamps written so that NaN passes them (both comparisons are false for NaN) and then
    // every step after: e^-104 rounds to 0, e^89 to inf.
    let xc = if x < -104.0 { -104.0 } else { x };
    let xc = if xc > 89.0 { 89.0 } else { xc };
    let (y, n) = exp_parts(xc);
    scale2(y, n)
}

/// e^x for `x <= 0` (a positive `x` is taken as 0; NaN stays NaN): the same bits as
/// [`exp_lane`] there, with a cheaper scaling — `n` lies in `[-150, 0]`, so `y 2^(n + 64)`
/// is exact and normal and one multiply by 2^-64 rounds it once (softmax's e^(x − max)).
#[inline(always)]
pub fn exp_nonpositive_lane(x: f32) -> f32 {
    let xc = if x < -104.0 { -104.0 } else { x };
    let xc = if xc > 0.0 { 0.0 } else { xc };
    let (p, n) = exp_poly(xc);
    // (p + 1) 2^-64 as one multiply-add: scaling by a power of two commutes with rounding,
    // so this is exactly `exp_parts`' y times 2^-64.
    let two_m64 = f32::from_bits((127 - 64) << 23);
    p.mul_add(two_m64, two_m64) * pow2i(n.wrapping_add(64))
}

/// 1 / (1 + e^-x): the bits of `1.0 / (1.0 + exp_lane(-x))` with a cheaper scaling. Only
/// `t = -x` in [-20, 88.8] matters: below, e^t < 2^-24 leaves `1 + e^t` = 1; above, e^t
/// rounds to inf (as `exp_lane` gives there). On that range `n` lies in [-29, 128], so
/// `(1 + p) 2^(n - 1)` is normal and exact, and the doubling after it rounds once, as the
/// two-step scaling of `exp_lane` does: three integer/multiply steps fewer per lane.
#[inline(always)]
pub fn sigmoid_lane(x: f32) -> f32 {
    // Written so that NaN passes both clamps (and then every step after), and on `x`, not
    // `-x`: each clamp is then one `max`/`min` instruction (clamping `-x`, LLVM compared
    // `x` and blended; the same bits, checked for every f32).
    let xc = if x > 20.0 { 20.0 } else { x };
    let xc = if xc < -88.8 { -88.8 } else { xc };
    let (p, n) = exp_poly(-xc);
    let e = (p + 1.0) * pow2i(n.wrapping_sub(1)) * 2.0;
    1.0 / (1.0 + e)
}

/// `(y, n)` with e^x = y 2^n, `y` in `[0.7, 1.42]`, for `x` in `[-104, 89]` (or NaN: `y` NaN).
#[inline(always)]
fn exp_parts(xc: f32) -> (f32, i32) {
    let (p, n) = exp_poly(xc);
    (p + 1.0, n)
}

/// `(p, n)` with e^x = (1 + p) 2^n (`p` = e^r − 1 for the reduced `r`), `x` as [`exp_parts`].
#[inline(always)]
fn exp_poly(xc: f32) -> (f32, i32) {
    // n = round(x log2 e) (the product rounded once, then to an integer by the RND trick).
    let (kf, n) = rint_of_sum(xc.mul_add(LOG2E, RND));
    // r = x - n ln 2 with the split ln 2 (`kf * LN2_HI` is exact).
    let r = kf.mul_add(-LN2_HI, xc);
    let r = kf.mul_add(-LN2_LO, r);
    let c = EXPM1_Q;
    let q = r.mul_add(c[4], c[3]);
    let q = r.mul_add(q, c[2]);
    let q = r.mul_add(q, c[1]);
    let q = r.mul_add(q, c[0]);
    ((r * r).mul_add(q, r), n)
}

/// 2^x.
#[inline(always)]
pub fn exp2_lane(x: f32) -> f32 {
    let xc = sel(x > -151.0, x, -151.0);
    let xc = sel(xc < 129.0, xc, 129.0);
    let (kf, n) = rint(xc);
    let r = xc - kf;
    let c = EXP2_C;
    let q = c[2] + r * (c[3] + r * (c[4] + r * (c[5] + r * (c[6] + r * c[7]))));
    let p = r * c[1] + (r * r) * q;
    sel(x.is_nan(), x, scale2(1.0 + p, n))
}

/// `(e, f, s, hfsq, R)` with `x = 2^e (1 + f)`, `1 + f` in `[sqrt(1/2), sqrt(2))`,
/// `s = f / (2 + f)`, `hfsq = f²/2`, `ln(1 + f) = f - hfsq + s (hfsq + R)`.
#[inline(always)]
fn log_parts(x: f32) -> (f32, f32, f32, f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = sel(sub, x * 8_388_608.0, x); // 2^23
    let bias: i32 = if sub { -127 - 23 } else { -127 };
    let bits = xs.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 + bias;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let big = m > SQRT2;
    let m = sel(big, m * 0.5, m);
    let e = if big { e + 1 } else { e };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * ((2.0 / 3.0) + z * ((2.0 / 5.0) + z * ((2.0 / 7.0) + z * (2.0 / 9.0))));
    (e as f32, f, s, 0.5 * f * f, r)
}

/// ln/log2 of zero, negatives, infinities and NaN.
#[inline(always)]
fn log_specials(x: f32, res: f32) -> f32 {
    let res = sel(x == f32::INFINITY, f32::INFINITY, res);
    let res = sel(x == 0.0, f32::NEG_INFINITY, res);
    let res = sel(x < 0.0, f32::NAN, res);
    sel(x.is_nan(), x, res)
}

/// Natural log.
#[inline(always)]
pub fn ln_lane(x: f32) -> f32 {
    let (e, f, s, hfsq, r) = log_parts(x);
    let res = e * LN2_HI - ((hfsq - (s * (hfsq + r) + e * LN2_LO)) - f);
    log_specials(x, res)
}

/// Log base 2.
#[inline(always)]
pub fn log2_lane(x: f32) -> f32 {
    let (e, f, s, hfsq, r) = log_parts(x);
    // ln(1 + f) = hi + lo with hi holding 12 significant bits, so hi * L2E_HI is exact.
    let hi = f32::from_bits((f - hfsq).to_bits() & 0xffff_f000);
    let lo = ((f - hi) - hfsq) + s * (hfsq + r);
    const L2E_HI: f32 = 1.442_382_812_5_f64 as f32; // 12 significant bits
    const L2E_LO: f32 = (std::f64::consts::LOG2_E - 1.442_382_812_5) as f32;
    let res = e + (hi * L2E_HI + (lo * LOG2E + hi * L2E_LO));
    log_specials(x, res)
}

/// `(sin r, cos r, q)` with `x = r + q pi/2`, `|r| <= pi/4` (for `|x| <= TRIG_MAX`).
///
/// The reduction runs in `f64` (`x` is exact there, `pi/2` is split in a 33-bit part, whose
/// product with `q < 2^18` is exact, and a 53-bit tail): `r` is accurate to ~2^-66
/// absolutely, far below an `f32` ulp of the smallest `r` an `f32` can produce. `r` is then
/// carried as `rh + rl` in `f32`, and the polynomials correct for `rl` to first order.
#[inline(always)]
fn sincos_parts(x: f32) -> (f32, f32, i32) {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    const P1: f64 = 1.570_796_326_734_125_6; // 33 significant bits
    const P1T: f64 = 6.077_100_506_506_192e-11; // pi/2 - P1
    let xc = sel(x.abs() <= TRIG_MAX, x, 0.0); // far lanes (and NaN) are replaced later
    let xd = xc as f64;
    let t = xd * std::f64::consts::FRAC_2_PI + MAGIC;
    let kf = t - MAGIC;
    let q = t.to_bits() as u32 as i32;
    let r = (xd - kf * P1) - kf * P1T;
    let rh = r as f32;
    let rl = (r - rh as f64) as f32;
    let z = rh * rh;
    let c = INV_FACT;
    let ps = -c[3] + z * (c[5] + z * (-c[7] + z * c[9]));
    // sin(rh + rl) = sin(rh) + rl cos(rh) + O(rl^2).
    let sn = rh + ((rh * z) * ps + rl * (1.0 - 0.5 * z));
    let pc = c[4] + z * (-c[6] + z * (c[8] + z * -c[10]));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    // cos(rh + rl) = cos(rh) - rl sin(rh) + O(rl^2).
    let cs = w + ((((1.0 - w) - hz) - rh * rl) + (z * z) * pc);
    (sn, cs, q)
}

#[inline(always)]
fn trig_lane(x: f32, cos: bool) -> f32 {
    let (sn, cs, q) = sincos_parts(x);
    let qq = if cos { q.wrapping_add(1) } else { q };
    let v = if cos { sel(q & 1 != 0, sn, cs) } else { sel(q & 1 != 0, cs, sn) };
    let v = f32::from_bits(v.to_bits() ^ (((qq & 2) as u32) << 30));
    // sin(±0) = ±0 (the polynomial gives +0 for -0).
    if cos {
        v
    } else {
        sel(x == 0.0, x, v)
    }
}

/// Sine of lanes with `|x| <= TRIG_MAX` (others: garbage, replaced by the caller).
#[inline(always)]
pub fn sin_lane(x: f32) -> f32 {
    trig_lane(x, false)
}

/// Cosine of lanes with `|x| <= TRIG_MAX` (others: garbage, replaced by the caller).
#[inline(always)]
pub fn cos_lane(x: f32) -> f32 {
    trig_lane(x, true)
}

/// Hyperbolic tangent.
#[inline(always)]
pub fn tanh_lane(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 0.55: the odd Taylor series to x^19 (the x^21 term is below 0.01 ulp there);
    // the correction to `a` is at most a tenth of it, so its rounding is small.
    let a2 = a * a;
    let c = TANH_C;
    let q = c[5] + a2 * (c[6] + a2 * (c[7] + a2 * (c[8] + a2 * c[9])));
    let q = c[1] + a2 * (c[2] + a2 * (c[3] + a2 * (c[4] + a2 * q)));
    let small = a + a * (a2 * q);
    // Otherwise 1 - 2 / (e^(2|x|) + 1) (exactly 1 once e^(2|x|) is large or inf).
    let large = 1.0 - 2.0 / (exp_lane(a + a) + 1.0);
    let res = sel(a < 0.55, small, large);
    sel(x.is_nan(), x, with_sign_of(res, x))
}

/// Maximum, NaN-propagating (`a + b` when either is NaN); of equal values (±0) the AND of
/// the bits, so `+0` wins. Branch-free, so the lanes vectorize.
#[inline(always)]
pub fn max_lane(a: f32, b: f32) -> f32 {
    let eq = f32::from_bits(a.to_bits() & b.to_bits());
    let r = sel(a > b, a, sel(b > a, b, eq));
    sel(a.is_nan() | b.is_nan(), a + b, r)
}

/// Minimum, NaN-propagating (`a + b` when either is NaN); of equal values (±0) the OR of
/// the bits, so `-0` wins. Branch-free, so the lanes vectorize.
#[inline(always)]
pub fn min_lane(a: f32, b: f32) -> f32 {
    let eq = f32::from_bits(a.to_bits() | b.to_bits());
    let r = sel(a < b, a, sel(b < a, b, eq));
    sel(a.is_nan() | b.is_nan(), a + b, r)
}

/// Round toward zero (`std` `trunc`, sign of zero kept).
#[inline(always)]
pub fn trunc_lane(x: f32) -> f32 {
    const TWO23: f32 = 8_388_608.0;
    let a = x.abs();
    let r = (a + TWO23) - TWO23;
    let r = sel(r > a, r - 1.0, r);
    sel(a < TWO23, with_sign_of(r, x), x)
}

/// Round down.
#[inline(always)]
pub fn floor_lane(x: f32) -> f32 {
    let t = trunc_lane(x);
    sel(t > x, t - 1.0, t)
}

/// Round up.
#[inline(always)]
pub fn ceil_lane(x: f32) -> f32 {
    let t = trunc_lane(x);
    sel(t < x, t + 1.0, t)
}

/// Round half away from zero (`std` `round`).
#[inline(always)]
pub fn round_lane(x: f32) -> f32 {
    let t = trunc_lane(x);
    let d = (x - t).abs();
    sel(d >= 0.5, t + with_sign_of(1.0, x), t)
}

/// e^x.
#[inline(always)]
pub fn exp(x: V16) -> V16 {
    per_lane(x, exp_lane)
}
/// e^x for `x <= 0` ([`exp_nonpositive_lane`]).
#[inline(always)]
pub fn exp_nonpositive(x: V16) -> V16 {
    per_lane(x, exp_nonpositive_lane)
}
/// 1 / (1 + e^-x) ([`sigmoid_lane`]).
#[inline(always)]
pub fn sigmoid(x: V16) -> V16 {
    per_lane(x, sigmoid_lane)
}
/// 2^x.
#[inline(always)]
pub fn exp2(x: V16) -> V16 {
    per_lane(x, exp2_lane)
}
/// Natural log.
#[inline(always)]
pub fn ln(x: V16) -> V16 {
    per_lane(x, ln_lane)
}
/// Log base 2.
#[inline(always)]
pub fn log2(x: V16) -> V16 {
    per_lane(x, log2_lane)
}
/// Hyperbolic tangent.
#[inline(always)]
pub fn tanh(x: V16) -> V16 {
    per_lane(x, tanh_lane)
}
/// Round down.
#[inline(always)]
pub fn floor(x: V16) -> V16 {
    per_lane(x, floor_lane)
}
/// Round up.
#[inline(always)]
pub fn ceil(x: V16) -> V16 {
    per_lane(x, ceil_lane)
}
/// Round half away from zero.
#[inline(always)]
pub fn round(x: V16) -> V16 {
    per_lane(x, round_lane)
}

/// Whether any lane is beyond the `f32` trig reduction's range (or NaN/inf).
#[inline(always)]
fn any_far(x: V16) -> bool {
    let mut far = false;
    for v in x {
        far |= v.abs() > TRIG_MAX || v.is_nan();
    }
    far
}

/// Replaces the lanes of `v` beyond the `f32` reduction's range with the `f64` kernel's
/// results (which are themselves `std` beyond their own range).
#[inline(never)]
#[cold]
fn trig_far(x: V16, v: V16, f: fn(f64x4) -> f64x4) -> V16 {
    let w = via64(x, f);
    lanes_from_fn(|i| if x[i].abs() <= TRIG_MAX { v[i] } else { w[i] })
}

/// Sine.
#[inline(always)]
pub fn sin(x: V16) -> V16 {
    let v = per_lane(x, sin_lane);
    if any_far(x) {
        trig_far(x, v, m64::sin)
    } else {
        v
    }
}

/// Cosine.
#[inline(always)]
pub fn cos(x: V16) -> V16 {
    let v = per_lane(x, cos_lane);
    if any_far(x) {
        trig_far(x, v, m64::cos)
    } else {
        v
    }
}

#[inline(always)]
fn widen(a: V16) -> [f64x4; 4] {
    lanes_from_fn(|j| f64x4::new(lanes_from_fn(|i| a[4 * j + i] as f64)))
}

#[inline(always)]
fn narrow(w: [f64x4; 4]) -> V16 {
    let w: [[f64; 4]; 4] = lanes_from_fn(|j| w[j].to_array());
    lanes_from_fn(|i| w[i / 4][i % 4] as f32)
}

/// Computes `f` in `f64` and rounds once.
#[inline(always)]
fn via64(x: V16, f: fn(f64x4) -> f64x4) -> V16 {
    let w = widen(x);
    narrow(lanes_from_fn(|j| f(w[j])))
}

/// `powf` (through `f64`: ≤ 1 ulp).
#[inline]
pub fn pow(x: V16, y: V16) -> V16 {
    let (xw, yw) = (widen(x), widen(y));
    narrow(lanes_from_fn(|j| m64::pow_for_f32(xw[j], yw[j])))
}
