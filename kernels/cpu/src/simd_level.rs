//! Which instruction set the CPU kernels run with: the widest the running CPU has,
//! detected once, lowered by `TENSOR_OPS_SIMD` or [`set_simd_level`]. Every level computes
//! the same bits; the block, conversion, copy, fill and reduction kernels dispatch on
//! [`simd_level`] to their baseline, AVX2 or AVX-512 copy.

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction set the block kernels, the f16/bf16 conversions and the copy and fill
/// kernels run with, lowest first: a level implies every level below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// The build's target features (SSE2 on a default x86-64 build).
    Baseline,
    /// AVX2 + FMA (x86-64, detected at run time).
    Avx2,
    /// AVX-512 F/BW/DQ/VL with AVX2 + FMA (x86-64, detected at run time): 512-bit vectors.
    Avx512,
}

impl SimdLevel {
    /// Every level, lowest first.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::Baseline, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The level's name as `TENSOR_OPS_SIMD` spells it: `baseline`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Baseline => "baseline",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// The level named `s` (as [`SimdLevel::name`], any case), if any.
    pub fn from_name(s: &str) -> Option<SimdLevel> {
        SimdLevel::ALL.into_iter().find(|l| s.trim().eq_ignore_ascii_case(l.name()))
    }

    fn code(self) -> u8 {
        self as u8 + 1
    }
}

/// The level in use: 0 until first chosen, else `SimdLevel::code`.
static LEVEL: AtomicU8 = AtomicU8::new(0);
/// The CPU's widest level: 0 until detected, else `SimdLevel::code`.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(0);

fn from_code(c: u8) -> Option<SimdLevel> {
    SimdLevel::ALL.get(usize::from(c).wrapping_sub(1)).copied()
}

/// The instruction set the block, conversion, copy and fill kernels use now.
///
/// On first use this is the widest level of the running CPU ([`max_simd_level`]), lowered
/// by the environment variable `TENSOR_OPS_SIMD` when set to `baseline`, `avx2` or
/// `avx512` (a level above the CPU's is lowered to the CPU's; other values are ignored).
/// [`set_simd_level`] changes it later.
///
/// Every level computes bit-identical results (no fused multiply-adds, the same per-lane
/// code), with one exception that no code can rely on anyway: when both operands of an
/// operation are NaN, which one's payload the NaN result carries (LLVM may commute
/// `a + b`).
#[inline]
pub fn simd_level() -> SimdLevel {
    match from_code(LEVEL.load(Ordering::Relaxed)) {
        Some(level) => level,
        None => init_level(),
    }
}

/// The widest instruction set the running CPU supports (detected once; ignores
/// `TENSOR_OPS_SIMD`).
pub fn max_simd_level() -> SimdLevel {
    if let Some(level) = from_code(MAX_LEVEL.load(Ordering::Relaxed)) {
        return level;
    }
    let level = detect_max();
    MAX_LEVEL.store(level.code(), Ordering::Relaxed);
    level
}

/// Makes those kernels use `level`, or the CPU's widest level if `level` is above it,
/// and returns the level now in use. Asking for more than the CPU has is therefore
/// harmless.
///
/// The setting is **process-global**: it applies to every thread, including calls already
/// running on other threads from their next block on (their results do not change: every
/// level computes the same bits, see [`simd_level`]). Meant for tests and benchmarks that
/// compare levels.
pub fn set_simd_level(level: SimdLevel) -> SimdLevel {
    let level = level.min(max_simd_level());
    LEVEL.store(level.code(), Ordering::Relaxed);
    level
}

#[cold]
fn init_level() -> SimdLevel {
    let max = max_simd_level();
    let wanted = std::env::var("TENSOR_OPS_SIMD").ok().and_then(|v| SimdLevel::from_name(&v));
    let level = wanted.map_or(max, |w| w.min(max));
    // A concurrent `set_simd_level` wins over the environment.
    match LEVEL.compare_exchange(0, level.code(), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => level,
        Err(current) => from_code(current).unwrap_or(level),
    }
}

#[cold]
fn detect_max() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2") && has!("fma");
        if avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return SimdLevel::Avx512;
        }
        if avx2 {
            return SimdLevel::Avx2;
        }
    }
    SimdLevel::Baseline
}

/// Whether the CPU has AVX-512 VBMI (byte permutes: the 8-bit float table lookups of
/// `convert_f8_vbmi`), used only at [`SimdLevel::Avx512`]. `false` off x86-64.
#[inline]
pub fn has_avx512_vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Writes the AVX2 and the AVX-512 copy of an `#[inline(always)]` function from one line:
/// each copy is a function compiled with that level's target features (those
/// [`SimdLevel::Avx2`] and [`SimdLevel::Avx512`] stand for) that calls the generic body, so
/// the body's loops are vectorised at that width; callers dispatch on [`simd_level`].
///
/// ```text
/// level_copies!(unsafe fn name_avx2, name_avx512 [generics] (arg: Ty, ..) -> Ret => body::<..>; "contract");
/// level_copies!(unsafe fn name_avx2, name_avx512 [] (&self, arg: Ty, ..) -> Ret => Self::body; "contract");
/// ```
///
/// `contract` starts each copy's `# Safety` section (the body's own requirements); the
/// copies add that the CPU has the level's features. The copies are x86-64 only.
macro_rules! level_copies {
    ($vis:vis unsafe fn $avx2:ident, $avx512:ident [$($g:tt)*] (&self $(, $a:ident: $t:ty)* $(,)?) $(-> $r:ty)?
        => Self::$body:ident $(::<$($tg:ty),*>)?; $contract:literal) => {
        #[doc = concat!("[`Self::", stringify!($body), "`] compiled with AVX2 and FMA.")]
        ///
        /// # Safety
        #[doc = concat!($contract, "; the CPU supports AVX2 and FMA.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        $vis unsafe fn $avx2<$($g)*>(&self $(, $a: $t)*) $(-> $r)? {
            // SAFETY: forwarded: the caller upholds the body's contract.
            unsafe { Self::$body $(::<$($tg),*>)?(self $(, $a)*) }
        }

        #[doc = concat!("[`Self::", stringify!($body), "`] compiled with AVX-512 (512-bit registers).")]
        ///
        /// # Safety
        #[doc = concat!($contract, "; the CPU supports AVX-512 F/BW/DQ/VL, AVX2 and FMA.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        $vis unsafe fn $avx512<$($g)*>(&self $(, $a: $t)*) $(-> $r)? {
            // SAFETY: forwarded: the caller upholds the body's contract.
            unsafe { Self::$body $(::<$($tg),*>)?(self $(, $a)*) }
        }
    };
    ($vis:vis unsafe fn $avx2:ident, $avx512:ident [$($g:tt)*] ($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)?
        => $body:ident $(::<$($tg:ty),*>)?; $contract:literal) => {
        #[doc = concat!("[`", stringify!($body), "`] compiled with AVX2 and FMA.")]
        ///
        /// # Safety
        #[doc = concat!($contract, "; the CPU supports AVX2 and FMA.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        $vis unsafe fn $avx2<$($g)*>($($a: $t),*) $(-> $r)? {
            // SAFETY: forwarded: the caller upholds the body's contract.
            unsafe { $body $(::<$($tg),*>)?($($a),*) }
        }

        #[doc = concat!("[`", stringify!($body), "`] compiled with AVX-512 (512-bit registers).")]
        ///
        /// # Safety
        #[doc = concat!($contract, "; the CPU supports AVX-512 F/BW/DQ/VL, AVX2 and FMA.")]
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        $vis unsafe fn $avx512<$($g)*>($($a: $t),*) $(-> $r)? {
            // SAFETY: forwarded: the caller upholds the body's contract.
            unsafe { $body $(::<$($tg),*>)?($($a),*) }
        }
    };
}
pub(crate) use level_copies;
