//! The block kernels give the same bits at every instruction-set level the CPU supports
//! (baseline, AVX2, AVX-512): several ops (arithmetic, max/min, select, comparisons, exp,
//! ln, sin, cos, tanh, pow...) on f32, f64, the integers and bool, and the f16/bf16 paths
//! (conversion to f32 blocks, op, conversion back), over special and random inputs whose
//! lengths leave a partial last vector.

#![allow(clippy::excessive_precision, clippy::approx_constant, clippy::unnecessary_cast)]

mod value_common;

use std::sync::Mutex;
use tensor_core::DType;
use tensor_kernels_cpu::convert::{gather_cast, scatter_cast};
use tensor_kernels_cpu::kernel::Store;
use tensor_kernels_cpu::map::{
    map_block, max_simd_level, pred_block, set_simd_level, simd_level, MapBody, PredBody, SimdLevel,
};
use tensor_kernels_cpu::value::Value;
use value_common::{inputs, Rng, TestElem};

body!(Add, |a, b| a + b);
body!(Sub, |a, b| a - b);
body!(Mul, |a, b| a * b);
body!(Div, |a, b| a / b);
body!(Max, |a, b| a.max(b));
body!(Min, |a, b| a.min(b));
body!(Pow, |a, b| a.pow(b));
body!(Blend, |a, b| V::select(a.le(b) & !a.eq(V::zero()), a - b, (a * b).abs()));
body!(Exp, |x| x.exp());
body!(ExpNonPositive, |x| (-x.abs()).exp_nonpositive());
body!(Exp2, |x| x.exp2());
body!(Ln, |x| x.ln());
body!(Log2, |x| x.log2());
body!(Sin, |x| x.sin());
body!(Cos, |x| x.cos());
body!(Tanh, |x| x.tanh());
body!(Sqrt, |x| x.sqrt());
body!(Recip, |x| x.recip());
body!(Rounding, |x| x.floor() + x.ceil() - x.round());
body!(Relu, |x| V::select(x.lt(V::zero()), V::zero(), x));
body!(Sigmoid, |x| V::one() / (V::one() + (-x).exp()));
body!(NegAbs, |x| -x.abs());
body!(ExpTanh, |a, b| a.exp() - b.tanh());
pred!(Lt, |a, b| a.lt(b));
pred!(GeOrEq, |a, b| a.ge(b) | a.eq(V::one()));
pred!(NeAndGt, |a, b| a.ne(b) & !a.gt(V::zero()));

/// Serialises level changes within this test binary (the level is process-global).
static LEVEL_LOCK: Mutex<()> = Mutex::new(());

/// The levels this CPU supports, lowest first.
fn levels() -> Vec<SimdLevel> {
    SimdLevel::ALL.into_iter().filter(|&l| l <= max_simd_level()).collect()
}

/// Runs `f` once per supported level and checks that every level's bytes equal the
/// baseline's; returns how many levels ran.
fn same_at_every_level(what: &str, f: impl Fn() -> Vec<u8>) -> usize {
    let _guard = LEVEL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let before = simd_level();
    let mut first: Option<Vec<u8>> = None;
    for level in levels() {
        assert_eq!(set_simd_level(level), level);
        assert_eq!(simd_level(), level);
        let r = f();
        match &first {
            None => first = Some(r),
            Some(base) => {
                if let Some(i) = (0..base.len().max(r.len())).find(|&i| base.get(i) != r.get(i)) {
                    set_simd_level(before);
                    let near = |v: &[u8]| v[i.saturating_sub(8).min(v.len())..(i + 8).min(v.len())].to_vec();
                    panic!(
                        "{what}: {level:?} differs from the baseline at byte {i}: {:?} vs {:?}",
                        near(&r),
                        near(base)
                    );
                }
            }
        }
    }
    set_simd_level(before);
    levels().len()
}

/// The bytes of `v` with every NaN replaced by one canonical NaN: which operand's payload
/// an operation propagates is not fixed by LLVM (it may commute `a + b`), so a NaN's
/// payload and sign may differ between instruction sets; every other bit may not.
fn bytes<E: Canon>(v: &[E]) -> Vec<u8> {
    v.iter().flat_map(|&x| x.canon()).collect()
}

/// Element bytes for [`bytes`].
trait Canon: Copy {
    /// The native-endian bytes, a NaN canonicalised.
    fn canon(self) -> Vec<u8>;
}
macro_rules! canon_int {
    ($($t:ty),*) => { $(
        impl Canon for $t {
            fn canon(self) -> Vec<u8> {
                self.to_ne_bytes().to_vec()
            }
        }
    )* };
}
canon_int!(i8, i16, i32, i64, u8);
impl Canon for bool {
    fn canon(self) -> Vec<u8> {
        vec![self as u8]
    }
}
impl Canon for f32 {
    fn canon(self) -> Vec<u8> {
        (if self.is_nan() { f32::NAN } else { self }).to_ne_bytes().to_vec()
    }
}
impl Canon for f64 {
    fn canon(self) -> Vec<u8> {
        (if self.is_nan() { f64::NAN } else { self }).to_ne_bytes().to_vec()
    }
}
/// `f16` or `bf16` bits (`exp_mask` selects the exponent): NaNs canonicalised.
fn half_bytes(v: &[u16], exp_mask: u16) -> Vec<u8> {
    let nan = |h: u16| h & exp_mask == exp_mask && h & !exp_mask & 0x7fff != 0;
    v.iter().flat_map(|&h| (if nan(h) { exp_mask | 1 } else { h }).to_ne_bytes()).collect()
}

/// Output bytes of `map_block` over the inputs, first the whole length (vectors and a
/// partial last vector) and then each short prefix, so every tail length runs.
fn run_map<E: TestElem + Canon, const N: usize, B: MapBody<N>>(body: &B, ins: &[Vec<E>; N]) -> Vec<u8> {
    let n = ins[0].len();
    let mut all = Vec::new();
    for len in std::iter::once(n).chain(0..70.min(n)) {
        let mut out = vec![E::ZERO; len];
        let ptrs: [*const u8; N] = std::array::from_fn(|k| ins[k].as_ptr() as *const u8);
        // SAFETY: `out` holds `len` elements and every input at least `len`.
        unsafe { map_block::<E, N, B>(out.as_mut_ptr() as *mut u8, &ptrs, len, body, Store::Plain) };
        all.extend(bytes(&out));
    }
    all
}

/// As [`run_map`] for predicates.
fn run_pred<E: TestElem, B: PredBody<2>>(body: &B, ins: &[Vec<E>; 2]) -> Vec<u8> {
    let n = ins[0].len();
    let mut all = Vec::new();
    for len in std::iter::once(n).chain(0..70.min(n)) {
        let mut out = vec![false; len];
        let ptrs = [ins[0].as_ptr() as *const u8, ins[1].as_ptr() as *const u8];
        // SAFETY: `out` holds `len` bools and both inputs at least `len` elements.
        unsafe { pred_block::<E, 2, B>(out.as_mut_ptr() as *mut u8, &ptrs, len, body, Store::Plain) };
        all.extend(bytes(&out));
    }
    all
}

/// Binary ops, predicates, and (for floats) the unary functions on element `E`.
fn check_elem<E: TestElem + Canon>(name: &str, seed: u64, float: bool) {
    let two = inputs::<E, 2>(seed, 3001);
    let one = inputs::<E, 1>(seed + 1, 20_001);
    let same = |op: &str, f: &dyn Fn() -> Vec<u8>| same_at_every_level(&format!("{name} {op}"), f);
    same("add", &|| run_map(&Add, &two));
    same("sub", &|| run_map(&Sub, &two));
    same("mul", &|| run_map(&Mul, &two));
    same("div", &|| run_map(&Div, &two));
    same("max", &|| run_map(&Max, &two));
    same("min", &|| run_map(&Min, &two));
    same("pow", &|| run_map(&Pow, &two));
    same("blend", &|| run_map(&Blend, &two));
    same("lt", &|| run_pred(&Lt, &two));
    same("ge|eq", &|| run_pred(&GeOrEq, &two));
    same("ne&!gt", &|| run_pred(&NeAndGt, &two));
    same("relu", &|| run_map(&Relu, &one));
    same("-abs", &|| run_map(&NegAbs, &one));
    if !float {
        return;
    }
    same("exp", &|| run_map(&Exp, &one));
    same("exp_nonpositive", &|| run_map(&ExpNonPositive, &one));
    same("exp2", &|| run_map(&Exp2, &one));
    same("ln", &|| run_map(&Ln, &one));
    same("log2", &|| run_map(&Log2, &one));
    same("sin", &|| run_map(&Sin, &one));
    same("cos", &|| run_map(&Cos, &one));
    same("tanh", &|| run_map(&Tanh, &one));
    same("sqrt", &|| run_map(&Sqrt, &one));
    same("recip", &|| run_map(&Recip, &one));
    same("floor+ceil-round", &|| run_map(&Rounding, &one));
    same("sigmoid", &|| run_map(&Sigmoid, &one));
}

/// A binary f32 computation over two input slices.
type BinaryF32 = dyn Fn(&[f32], &[f32]) -> Vec<f32>;
#[test]
fn every_level_gives_the_same_bits() {
    check_elem::<f32>("f32", 1, true);
    check_elem::<f64>("f64", 3, true);
    check_elem::<i32>("i32", 5, false);
    check_elem::<i64>("i64", 7, false);
    check_elem::<i16>("i16", 9, false);
    check_elem::<i8>("i8", 11, false);
    check_elem::<u8>("u8", 13, false);
    check_elem::<bool>("bool", 15, false);
}

/// `f32` results of `body` over two `f32` inputs, one `map_block` call.
fn map_f32<B: MapBody<2>>(body: &B, x: &[f32], y: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    // SAFETY: `out`, `x` and `y` hold `x.len()` elements each (`y` at least as many).
    unsafe {
        map_block::<f32, 2, B>(
            out.as_mut_ptr() as *mut u8,
            &[x.as_ptr() as _, y[..x.len()].as_ptr() as _],
            x.len(),
            body,
            Store::Plain,
        )
    };
    out
}

/// `f16`/`bf16` conversions (exact, NaN payloads included) and ops as the elementwise
/// driver runs them: inputs converted to f32 blocks, the f32 block kernel, the result
/// converted back.
#[test]
fn half_precision_paths_give_the_same_bits() {
    let mut r = Rng(17);
    // Every 16-bit pattern (NaNs, infinities, subnormals) and random ones, odd length.
    let a: Vec<u16> = (0..=u16::MAX).chain((0..1001).map(|_| r.next() as u16)).collect();
    let b: Vec<u16> = a.iter().map(|_| r.next() as u16).collect();
    let lens = || std::iter::once(a.len()).chain(0..40);
    for (dt, exp_mask) in [(DType::F16, 0x7c00), (DType::BF16, 0x7f80)] {
        let widen = |src: &[u16], len: usize| {
            let mut out = vec![0f32; len];
            // SAFETY: `src` holds at least `len` 16-bit elements, `out` `len` f32.
            unsafe { gather_cast(out.as_mut_ptr() as *mut u8, DType::F32, src.as_ptr() as *const u8, dt, 1, len) };
            out
        };
        let narrow = |src: &[f32]| {
            let mut out = vec![0u16; src.len()];
            // SAFETY: `out` holds `src.len()` 16-bit elements.
            unsafe {
                scatter_cast(out.as_mut_ptr() as *mut u8, dt, 1, src.as_ptr() as *const u8, DType::F32, src.len())
            };
            out
        };
        same_at_every_level(&format!("{dt:?} widen, narrow"), || {
            let mut all = Vec::new();
            for len in lens() {
                let x = widen(&a, len);
                all.extend(x.iter().flat_map(|v| v.to_bits().to_ne_bytes()));
                all.extend(narrow(&x).iter().flat_map(|h| h.to_ne_bytes()));
            }
            all
        });
        let op = |body: &BinaryF32| {
            let mut all = Vec::new();
            for len in lens() {
                all.extend(half_bytes(&narrow(&body(&widen(&a, len), &widen(&b, len))), exp_mask));
            }
            all
        };
        same_at_every_level(&format!("{dt:?} add"), || op(&|x, y| map_f32(&Add, x, y)));
        same_at_every_level(&format!("{dt:?} exp - tanh"), || op(&|x, y| map_f32(&ExpTanh, x, y)));
    }
}

#[test]
fn levels_never_exceed_the_cpu() {
    let _guard = LEVEL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let before = simd_level();
    let max = max_simd_level();
    assert!(before <= max);
    for level in SimdLevel::ALL {
        assert_eq!(set_simd_level(level), level.min(max));
        assert_eq!(simd_level(), level.min(max));
        assert_eq!(SimdLevel::from_name(level.name()), Some(level));
    }
    assert_eq!(SimdLevel::from_name(" AVX512 "), Some(SimdLevel::Avx512));
    assert_eq!(SimdLevel::from_name("sse9"), None);
    set_simd_level(before);
    eprintln!("levels run: {:?}", levels());
}
