//! The fill engine against `tensor_core::naive_fill` for every dtype and layout, with
//! poisoned buffers so stray or missing writes show up.

use tensor_core::registry::RawTensor;
use tensor_core::{naive_fill, DType, Device, Scalar, Tensor};
use tensor_kernels_cpu::fill::fill_strided;
use tensor_kernels_cpu::simd_level::{max_simd_level, set_simd_level, SimdLevel};

/// Fills a view of `shape`/`strides` (base element offset `base`) in a buffer of `len`
/// elements with both the kernel and the reference and compares every byte.
fn check(dtype: DType, shape: &[usize], strides: &[isize], base: usize, len: usize, value: Scalar) {
    let bytes = len * dtype.size();
    let poison = if dtype == DType::Bool { 0u8 } else { 0x5A };
    let mk = || vec![poison; bytes + 8];
    let (mut got, mut want) = (mk(), mk());
    // 8-byte aligned starts inside the Vec<u8>s.
    let align = |v: &mut Vec<u8>| {
        let p = v.as_mut_ptr();
        p.wrapping_add(p.align_offset(8))
    };
    let (gp, wp) = (align(&mut got), align(&mut want));
    let raw =
        |p: *mut u8| RawTensor { ptr: p.wrapping_add(base * dtype.size()), dtype, shape, strides, device: Device::Cpu };
    // SAFETY: every reachable element lies within the `len` elements after the aligned
    // start (the callers size `len` for it); no element is reachable twice.
    unsafe {
        fill_strided(&raw(gp), value).unwrap();
        naive_fill(&raw(wp), value);
    }
    assert!(got == want, "{dtype} shape {shape:?} strides {strides:?} value {value:?}");
}

#[test]
fn fill_every_dtype_and_layout() {
    let values = [Scalar::Float(-2.75), Scalar::Float(1e10), Scalar::Int(-300), Scalar::Int(7), Scalar::Bool(true)];
    for dtype in DType::ALL {
        for value in values {
            // contiguous: short, long (vector body + tail), 0-dim, size 0
            check(dtype, &[5], &[1], 0, 5, value);
            check(dtype, &[1000], &[1], 1, 1001, value);
            check(dtype, &[], &[], 3, 4, value);
            check(dtype, &[4, 0], &[1, 4], 0, 1, value);
            // rows with pitch, transposed, negative and stepped strides
            check(dtype, &[7, 90], &[100, 1], 0, 700, value);
            check(dtype, &[90, 7], &[1, 100], 0, 700, value);
            check(dtype, &[6, 50], &[-50, 1], 250, 300, value);
            check(dtype, &[3, 4, 5], &[40, 2, 8], 0, 120, value);
            check(dtype, &[33], &[-3], 96, 97, value);
        }
    }
}

#[test]
fn large_fills_stream_and_split() {
    // 20 MiB of f32 and of f64 (above the streaming threshold and the rayon grain), from a
    // misaligned start so the head/body/tail split runs; a strided one too.
    check(DType::F32, &[5 << 20], &[1], 3, (5 << 20) + 3, Scalar::Float(3.5));
    check(DType::F64, &[1 << 20, 3], &[3, 1], 1, (3 << 20) + 1, Scalar::Int(-1));
    check(DType::I16, &[1 << 20, 6], &[8, 1], 0, 8 << 20, Scalar::Int(12345));
    check(DType::U8, &[(17 << 20) + 5], &[1], 7, (17 << 20) + 12, Scalar::Int(200));
}

#[test]
fn tensor_fill_dispatches_here() {
    tensor_kernels_cpu::register::ensure_linked();
    let t = Tensor::zeros(&[3, 4], DType::I32, Device::Cpu).unwrap();
    t.t().unwrap().select(0, 1).unwrap().fill_(Scalar::Float(-7.9)).unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, -7, 0, 0, 0, -7, 0, 0, 0, -7, 0, 0]);
}

#[test]
fn wide_fills_at_every_simd_level() {
    // Contiguous runs around the wide-store threshold (256 bytes) and the 64-byte body,
    // at every start offset within a line, every element size, every level the CPU has.
    for level in [SimdLevel::Baseline, SimdLevel::Avx2, SimdLevel::Avx512] {
        if level > max_simd_level() {
            continue;
        }
        set_simd_level(level);
        for dtype in [DType::U8, DType::I16, DType::F32, DType::F64] {
            let e = dtype.size();
            for n in [255 / e, 256 / e, 256 / e + 1, 300, 1000, 4096 / e + 3] {
                for base in 0..64 / e {
                    check(dtype, &[n], &[1], base, base + n + 1, Scalar::Float(-3.25));
                }
            }
        }
    }
    set_simd_level(max_simd_level());
}
