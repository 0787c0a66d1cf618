//! The shim test's harness: the library built once, operands with random contents, the
//! Rust reference of each sample op, and the comparisons.

use std::path::PathBuf;
use std::sync::OnceLock;

use half::{bf16, f16};
use tensor_core::iter::{IterPlan, StridedOffsets};
use tensor_core::{DType, Element};
use tensor_cuda_testing::samples;
use tensor_cuda_testing::shim::{self, ShimError, ShimLib};
use tensor_kernels_cuda::codegen::{self, Generated, KernelSpec};

// ------------------------------------------------------------------ building the library

pub(crate) struct Shim {
    pub(crate) lib: ShimLib,
}

pub(crate) fn all_specs(fns: &'static [samples::SampleFn]) -> Vec<KernelSpec<'static>> {
    let mut specs = Vec::new();
    for f in fns {
        specs.extend(codegen::map_kernels_for(f.func(), f.dtype, f.arity));
    }
    specs.extend(codegen::data_movement_kernels());
    specs
}

pub(crate) fn sample_fns() -> &'static [samples::SampleFn] {
    static FNS: OnceLock<Vec<samples::SampleFn>> = OnceLock::new();
    FNS.get_or_init(samples::sample_functions)
}

/// The shim of every sample kernel, built once; one that cannot be built here fails the
/// test with the fix.
pub(crate) fn shim() -> &'static Shim {
    static SHIM: OnceLock<Result<Shim, ShimError>> = OnceLock::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    match SHIM.get_or_init(|| shim::build(&all_specs(sample_fns()), &dir).map(|lib| Shim { lib })) {
        Ok(s) => s,
        Err(ShimError::Failed(e)) => panic!("{e}"),
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    }
}

impl Shim {
    pub(crate) fn launch<A>(&self, g: &Generated, grid: u32, block: (u32, u32), args: &A) {
        // SAFETY: A is the #[repr(C)] mirror of the struct the kernel takes (checked by
        // `arg_structs_match_the_c_layout`); the pointers inside `args` address live host
        // buffers large enough for every element the launch touches (set up by the callers).
        unsafe { self.lib.launch(&g.name, grid, block, args as *const A as *const std::ffi::c_void) }.unwrap();
    }
}

// ------------------------------------------------------------------ host buffers

/// A strided operand in a byte buffer: element [0, ..] is at element index `base`.
pub(crate) struct Operand {
    pub(crate) dtype: DType,
    pub(crate) buf: Vec<u64>, // u64 storage keeps every element aligned
    pub(crate) base: usize,
    pub(crate) shape: Vec<usize>,
    pub(crate) strides: Vec<isize>,
}

impl Operand {
    /// A buffer reached by `strides` over `shape`, starting `lead` elements in.
    pub(crate) fn new(dtype: DType, shape: &[usize], strides: &[isize], lead: usize) -> Operand {
        let neg: usize =
            shape.iter().zip(strides).filter(|&(_, &s)| s < 0).map(|(&n, &s)| (n - 1) * s.unsigned_abs()).sum();
        let pos: usize = shape.iter().zip(strides).filter(|&(_, &s)| s > 0).map(|(&n, &s)| (n - 1) * s as usize).sum();
        let elems = lead + neg + pos + 1;
        let words = (elems * dtype.size()).div_ceil(8) + 2;
        Operand { dtype, buf: vec![0; words], base: lead + neg, shape: shape.to_vec(), strides: strides.to_vec() }
    }
    pub(crate) fn ptr(&mut self) -> u64 {
        // SAFETY: base is inside buf (by construction).
        unsafe { (self.buf.as_mut_ptr() as *mut u8).add(self.base * self.dtype.size()) as u64 }
    }
    pub(crate) fn offsets(&self) -> Vec<isize> {
        StridedOffsets::new(&self.shape, &self.strides).collect()
    }
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        let len = self.buf.len() * 8;
        // SAFETY: reinterpreting the u64 buffer as bytes.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr() as *mut u8, len) }
    }
    pub(crate) fn get<T: Element>(&mut self, off: isize) -> T {
        let i = (self.base as isize + off) as usize * std::mem::size_of::<T>();
        // SAFETY: i is inside the buffer; T is the operand's element type (any bit pattern is
        // valid, bools were written as 0/1).
        unsafe { (self.bytes().as_ptr().add(i) as *const T).read_unaligned() }
    }
    pub(crate) fn set<T: Element>(&mut self, off: isize, v: T) {
        let i = (self.base as isize + off) as usize * std::mem::size_of::<T>();
        // SAFETY: as in get.
        unsafe { (self.bytes().as_mut_ptr().add(i) as *mut T).write_unaligned(v) }
    }
}

use tensor_core::with_dtype;

/// Deterministic values; floats include specials that casts must handle.
pub(crate) fn fill_random(op: &mut Operand, seed: u64, specials: bool) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let offs = op.offsets();
    for (k, off) in offs.into_iter().enumerate() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = (x % 121) as i64 - 60;
        let special = [f64::NAN, f64::INFINITY, -1e10, 1e10, 300.7, -129.5, -0.5, 65504.0, 2.5, -2.5];
        let v: f64 = if specials && k % 3 == 0 { special[(x >> 8) as usize % special.len()] } else { r as f64 / 4.0 };
        with_dtype!(op.dtype, T => {
            let e: T = if op.dtype.is_float() { v.cast() } else { r.cast() };
            op.set(off, e)
        });
    }
}

// ------------------------------------------------------------------ the reference

pub(crate) trait Num: Element {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn exp(self) -> Self;
}
macro_rules! int_num { ($($t:ty),*) => { $( impl Num for $t {
    fn add(self, o: Self) -> Self { self.wrapping_add(o) }
    fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
    fn exp(self) -> Self { (self as f64).exp().cast() }
} )* } }
int_num!(u8, i8, i16, i32, i64);
impl Num for bool {
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn exp(self) -> Self {
        true
    }
}
macro_rules! half_num { ($($t:ty),*) => { $( impl Num for $t {
    fn add(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() + o.to_f32()) }
    fn mul(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() * o.to_f32()) }
    fn exp(self) -> Self { <$t>::from_f32(self.to_f32().exp()) }
} )* } }
half_num!(f16, bf16, tensor_core::F8E4M3, tensor_core::F8E5M2); // never a compute type; present so dtype dispatch type-checks
impl Num for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
}
impl Num for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
}

/// The sample op `op` on compute values: a value, or a bool for comparisons.
pub(crate) fn eval<C: Num>(op: &str, x: &[C], slope: f32) -> Result<C, bool> {
    let zero = C::ZERO;
    match op {
        "add" => Ok(x[0].add(x[1])),
        "relu" => Ok(if x[0] > zero { x[0] } else { zero }),
        "lt" => Err(x[0] < x[1]),
        "fma" => Ok(x[0].mul(x[1]).add(x[2])),
        "exp" => Ok(x[0].exp()),
        "leaky_relu" => Ok(if x[0] > zero { x[0] } else { x[0].mul(slope.cast()) }),
        _ => unreachable!("{op}"),
    }
}

/// Reference for one element: inputs stored as their dtype, computed in the row's compute
/// dtype, stored as the output's dtype.
pub(crate) fn reference(
    op: &str,
    row: DType,
    ins: &mut [Operand],
    offs: &[isize],
    out: &mut Operand,
    out_off: isize,
    slope: f32,
) {
    with_dtype!(row.compute(), C => {
        let cs: Vec<C> = ins
            .iter_mut()
            .zip(offs)
            .map(|(o, &off)| with_dtype!(o.dtype, S => o.get::<S>(off).cast::<C>()))
            .collect();
        let r = eval::<C>(op, &cs, slope);
        with_dtype!(out.dtype, O => {
            let v: O = match r { Ok(c) => c.cast(), Err(b) => b.cast() };
            out.set(out_off, v)
        })
    })
}

/// Element `off` of `o` as comparable bits (floats: NaN-canonical).
pub(crate) fn value(o: &mut Operand, off: isize) -> f64 {
    with_dtype!(o.dtype, T => { let v: T = o.get(off); v.cast::<f64>() })
}

pub(crate) fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || ((a - b).abs() <= 1e-6 * a.abs().max(b.abs()))
}

/// Compares every logical element of `got` against `want`.
pub(crate) fn assert_same(what: &str, got: &mut Operand, want: &mut Operand) {
    let offs = got.offsets();
    let woffs = want.offsets();
    for (k, (&g, &w)) in offs.iter().zip(&woffs).enumerate() {
        let (a, b) = (value(got, g), value(want, w));
        assert!(same(a, b), "{what}: element {k}: kernel gave {a}, reference {b}");
    }
}

/// An uncanonicalised plan (the dims as given) over `shape` with one stride list per operand.
pub(crate) fn plan_of(shape: &[usize], strides: Vec<Vec<isize>>) -> IterPlan {
    IterPlan { shape: shape.into(), strides: strides.into_iter().map(Into::into).collect() }
}

pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut st = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for d in (0..shape.len()).rev() {
        st[d] = acc;
        acc *= shape[d] as isize;
    }
    st
}

// ------------------------------------------------------------------ tests
