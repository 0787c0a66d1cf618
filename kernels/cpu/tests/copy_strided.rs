//! The copy/cast engine against `tensor_core::naive_copy` over random and hand-picked
//! layouts, every dtype pair, with poisoned destinations (an unwritten or stray element
//! shows up as a byte difference anywhere in the buffer).

use proptest::prelude::*;
use tensor_core::iter::IterPlan;
use tensor_core::registry::{CopyKernel, RawTensor};
use tensor_core::{naive_copy, registry, with_dtype, DType, Device, Element, Layout};
use tensor_kernels_cpu::copy::{classify, copy_strided, CopyClass};
use tensor_kernels_cpu::simd_level::{max_simd_level, set_simd_level, SimdLevel};

/// A strided view inside a byte buffer: element strides and the element offset of [0,..].
#[derive(Debug, Clone)]
struct View {
    strides: Vec<isize>,
    base: usize,
    len: usize,
}

/// Lays out `shape` with dims ordered by `order` (outermost first), `gaps` multiplying
/// each stride step, `flips` negating strides and `zero` dims broadcast (stride 0).
fn layout(shape: &[usize], order: &[usize], gaps: &[usize], flips: &[bool], zero: &[bool]) -> View {
    let n = shape.len();
    let mut strides = vec![0isize; n];
    let mut acc = 1isize;
    for &d in order.iter().rev() {
        if zero[d] {
            continue;
        }
        acc *= gaps[d] as isize;
        strides[d] = if flips[d] { -acc } else { acc };
        acc *= shape[d].max(1) as isize;
    }
    let (mut lo, mut hi) = (0isize, 0isize);
    for d in 0..n {
        let span = strides[d] * (shape[d].max(1) as isize - 1);
        if span < 0 {
            lo += span
        } else {
            hi += span
        }
    }
    View { strides, base: (-lo) as usize, len: (hi - lo + 1) as usize }
}

/// Bytes of `n` random elements of `dtype` (bools kept 0/1).
fn random_bytes(dtype: DType, n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out: Vec<u8> = (0..n * dtype.size())
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    if dtype == DType::Bool {
        out.iter_mut().for_each(|b| *b &= 1);
    }
    if dtype.is_float() && matches!(seed % 3, 0) {
        // Keep values in a range where float→int casts are not all saturated.
        with_dtype!(dtype, T => {
            for (i, c) in out.chunks_exact_mut(dtype.size()).enumerate() {
                let v: T = (((i * 7919) % 2001) as f64 / 8.0 - 125.0).cast::<T>();
                // SAFETY: c is size_of::<T>() bytes.
                unsafe { std::ptr::write_unaligned(c.as_mut_ptr() as *mut T, v) };
            }
        });
    }
    out
}

/// An 8-byte aligned buffer of `bytes` bytes.
fn buffer(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8).max(1)]
}

/// Runs the kernel and the reference on identical poisoned destinations and compares every
/// destination byte.
fn check(shape: &[usize], dt: DType, dv: &View, st: DType, sv: &View, seed: u64) {
    let src_bytes = random_bytes(st, sv.len, seed);
    let mut src = buffer(src_bytes.len());
    // SAFETY: src holds at least src_bytes.len() bytes.
    unsafe { std::ptr::copy_nonoverlapping(src_bytes.as_ptr(), src.as_mut_ptr() as *mut u8, src_bytes.len()) };
    let poison = if dt == DType::Bool { 0x01u8 } else { 0xA5u8 };
    let mk = |_: ()| {
        let mut b = buffer(dv.len * dt.size());
        // SAFETY: the buffer holds at least dv.len * size bytes.
        unsafe { std::ptr::write_bytes(b.as_mut_ptr() as *mut u8, poison, dv.len * dt.size()) };
        b
    };
    let (mut got, mut want) = (mk(()), mk(()));
    let raw = |buf: &mut Vec<u64>, dtype: DType, v: &View| -> (*mut u8, Vec<isize>, DType) {
        ((buf.as_mut_ptr() as *mut u8).wrapping_add(v.base * dtype.size()), v.strides.clone(), dtype)
    };
    let (sp, ss, _) = raw(&mut src, st, sv);
    let (gp, gs, _) = raw(&mut got, dt, dv);
    let (wp, ws, _) = raw(&mut want, dt, dv);
    let s = RawTensor { ptr: sp, dtype: st, shape, strides: &ss, device: Device::Cpu };
    let g = RawTensor { ptr: gp, dtype: dt, shape, strides: &gs, device: Device::Cpu };
    let w = RawTensor { ptr: wp, dtype: dt, shape, strides: &ws, device: Device::Cpu };
    // SAFETY: every reachable element lies in its buffer (layout computes the span); the
    // destinations have no internal overlap and are separate from the source.
    unsafe {
        copy_strided(&g, &s).unwrap();
        naive_copy(&w, &s);
    }
    let plan = IterPlan::new(shape, &[&gs, &ss]);
    assert!(
        got == want,
        "shape {shape:?} dst {dt} {:?} src {st} {:?} class {:?}",
        dv.strides,
        sv.strides,
        classify(&plan)
    );
}

fn dtype_strategy() -> impl Strategy<Value = DType> {
    (0usize..10).prop_map(|i| DType::ALL[i])
}

prop_compose! {
    fn case()(ndim in 0usize..=4)
        (shape in proptest::collection::vec(prop_oneof![4 => 0usize..6, 2 => 6usize..20, 1 => 20usize..80], ndim),
         dorder in Just((0..ndim).collect::<Vec<_>>()).prop_shuffle(),
         sorder in Just((0..ndim).collect::<Vec<_>>()).prop_shuffle(),
         dgaps in proptest::collection::vec(prop_oneof![4 => Just(1usize), 1 => 2usize..4], ndim),
         sgaps in proptest::collection::vec(prop_oneof![4 => Just(1usize), 1 => 2usize..4], ndim),
         dflips in proptest::collection::vec(prop::bool::weighted(0.15), ndim),
         sflips in proptest::collection::vec(prop::bool::weighted(0.15), ndim),
         szero in proptest::collection::vec(prop::bool::weighted(0.15), ndim),
         dt in dtype_strategy(), st in prop_oneof![1 => dtype_strategy(), 1 => Just(DType::F32)],
         same in prop::bool::weighted(0.5), seed in any::<u64>())
        -> (Vec<usize>, View, DType, View, DType, u64) {
        let mut shape = shape;
        while shape.iter().product::<usize>() > 40_000 {
            let i = shape.iter().enumerate().max_by_key(|&(_, &s)| s).map(|(i, _)| i).unwrap();
            shape[i] /= 2;
        }
        let dv = layout(&shape, &dorder, &dgaps, &dflips, &vec![false; shape.len()]);
        let sv = layout(&shape, &sorder, &sgaps, &sflips, &szero);
        (shape.clone(), dv, dt, sv, if same { dt } else { st }, seed)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]
    #[test]
    fn copy_matches_naive((shape, dv, dt, sv, st, seed) in case()) {
        check(&shape, dt, &dv, st, &sv, seed);
    }
}

fn contiguous(shape: &[usize]) -> View {
    let n = shape.len();
    layout(shape, &(0..n).collect::<Vec<_>>(), &vec![1; n], &vec![false; n], &vec![false; n])
}

fn permuted(shape: &[usize], order: &[usize]) -> View {
    let n = shape.len();
    layout(shape, order, &vec![1; n], &vec![false; n], &vec![false; n])
}

#[test]
fn every_class_is_exercised_for_every_size() {
    let sizes = [DType::U8, DType::F16, DType::F32, DType::F64];
    for dt in sizes {
        // contiguous, rows (dst padded), scalar and row broadcast, general (step 2)
        let sh = [37usize, 29];
        check(&sh, dt, &contiguous(&sh), dt, &contiguous(&sh), 1);
        let padded = layout(&sh, &[0, 1], &[1, 3], &[false, false], &[false, false]);
        check(&sh, dt, &padded, dt, &contiguous(&sh), 2);
        let scalar = layout(&sh, &[0, 1], &[1, 1], &[false, false], &[true, true]);
        check(&sh, dt, &contiguous(&sh), dt, &scalar, 3);
        let colb = layout(&sh, &[0, 1], &[1, 1], &[false, false], &[false, true]);
        check(&sh, dt, &contiguous(&sh), dt, &colb, 4);
        let step = layout(&sh, &[0, 1], &[1, 2], &[false, false], &[false, false]);
        check(&sh, dt, &contiguous(&sh), dt, &step, 5);
        // transposes: multiples and non-multiples of the tile and micro-block
        for (r, c) in [(8usize, 8usize), (64, 64), (100, 77), (129, 65), (9, 300), (257, 13)] {
            let sh = [r, c];
            check(&sh, dt, &contiguous(&sh), dt, &permuted(&sh, &[1, 0]), 6);
            check(&sh, dt, &permuted(&sh, &[1, 0]), dt, &contiguous(&sh), 7);
            let flipped = layout(&sh, &[1, 0], &[1, 1], &[true, false], &[false, false]);
            check(&sh, dt, &contiguous(&sh), dt, &flipped, 8);
            // casting transposes
            check(&sh, DType::F64, &contiguous(&sh), dt, &permuted(&sh, &[1, 0]), 9);
        }
        // permuted 3-D
        let sh = [20usize, 33, 18];
        for order in [[2, 0, 1], [1, 2, 0], [2, 1, 0], [0, 2, 1]] {
            check(&sh, dt, &contiguous(&sh), dt, &permuted(&sh, &order), 10);
            check(&sh, DType::I32, &contiguous(&sh), dt, &permuted(&sh, &order), 11);
        }
        // size 0 and 0-dim
        check(&[3, 0, 2], dt, &contiguous(&[3, 0, 2]), dt, &contiguous(&[3, 0, 2]), 12);
        check(&[], dt, &contiguous(&[]), dt, &contiguous(&[]), 13);
        check(&[], DType::F32, &contiguous(&[]), dt, &contiguous(&[]), 14);
    }
}

#[test]
fn large_copies_take_the_streaming_and_parallel_paths() {
    // Above the non-temporal threshold (16 MiB of destination) and the rayon grain.
    let sh = [2049usize, 2051];
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &contiguous(&sh), 21);
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &permuted(&sh, &[1, 0]), 22);
    let sh = [2048usize, 2048];
    check(&sh, DType::F64, &contiguous(&sh), DType::F64, &permuted(&sh, &[1, 0]), 23);
    check(&sh, DType::I16, &contiguous(&sh), DType::I16, &permuted(&sh, &[1, 0]), 24);
    let scalar = layout(&sh, &[0, 1], &[1, 1], &[false, false], &[true, true]);
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &scalar, 25);
    let sh = [64usize, 256, 300];
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &permuted(&sh, &[2, 0, 1]), 26);
    check(&sh, DType::F32, &contiguous(&sh), DType::BF16, &contiguous(&sh), 27);
}

#[test]
fn large_transposes_and_gathers_stream_with_ragged_edges() {
    // Streaming (buffered-tile) transposes per element size, with edges that are not
    // multiples of the micro block, the strip or the tile; and a streamed strided gather.
    let sh = [3001usize, 2999];
    check(&sh, DType::I16, &contiguous(&sh), DType::I16, &permuted(&sh, &[1, 0]), 31);
    check(&sh, DType::F16, &contiguous(&sh), DType::F16, &permuted(&sh, &[1, 0]), 32);
    let sh = [1449usize, 1451];
    check(&sh, DType::I64, &contiguous(&sh), DType::I64, &permuted(&sh, &[1, 0]), 33);
    let sh = [2053usize, 2047];
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &permuted(&sh, &[1, 0]), 34);
    let sh = [5usize, 1031, 817];
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &permuted(&sh, &[2, 0, 1]), 35);
    let sh = [2049usize, 2051];
    let every_other = layout(&sh, &[0, 1], &[1, 2], &[false, false], &[false, false]);
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &every_other, 36);
    let every_third = layout(&sh, &[0, 1], &[1, 3], &[false, false], &[false, false]);
    check(&sh, DType::F32, &contiguous(&sh), DType::F32, &every_third, 37);
}

#[test]
fn classification() {
    let p = |s: &[usize], d: &[isize], x: &[isize]| classify(&IterPlan::new(s, &[d, x]));
    assert_eq!(p(&[4, 5], &[5, 1], &[5, 1]), CopyClass::Contiguous);
    assert_eq!(p(&[4, 5], &[10, 1], &[5, 1]), CopyClass::Rows);
    assert_eq!(p(&[4, 5], &[5, 1], &[0, 0]), CopyClass::Broadcast);
    assert_eq!(p(&[16, 16], &[16, 1], &[1, 16]), CopyClass::Transpose { k: 0 });
    assert_eq!(p(&[4, 5], &[5, 1], &[10, 2]), CopyClass::General);
    assert_eq!(p(&[4, 0], &[5, 1], &[10, 2]), CopyClass::Empty);
    assert_eq!(p(&[], &[], &[]), CopyClass::Contiguous);
}

#[test]
fn rows_are_registered_for_every_dtype() {
    tensor_kernels_cpu::register::ensure_linked();
    for d in DType::ALL {
        let row = registry().lookup("copy", Device::Cpu, Layout::Strided, d).unwrap();
        let copy = row.kernel.as_any().downcast_ref::<CopyKernel>().expect("a copy kernel");
        assert_eq!((copy.kind, copy.func as *const ()), ("cpu-copy", copy_strided as *const ()));
        assert_eq!((row.op.arity, row.op.params.len()), (1, 0));
        let row = registry().lookup("fill", Device::Cpu, Layout::Strided, d).unwrap();
        assert_eq!(row.kernel.kind(), "cpu-fill");
        assert_eq!((row.op.arity, row.op.params), (0, &["value"][..]));
    }
}

#[test]
fn tensor_api_uses_the_engine() {
    tensor_kernels_cpu::register::ensure_linked();
    let t = tensor_core::Tensor::arange(0, 12, 1, DType::F32, Device::Cpu).unwrap().view(&[3, 4]).unwrap();
    let c = t.t().unwrap().contiguous().unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
    let i = t.to_dtype(DType::I8).unwrap();
    assert_eq!(i.to_vec::<i8>().unwrap(), (0..12).collect::<Vec<i8>>());
}

/// Every copy SIMD level the CPU has, lowest first.
fn levels() -> Vec<SimdLevel> {
    [SimdLevel::Baseline, SimdLevel::Avx2, SimdLevel::Avx512].into_iter().filter(|&l| l <= max_simd_level()).collect()
}

/// A view of `shape` taking every `step`-th element of the last dim of a row-major buffer
/// (`step > 0`), its first element at `base`.
fn stepped(shape: &[usize], step: usize) -> View {
    let n = shape.len();
    let mut gaps = vec![1; n];
    gaps[n - 1] = step;
    layout(shape, &(0..n).collect::<Vec<_>>(), &gaps, &vec![false; n], &vec![false; n])
}

#[test]
fn every_simd_level_transposes_and_slices_every_size() {
    // Edges around the micro blocks (2..32), cached tiles (32..128 rows) and strips
    // (16..256 columns) of every element size, padded and flipped layouts, 3-D permutes,
    // and every-other-element slices with every tail length of a vector.
    let edges =
        [(8usize, 8usize), (15, 17), (16, 16), (31, 33), (32, 32), (33, 64), (63, 65), (65, 127), (129, 255), (257, 9)];
    for level in levels() {
        assert_eq!(set_simd_level(level), level);
        for dt in [DType::U8, DType::F16, DType::F32, DType::I64] {
            for (i, &(r, c)) in edges.iter().enumerate() {
                let sh = [r, c];
                let seed = 100 + i as u64;
                check(&sh, dt, &contiguous(&sh), dt, &permuted(&sh, &[1, 0]), seed);
                let padded = layout(&sh, &[0, 1], &[1, 3], &[false, false], &[false, false]);
                check(&sh, dt, &padded, dt, &permuted(&sh, &[1, 0]), seed);
                let flipped = layout(&sh, &[1, 0], &[1, 1], &[true, true], &[false, false]);
                check(&sh, dt, &contiguous(&sh), dt, &flipped, seed);
                let gapped = layout(&sh, &[1, 0], &[2, 1], &[false, false], &[false, false]);
                check(&sh, dt, &contiguous(&sh), dt, &gapped, seed);
            }
            let sh = [9usize, 40, 70];
            for order in [[2, 0, 1], [1, 2, 0], [2, 1, 0]] {
                check(&sh, dt, &contiguous(&sh), dt, &permuted(&sh, &order), 130);
            }
            for n in (1..=70).chain([127, 128, 129, 255, 256, 257, 1000]) {
                for rows in [1usize, 3] {
                    let sh = [rows, n];
                    check(&sh, dt, &contiguous(&sh), dt, &stepped(&sh, 2), 140 + n as u64);
                    let flipped = layout(&sh, &[0, 1], &[1, 2], &[false, true], &[false, false]);
                    check(&sh, dt, &contiguous(&sh), dt, &flipped, 141);
                    check(&sh, dt, &contiguous(&sh), dt, &stepped(&sh, 3), 142);
                }
            }
        }
    }
    set_simd_level(max_simd_level());
}

#[test]
fn every_simd_level_streams_large_transposes_and_slices() {
    // Above the streaming threshold (16 MiB of destination), ragged edges.
    for level in levels() {
        assert_eq!(set_simd_level(level), level);
        let sh = [2051usize, 2053];
        check(&sh, DType::F32, &contiguous(&sh), DType::F32, &permuted(&sh, &[1, 0]), 51);
        check(&sh, DType::F32, &contiguous(&sh), DType::F32, &stepped(&sh, 2), 52);
        let sh = [1451usize, 1447];
        check(&sh, DType::I64, &contiguous(&sh), DType::I64, &permuted(&sh, &[1, 0]), 53);
        let sh = [2999usize, 3001];
        check(&sh, DType::F16, &contiguous(&sh), DType::F16, &permuted(&sh, &[1, 0]), 54);
        let sh = [4099usize, 4097];
        check(&sh, DType::U8, &contiguous(&sh), DType::U8, &permuted(&sh, &[1, 0]), 55);
    }
    set_simd_level(max_simd_level());
}

/// Byte buffers whose usable region starts right after, or ends right before, an
/// inaccessible page, so a read or write outside the region faults.
#[cfg(unix)]
mod guarded {
    /// A mapping with a usable region of `bytes` bytes at `data`.
    pub struct Guarded {
        base: *mut libc::c_void,
        total: usize,
        pub data: *mut u8,
    }

    impl Guarded {
        /// Maps `bytes` usable bytes between two guard pages, flush against the leading
        /// guard when `at_start`, else against the trailing one.
        pub fn new(bytes: usize, at_start: bool) -> Guarded {
            let page = 4096;
            let body = bytes.div_ceil(page).max(1) * page;
            let total = body + 2 * page;
            // SAFETY: an anonymous private mapping; the guards are pages of it.
            unsafe {
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    total,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(base, libc::MAP_FAILED);
                let b = base as *mut u8;
                assert_eq!(libc::mprotect(base, page, libc::PROT_NONE), 0);
                assert_eq!(libc::mprotect(b.add(page + body) as *mut _, page, libc::PROT_NONE), 0);
                let data = if at_start { b.add(page) } else { b.add(page + body - bytes) };
                Guarded { base, total, data }
            }
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base, self.total) };
        }
    }
}

/// Copies through views whose spans touch guard pages on either side, source and
/// destination, compared with the reference: any access outside a view's span faults.
#[cfg(unix)]
fn check_guarded(shape: &[usize], dt: DType, dv: &View, sv: &View, seed: u64) {
    use guarded::Guarded;
    let e = dt.size();
    let src_bytes = random_bytes(dt, sv.len, seed);
    for (s_start, d_start) in [(false, false), (true, true)] {
        let src = Guarded::new(sv.len * e, s_start);
        let got = Guarded::new(dv.len * e, d_start);
        let mut want = vec![0xA5u8; dv.len * e + 8];
        let wbase = {
            let p = want.as_mut_ptr();
            p.wrapping_add(p.align_offset(8))
        };
        // SAFETY: the regions hold sv.len / dv.len elements; every reachable element of the
        // views lies inside them (layout computes the spans).
        unsafe {
            std::ptr::copy_nonoverlapping(src_bytes.as_ptr(), src.data, src_bytes.len());
            std::ptr::write_bytes(got.data, 0xA5, dv.len * e);
            let s = cpu_raw(src.data.add(sv.base * e), dt, shape, &sv.strides);
            let g = cpu_raw(got.data.add(dv.base * e), dt, shape, &dv.strides);
            let w = cpu_raw(wbase.add(dv.base * e), dt, shape, &dv.strides);
            copy_strided(&g, &s).unwrap();
            naive_copy(&w, &s);
            let (g, w) =
                (std::slice::from_raw_parts(got.data, dv.len * e), std::slice::from_raw_parts(wbase, dv.len * e));
            assert!(g == w, "guarded {dt} shape {shape:?} dst {:?} src {:?}", dv.strides, sv.strides);
        }
    }
}

/// A CPU operand at `ptr`.
#[cfg(unix)]
fn cpu_raw<'a>(ptr: *mut u8, dtype: DType, shape: &'a [usize], strides: &'a [isize]) -> RawTensor<'a> {
    RawTensor { ptr, dtype, shape, strides, device: Device::Cpu }
}

#[cfg(unix)]
#[test]
fn simd_paths_stay_inside_the_views() {
    for level in levels() {
        set_simd_level(level);
        for dt in [DType::U8, DType::F16, DType::F32, DType::I64] {
            for n in [1usize, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 1000] {
                let sh = [2, n];
                check_guarded(&sh, dt, &contiguous(&sh), &stepped(&sh, 2), 60);
            }
            for (r, c) in [(8usize, 8usize), (17, 33), (64, 64), (65, 129), (300, 40)] {
                let sh = [r, c];
                check_guarded(&sh, dt, &contiguous(&sh), &permuted(&sh, &[1, 0]), 61);
                let flipped = layout(&sh, &[1, 0], &[1, 1], &[true, true], &[false, false]);
                check_guarded(&sh, dt, &contiguous(&sh), &flipped, 62);
            }
        }
    }
    set_simd_level(max_simd_level());
}
