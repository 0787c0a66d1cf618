//! Block kernels of elementwise ops: contiguous input blocks in, one contiguous output
//! block out. `#[tensor_op]` generates a [`MapBody`] (or [`PredBody`]) per op and one
//! `MapFn` per dtype that calls [`map_block`] (or [`pred_block`]).

use super::value::{Mask, SimdElement, Value};
use crate::copy::stream::stream_pieces;
use crate::kernel::Store;
use crate::simd_level::level_copies;
/// The SIMD level, also under its former path `map::` (its own module since issue 33).
pub use crate::simd_level::{max_simd_level, set_simd_level, simd_level, SimdLevel};

/// An op body returning a value: `fn call<V: Value>(&self, [a, b]: [V; 2]) -> V`.
pub trait MapBody<const N: usize>: Sync {
    /// Evaluates the body on scalars or on SIMD lanes.
    fn call<V: Value>(&self, args: [V; N]) -> V;
}

/// An op body returning a comparison mask (ops whose output dtype is `bool`).
pub trait PredBody<const N: usize>: Sync {
    /// Evaluates the body on scalars or on SIMD lanes.
    fn call<V: Value>(&self, args: [V; N]) -> V::Mask;
}

/// How a block loop turns a body's result into output elements: values of `E`
/// ([`MapBody`]) or `bool`s ([`PredBody`]). Lets one loop serve both kinds of op.
trait BlockBody<E: SimdElement, const N: usize>: Sync {
    /// The output element.
    type Out: Copy + Default;
    /// Evaluates one vector of lanes into `out[..LANES]`.
    fn lanes(&self, args: [E::Lanes; N], out: &mut [Self::Out]);
}

struct Values<'a, B>(&'a B);
struct Preds<'a, B>(&'a B);

impl<E: SimdElement, const N: usize, B: MapBody<N>> BlockBody<E, N> for Values<'_, B> {
    type Out = E;
    #[inline(always)]
    fn lanes(&self, args: [E::Lanes; N], out: &mut [E]) {
        self.0.call(args).store(out);
    }
}

impl<E: SimdElement, const N: usize, B: PredBody<N>> BlockBody<E, N> for Preds<'_, B> {
    type Out = bool;
    #[inline(always)]
    fn lanes(&self, args: [E::Lanes; N], out: &mut [bool]) {
        self.0.call(args).write_bools(out);
    }
}

/// Runs `body` over `n` elements: `out[i] = body(inputs[0][i], ..., inputs[N-1][i])`.
///
/// The loop is compiled three times: for the build's baseline target and, on x86-64, with
/// AVX2 and with AVX-512 (chosen at run time, see [`simd_level`]). Results are identical.
///
/// # Safety
/// `out` is valid for `n` writes of `E`, each of the `N` `inputs` for `n` reads of `E`;
/// `out` may be equal to an input pointer but must not partially overlap one; with
/// [`Store::Streaming`], the caller fences before the results are read (see [`MapFn`](crate::kernel::MapFn)).
pub unsafe fn map_block<E: SimdElement, const N: usize, B: MapBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
    store: Store,
) {
    // SAFETY: forwarded; `out` holds `n` values of E.
    unsafe { run_block::<E, N, _>(out, inputs, n, &Values(body), store) }
}

/// Like [`map_block`] for bodies returning a mask; `out` holds `n` `bool`s.
///
/// # Safety
/// As [`map_block`], with `out` valid for `n` writes of `bool`.
pub unsafe fn pred_block<E: SimdElement, const N: usize, B: PredBody<N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &B,
    store: Store,
) {
    // SAFETY: forwarded; `out` holds `n` bools.
    unsafe { run_block::<E, N, _>(out, inputs, n, &Preds(body), store) }
}

/// Picks the instruction-set copy of the block loop.
///
/// # Safety
/// As [`map_block`], with `out` valid for `n` writes of `K::Out`.
#[inline(always)]
unsafe fn run_block<E: SimdElement, const N: usize, K: BlockBody<E, N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &K,
    store: Store,
) {
    match simd_level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `simd_level` never exceeds the CPU's detected level, so the CPU has
        // AVX-512 F/BW/DQ/VL, AVX2 and FMA; the caller's contract is forwarded unchanged.
        SimdLevel::Avx512 => unsafe { run_block_avx512::<E, N, K>(out, inputs, n, body, store) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, the CPU has AVX2 and FMA.
        SimdLevel::Avx2 => unsafe { run_block_avx2::<E, N, K>(out, inputs, n, body, store) },
        // SAFETY: forwarded.
        _ => unsafe { run_block_generic::<E, N, K>(out, inputs, n, body, store) },
    }
}

level_copies!(unsafe fn run_block_avx2, run_block_avx512 [E: SimdElement, const N: usize, K: BlockBody<E, N>]
    (out: *mut u8, inputs: &[*const u8], n: usize, body: &K, store: Store)
    => run_block_generic::<E, N, K>; "As [`run_block`]");

/// An empty `asm!` statement: emits nothing, but LLVM's loop vectorizer cannot widen a loop
/// that contains it. Called once per vector in the block loop, whose body is already
/// vector code (per-lane loops over the lanes array): left to itself, the vectorizer may
/// widen the block loop *across* vectors instead, which turns every lane array into
/// gathers or 8×8 transposes (measured 2–5× slower than one vector per iteration).
/// Public for other loops over lane vectors (reductions, row kernels).
///
/// ```
/// tensor_kernels_cpu::map::no_loop_vectorize();
/// ```
#[inline(always)]
pub fn no_loop_vectorize() {
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
    // SAFETY: an empty instruction sequence: it reads and writes no memory, no register
    // and no flag (as its options state) and does not touch the stack.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags))
    };
}

/// How far ahead of the vector being computed the block loop prefetches its inputs (32
/// cache lines). The hardware prefetchers alone fall behind when a compute-bound body
/// (exp) reads from DRAM; simple ops (add, relu) measured unchanged or slightly faster,
/// cache-resident calls unchanged (`docs/performance-log.md`, “From the code comments”).
pub const PREFETCH_BYTES: usize = 2048;

/// The x86 prefetch with locality hint `HINT` (`_MM_HINT_T0`: into L1, `_T1`: into L2).
#[inline(always)]
fn prefetch_hint<const HINT: i32, T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory or register, whatever the
    // address (an invalid one is dropped); SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<HINT>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks the CPU to bring the cache line at `p` into L1 (a hint: any address is allowed).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    prefetch_hint::<3, T>(p) // _MM_HINT_T0
}

/// Asks the CPU to bring the cache line at `p` into L2 only (a hint: any address is
/// allowed). For random reads many entries ahead (spmv's vector elements): an L1 prefetch
/// holds one of the few L1 miss buffers until its line arrives, an L2 one does not, so
/// more of them are in flight (measured: spmv 15-25 % faster than with [`prefetch`]).
///
/// ```
/// let v = vec![1.0f32; 1024];
/// tensor_kernels_cpu::map::prefetch_l2(v.as_ptr().wrapping_add(512));
/// ```
#[inline(always)]
pub fn prefetch_l2<T>(p: *const T) {
    prefetch_hint::<2, T>(p) // _MM_HINT_T1
}

/// Asks the CPU to bring the cache line at `p` close with little cache pollution (the
/// non-temporal hint: a hint, any address is allowed). For a stream read once while other
/// data should stay cached: spmv's matrix, streamed past a vector read at random
/// (measured 5-9 % faster with the matrix 256 entries ahead this way).
///
/// ```
/// let v = vec![1.0f32; 1024];
/// tensor_kernels_cpu::map::prefetch_nta(v.as_ptr().wrapping_add(512));
/// ```
#[inline(always)]
pub fn prefetch_nta<T>(p: *const T) {
    prefetch_hint::<0, T>(p) // _MM_HINT_NTA
}

/// Asks for every cache line of the `bytes` bytes from `start` ([`prefetch`] once per 64
/// bytes; a hint: any address is allowed).
///
/// ```
/// let xs = [0u8; 256];
/// tensor_kernels_cpu::map::prefetch_lines(xs.as_ptr(), xs.len());
/// ```
#[inline(always)]
pub fn prefetch_lines(start: *const u8, bytes: usize) {
    prefetch_lines_with(start, bytes, prefetch::<u8>);
}

/// As [`prefetch_lines`], each line asked for by `hint` ([`prefetch`], [`prefetch_l2`] or
/// [`prefetch_nta`]).
///
/// ```
/// use tensor_kernels_cpu::map::{prefetch_l2, prefetch_lines_with};
/// let xs = [0u8; 256];
/// prefetch_lines_with(xs.as_ptr(), xs.len(), prefetch_l2::<u8>);
/// ```
#[inline(always)]
pub fn prefetch_lines_with(start: *const u8, bytes: usize, hint: fn(*const u8)) {
    let mut line = 0;
    while line < bytes {
        hint(start.wrapping_add(line));
        line += 64;
    }
}

/// Most lanes of any `SimdElement`'s vector (the block buffers' length).
const MAX_LANES: usize = 64;

/// Copies `bytes` (< 512: a block tail, under 64 vector lanes) bytes as one fixed-size
/// piece per set bit of `bytes`, each a few plain moves and no loop: `copy_nonoverlapping`
/// with a run-time length (or a copy loop, which LLVM turns back into one) is a call to
/// `memcpy`, three of which were a tenth of a 1-element call's instructions.
///
/// # Safety
/// `src` is valid for `bytes` reads, `dst` for `bytes` writes; they do not overlap.
#[inline(always)]
unsafe fn copy_short(src: *const u8, dst: *mut u8, bytes: usize) {
    debug_assert!(bytes < 512);
    let mut at = 0;
    macro_rules! pieces {
        ($($size:literal),*) => {$(
            if bytes & $size != 0 {
                // SAFETY: the pieces taken so far and this one are distinct bits of
                // `bytes`, so `at + $size <= bytes`: in bounds of both (caller's contract).
                unsafe { dst.add(at).cast::<[u8; $size]>().write_unaligned(src.add(at).cast::<[u8; $size]>().read_unaligned()) };
                at += $size;
            }
        )*};
    }
    pieces!(256, 128, 64, 32, 16, 8, 4, 2, 1);
}

/// The block loop, inlined into each instruction-set copy: full vectors of lanes loaded
/// from and stored to memory directly, then one more vector for the remaining `< LANES`
/// elements through stack buffers, padded with values already there (every lane operation
/// is total and per lane, so padding never changes a result and never traps).
///
/// # Safety
/// As [`run_block`].
#[inline(always)]
unsafe fn run_block_generic<E: SimdElement, const N: usize, K: BlockBody<E, N>>(
    out: *mut u8,
    inputs: &[*const u8],
    n: usize,
    body: &K,
    store: Store,
) {
    let ins: [*const E; N] = std::array::from_fn(|i| inputs[i] as *const E);
    let out = out as *mut K::Out;
    let lanes = <E::Lanes as Value>::LANES;
    const { assert!(<E::Lanes as Value>::LANES <= MAX_LANES) };
    let vector_bytes = lanes * std::mem::size_of::<K::Out>();
    // Streaming stores need 16-byte-aligned pieces: every vector's address is then aligned
    // too (`i` steps by whole vectors of a multiple of 16 bytes).
    let stream = store == Store::Streaming && vector_bytes.is_multiple_of(16) && (out as usize).is_multiple_of(16);
    let mut i = 0;
    let ahead = PREFETCH_BYTES / std::mem::size_of::<E>();
    while i + lanes <= n {
        for p in ins {
            prefetch(p.wrapping_add(i + ahead));
        }
        // SAFETY: i + lanes <= n and the inputs are valid for n reads (caller's contract).
        // Each shared slice lives only for its `load`; `out` may equal an input, but its
        // `&mut` slice is made after the loads and no `&` into an input is live then.
        let args: [E::Lanes; N] =
            std::array::from_fn(|k| E::Lanes::load(unsafe { std::slice::from_raw_parts(ins[k].add(i), lanes) }));
        if stream {
            let mut v = [K::Out::default(); MAX_LANES];
            body.lanes(args, &mut v[..lanes]);
            // SAFETY: out valid for n writes, i + lanes <= n, so `vector_bytes` from
            // out + i; that address is 16-byte aligned (checked above); `v` is a local.
            unsafe { stream_pieces(out.add(i).cast(), v.as_ptr().cast(), vector_bytes) };
        } else {
            // SAFETY: out valid for n writes, i + lanes <= n; no other reference to these
            // elements is live (see above).
            body.lanes(args, unsafe { std::slice::from_raw_parts_mut(out.add(i), lanes) });
        }
        i += lanes;
        no_loop_vectorize();
    }
    let m = n - i;
    if m > 0 {
        let mut buf = [[E::ZERO; MAX_LANES]; N];
        let mut obuf = [K::Out::default(); MAX_LANES];
        let bytes = m * std::mem::size_of::<E>();
        for k in 0..N {
            // SAFETY: i + m == n, inputs valid for n reads; buf holds MAX_LANES >= m values.
            unsafe { copy_short(ins[k].add(i).cast(), buf[k].as_mut_ptr().cast(), bytes) };
        }
        let args: [E::Lanes; N] = std::array::from_fn(|k| E::Lanes::load(&buf[k][..lanes]));
        body.lanes(args, &mut obuf[..lanes]);
        // SAFETY: out valid for n writes, i + m == n; obuf is a local of MAX_LANES >= m.
        unsafe { copy_short(obuf.as_ptr().cast(), out.add(i).cast(), m * std::mem::size_of::<K::Out>()) };
    }
}
