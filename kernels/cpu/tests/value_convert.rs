//! The contiguous f16/bf16 ↔ f32 paths of `gather_cast`/`scatter_cast` against `half`,
//! bit for bit: every 16-bit pattern, and f32 values around every rounding boundary.

use half::{bf16, f16};
use tensor_core::DType;
use tensor_kernels_cpu::convert::{gather_cast, scatter_cast};

fn widen(dt: DType, src: &[u16]) -> Vec<u32> {
    let mut out = vec![0f32; src.len()];
    // SAFETY: src holds src.len() elements, out as many f32.
    unsafe { gather_cast(out.as_mut_ptr() as *mut u8, DType::F32, src.as_ptr() as *const u8, dt, 1, src.len()) };
    out.iter().map(|x| x.to_bits()).collect()
}

fn narrow(dt: DType, src: &[f32]) -> Vec<u16> {
    let mut out = vec![0u16; src.len()];
    // SAFETY: out holds src.len() 16-bit elements.
    unsafe { scatter_cast(out.as_mut_ptr() as *mut u8, dt, 1, src.as_ptr() as *const u8, DType::F32, src.len()) };
    out
}

#[test]
fn every_half_pattern_widens_like_half() {
    // An odd length so the vector body and the scalar tail both run.
    let all: Vec<u16> = (0..=u16::MAX).chain([0x7e01, 0x7c01, 0xfc01]).collect();
    let got = widen(DType::F16, &all);
    for (b, g) in all.iter().zip(&got) {
        assert_eq!(*g, f16::from_bits(*b).to_f32().to_bits(), "f16 {b:#06x}");
    }
    let got = widen(DType::BF16, &all);
    for (b, g) in all.iter().zip(&got) {
        assert_eq!(*g, bf16::from_bits(*b).to_f32().to_bits(), "bf16 {b:#06x}");
    }
    // Unaligned source and short runs.
    for n in 0..20 {
        let got = widen(DType::F16, &all[1..1 + n]);
        assert!(got.iter().zip(&all[1..]).all(|(g, b)| *g == f16::from_bits(*b).to_f32().to_bits()));
    }
}

#[test]
fn f32_narrows_like_half() {
    let mut xs: Vec<f32> = Vec::new();
    // Around every f16 and bf16 value: the value, the midpoints to its neighbours and one
    // f32 ulp either side of them.
    for b in 0..=u16::MAX {
        for v in [f16::from_bits(b).to_f64(), bf16::from_bits(b).to_f64()] {
            let x = v as f32;
            let u = x.to_bits();
            for d in [
                -0x2001i64, -0x2000, -0x1fff, -0x8001, -0x8000, -0x7fff, -1, 0, 1, 0x7fff, 0x8000, 0x8001, 0x1fff,
                0x2000, 0x2001,
            ] {
                xs.push(f32::from_bits((u as i64 + d).clamp(0, u32::MAX as i64) as u32));
            }
        }
    }
    // Random bit patterns (NaN payloads, subnormals, huge values).
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..200_000 {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        xs.push(f32::from_bits((s >> 32) as u32));
    }
    xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN, 65504.0, 65520.0, 65519.99]);
    let got = narrow(DType::F16, &xs);
    for (x, g) in xs.iter().zip(&got) {
        assert_eq!(*g, f16::from_f32(*x).to_bits(), "f16 from {:#010x}", x.to_bits());
    }
    let got = narrow(DType::BF16, &xs);
    for (x, g) in xs.iter().zip(&got) {
        assert_eq!(*g, bf16::from_f32(*x).to_bits(), "bf16 from {:#010x}", x.to_bits());
    }
}

/// The 8-bit floats' vector paths against `tensor_core`'s scalar conversions, bit for bit:
/// every pattern widened, and f32 values at every rounding boundary (each f8 value and the
/// midpoints to its neighbours, one f32 ulp either side), the overflow thresholds, every
/// f32 class and a sweep of bit patterns narrowed — through `scatter_cast`/`gather_cast`,
/// the paths the kernels take.
#[test]
fn f8_paths_match_the_scalar_conversions() {
    use tensor_core::{F8E4M3, F8E5M2};
    for dt in [DType::F8E4M3, DType::F8E5M2] {
        let scalar_to =
            |b: u8| if dt == DType::F8E4M3 { F8E4M3::from_bits(b).to_f32() } else { F8E5M2::from_bits(b).to_f32() };
        let scalar_from =
            |x: f32| if dt == DType::F8E4M3 { F8E4M3::from_f32(x).to_bits() } else { F8E5M2::from_f32(x).to_bits() };
        // Widen: every pattern, an odd length and an unaligned start.
        let all: Vec<u8> = (0..=255u8).chain(0..=6).collect();
        for start in [0, 1] {
            let mut out = vec![0f32; all.len() - start];
            // SAFETY: both buffers hold `out.len()` elements.
            unsafe { gather_cast(out.as_mut_ptr() as *mut u8, DType::F32, all[start..].as_ptr(), dt, 1, out.len()) };
            for (b, g) in all[start..].iter().zip(&out) {
                assert_eq!(g.to_bits(), scalar_to(*b).to_bits(), "{dt} {b:#04x}");
            }
        }
        // Narrow.
        let mut xs: Vec<f32> =
            vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MAX, f32::MIN];
        let vals: Vec<f32> = (0..=255u8).map(scalar_to).filter(|v| v.is_finite()).collect();
        for &v in &vals {
            for &w in &vals {
                if w > v && vals.iter().all(|&u| u <= v || u >= w) {
                    let mid = ((v as f64 + w as f64) / 2.0) as f32;
                    for d in [-1i64, 0, 1] {
                        xs.push(f32::from_bits((mid.to_bits() as i64 + d) as u32));
                    }
                }
            }
            xs.push(v);
        }
        xs.extend([464.0, 479.99, 480.0, 481.0, 57344.0, 61439.0, 61440.0, 65536.0, 1e-40, -1e-45]);
        let mut b = 0u32;
        while let Some(n) = b.checked_add(40_503) {
            xs.push(f32::from_bits(b));
            b = n;
        }
        let mut out = vec![0u8; xs.len()];
        // SAFETY: `out` holds xs.len() bytes.
        unsafe { scatter_cast(out.as_mut_ptr(), dt, 1, xs.as_ptr() as *const u8, DType::F32, xs.len()) };
        for (x, g) in xs.iter().zip(&out) {
            assert_eq!(*g, scalar_from(*x), "{dt} from {x:e} ({:#010x})", x.to_bits());
        }
    }
}
