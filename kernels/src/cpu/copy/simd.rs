//! The instruction set the copy and fill kernels run with, detected once at run time
//! (`is_x86_feature_detected!`, cached in a static) and lowerable for tests and benchmarks
//! that compare the paths.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level of the copy kernels, lowest first (a level implies the ones
/// below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CopySimd {
    /// The build's target features (SSE2 on a default x86-64 build; scalar loops elsewhere).
    Baseline,
    /// AVX2 (x86-64).
    Avx2,
    /// AVX-512 F/BW/VL with AVX2 (x86-64): 512-bit transposes, deinterleaves and stores.
    Avx512,
}

impl CopySimd {
    fn from_code(c: u8) -> Option<CopySimd> {
        [CopySimd::Baseline, CopySimd::Avx2, CopySimd::Avx512].get(usize::from(c).wrapping_sub(1)).copied()
    }
    fn code(self) -> u8 {
        self as u8 + 1
    }
}

/// The level in use (0 until detected).
static LEVEL: AtomicU8 = AtomicU8::new(0);
/// The CPU's widest level (0 until detected).
static MAX: AtomicU8 = AtomicU8::new(0);

/// The widest level the running CPU supports.
pub fn max_copy_simd() -> CopySimd {
    if let Some(l) = CopySimd::from_code(MAX.load(Ordering::Relaxed)) {
        return l;
    }
    let l = detect();
    MAX.store(l.code(), Ordering::Relaxed);
    l
}

/// The level the copy and fill kernels use now: the CPU's widest unless lowered by
/// [`set_copy_simd`].
#[inline]
pub fn copy_simd() -> CopySimd {
    match CopySimd::from_code(LEVEL.load(Ordering::Relaxed)) {
        Some(l) => l,
        None => {
            let l = max_copy_simd();
            // A concurrent `set_copy_simd` wins.
            let _ = LEVEL.compare_exchange(0, l.code(), Ordering::Relaxed, Ordering::Relaxed);
            CopySimd::from_code(LEVEL.load(Ordering::Relaxed)).unwrap_or(l)
        }
    }
}

/// Makes the copy and fill kernels use `level` (capped at the CPU's widest) and returns the
/// level now in use. Process-global; meant for tests and benchmarks comparing paths (every
/// level produces the same bytes).
pub fn set_copy_simd(level: CopySimd) -> CopySimd {
    let l = level.min(max_copy_simd());
    LEVEL.store(l.code(), Ordering::Relaxed);
    l
}

#[cold]
fn detect() -> CopySimd {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") {
            if has!("avx512f") && has!("avx512bw") && has!("avx512vl") {
                return CopySimd::Avx512;
            }
            return CopySimd::Avx2;
        }
    }
    CopySimd::Baseline
}
