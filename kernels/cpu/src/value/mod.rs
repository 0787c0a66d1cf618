//! The lane algebra `#[tensor_op]` bodies are written against.
//!
//! A body is one generic function over `V: Value`. The block kernels instantiate it with
//! `V` = a SIMD vector of the element ([`Lanes<f32>`](Lanes) = [`F32x16`], `E::Lanes`);
//! a block's last `< LANES` elements run as one padded vector. The one-lane value
//! ([`Lane<f32>`](Lane), `E::One`) serves scalar callers. `if c { a } else { b }` in a
//! body becomes [`Value::select`] (both arms are evaluated).
//!
//! The one-lane value is the `#[repr(transparent)]` newtype [`Lane<E>`], not the primitive:
//! Rust's `+`/`*`/`-` on primitive integers panic on overflow in debug builds and `/`
//! panics on zero, and `std`'s impls cannot be changed, so `Lane` carries the wrapping /
//! divide-by-zero-is-0 operators below. Vectors are sized for 512-bit registers:
//! [`F32x16`] (a 16-lane array whose per-lane loops LLVM vectorizes; the block kernels run
//! AVX2 and AVX-512 copies when the CPU has them, see [`crate::simd_level::SimdLevel`]) and
//! `wide::f64x4` for floats, `[E; N]` arrays whose every operation is `Lane`'s per lane
//! (LLVM vectorizes the loops) for `bool`, `u8`, `i8` (64 lanes), `i16` (32), `i32` (16),
//! `i64` (8). Every operation is per lane and total (no panic, no trap), so a value's
//! result never depends on its neighbours, on padding, on the instruction set, or on
//! whether it ran in a vector or alone: float transcendentals on `Lane` run the vector
//! code on a splat.
//!
//! Semantics (identical on every path and on CUDA):
//! - integers wrap on overflow (`i32::MAX + 1 == i32::MIN`); integer division by zero
//!   gives 0 and `MIN / -1` wraps (no panic, no trap);
//! - `max`/`min` propagate NaN (as NumPy's `maximum`/`minimum`);
//! - float functions are IEEE-accurate to a few ulp (exp, ln, sin...); `pow` on integers
//!   is wrapping exponentiation, and a negative exponent gives `1/x^n` truncated
//!   (so 0 unless `|x| == 1`; `0^-n == 0`).
//! - on integer vectors, float-only methods (exp, ln...) compute through f64 and cast
//!   back with `as` rules; built-in ops never use them (integer inputs of float-only ops
//!   compute in f32, as PyTorch does).
//! - `bool` as a value: `+` is or, `*` is and, `-` is xor, `/` is and; `neg`/`abs` are identity;
//!   `max` is or, `min` is and, `pow(x, e)` is `x | !e`.
//! - on integers and `bool`, `floor`/`ceil`/`round` are the identity and `recip` is a
//!   float-only method (through f64: `recip(0) == MAX`, `recip(2) == 0`).
//! - float `max`/`min` of equal values return that value, with `max(-0, +0) == +0` and
//!   `min(-0, +0) == -0`; `round` is half away from zero; `recip` is an exact `1 / x`.
//!
//! Accuracy (tested in `kernels/tests/value_ops.rs` against `std`, random and special
//! inputs; special values — NaN, ±inf, ±0, subnormals, overflow, underflow — are exact):
//! - f32 `exp`, `exp2`, `ln`, `log2`, `sin`, `cos`, `tanh` compute in f32 lanes
//!   (`math32`: Cody–Waite reduction + polynomials, no FMA, so every instruction set gives
//!   the same bits): ≤ 2 ulp from the correctly rounded result (observed on 200 000 random
//!   inputs over the whole range, on the f32 neighbours of every `k pi/2` below 2^18 and,
//!   for `tanh`, on a sweep of 800 000 inputs: 1 ulp); sin/cos reduce in f64, and lanes with |x| > 2^18
//!   use the f64 kernels; f32 `pow` computes through f64 and rounds once: ≤ 1 ulp (exact
//!   for representable results with integer exponents |y| ≤ 256);
//! - f64 `exp`, `exp2`, `ln`, `log2` ≤ 1 ulp, `sin`, `cos` ≤ 2 ulp, `tanh` ≤ 3 ulp; `pow` is
//!   `std`'s `powf` per lane; sin/cos of |x| > 1e6 use `std` per lane;
//! - `sqrt`, `floor`, `ceil`, `round`, `abs`, arithmetic: exact (IEEE).

mod array;
mod floats;
mod lanes;
mod math;
mod math32;
mod scalar;

pub use floats::{F32x16, F32x16Mask, F64x4, F64x4Mask};
pub use lanes::{ArrayLanes, ArrayMask, Lanes, SimdElement};
pub use scalar::Lane;

use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Sub};
use tensor_core::Element;

/// A per-lane boolean produced by comparisons.
pub trait Mask: Copy + BitAnd<Output = Self> + BitOr<Output = Self> + Not<Output = Self> {
    /// Number of lanes.
    const LANES: usize;
    /// Writes each lane as a `bool` into `dst[..LANES]`.
    fn write_bools(self, dst: &mut [bool]);
}

/// One value (scalar) or several values (SIMD lanes) of the compute element `Elem`.
pub trait Value:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// The scalar element.
    type Elem: Element;
    /// Result of comparisons.
    type Mask: Mask;
    /// Number of lanes (1 for scalars).
    const LANES: usize;

    /// Every lane = `e`.
    fn splat(e: Self::Elem) -> Self;
    /// Loads `LANES` elements from `src[..LANES]`.
    fn load(src: &[Self::Elem]) -> Self;
    /// Stores `LANES` elements to `dst[..LANES]`.
    fn store(self, dst: &mut [Self::Elem]);

    /// 0.
    fn zero() -> Self {
        Self::splat(Self::Elem::ZERO)
    }
    /// 1.
    fn one() -> Self {
        Self::splat(Self::Elem::ONE)
    }
    /// `v as Elem` in every lane.
    fn from_f32(v: f32) -> Self {
        Self::splat(v.cast())
    }
    /// `v as Elem` in every lane.
    fn from_f64(v: f64) -> Self {
        Self::splat(v.cast())
    }
    /// `v as Elem` in every lane.
    fn from_i64(v: i64) -> Self {
        Self::splat(v.cast())
    }
    /// `v as Elem` (0/1) in every lane.
    fn from_bool(v: bool) -> Self {
        Self::splat(v.cast())
    }

    /// `==` per lane.
    fn eq(self, o: Self) -> Self::Mask;
    /// `!=` per lane.
    fn ne(self, o: Self) -> Self::Mask;
    /// `<` per lane.
    fn lt(self, o: Self) -> Self::Mask;
    /// `<=` per lane.
    fn le(self, o: Self) -> Self::Mask;
    /// `>` per lane.
    fn gt(self, o: Self) -> Self::Mask;
    /// `>=` per lane.
    fn ge(self, o: Self) -> Self::Mask;
    /// `if m { t } else { f }` per lane.
    fn select(m: Self::Mask, t: Self, f: Self) -> Self;

    /// Absolute value (wrapping for `MIN`).
    fn abs(self) -> Self;
    /// Maximum, NaN-propagating.
    fn max(self, o: Self) -> Self;
    /// Minimum, NaN-propagating.
    fn min(self, o: Self) -> Self;
    /// `self` to the power `e` (`powf` for floats, wrapping integer power for ints).
    fn pow(self, e: Self) -> Self;

    /// e^x.
    fn exp(self) -> Self;
    /// e^x where every lane is `<= 0` or NaN (softmax's e^(x − max)): the bits of
    /// [`Value::exp`] there, possibly faster; a positive lane is taken as 0.
    ///
    /// ```
    /// use tensor_kernels_cpu::value::{F32x16, Value};
    /// let (mut a, mut b) = ([0f32; 16], [0f32; 16]);
    /// F32x16::splat(-1.5).exp_nonpositive().store(&mut a);
    /// F32x16::splat(-1.5).exp().store(&mut b);
    /// assert_eq!(a, b);
    /// ```
    #[inline(always)]
    fn exp_nonpositive(self) -> Self {
        self.exp().min(Self::one())
    }
    /// The logistic function 1 / (1 + e^-x), with the bits of that expression written with
    /// [`Value::exp`]: every lane type takes this default except [`F32x16`], which computes
    /// the same bits with a cheaper scaling of e^-x (so scalar f32 lanes, whose `exp` is
    /// the vector one, agree with it).
    ///
    /// ```
    /// use tensor_kernels_cpu::value::{F32x16, Value};
    /// let (mut a, mut b) = ([0f32; 16], [0f32; 16]);
    /// let x = F32x16::splat(-0.75);
    /// x.sigmoid().store(&mut a);
    /// (F32x16::one() / (F32x16::one() + (-x).exp())).store(&mut b);
    /// assert_eq!(a, b);
    /// ```
    #[inline(always)]
    fn sigmoid(self) -> Self {
        Self::one() / (Self::one() + (-self).exp())
    }
    /// 2^x.
    fn exp2(self) -> Self;
    /// Natural log.
    fn ln(self) -> Self;
    /// Log base 2.
    fn log2(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// 1/x.
    fn recip(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// Round half away from zero.
    fn round(self) -> Self;
}
