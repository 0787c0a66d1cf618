//! The fused softmax / log_softmax rows of dense f32 and f64 tensors: per row, the
//! maximum, then Σ e^(x − max) (softmax stores e^(x − max) on the way), then the output —
//! the row is read from memory once and stays in cache, and a large output is streamed out
//! while the next row computes, at the CPU's SIMD level (f16 and bf16 rows: `half.rs`).

use super::step::{exp_step, finish};
#[cfg(target_arch = "x86_64")]
use crate::copy::stream::{Avx2Lines, Avx512Lines};
use crate::copy::stream::{Sse2Lines, StreamLine};
use crate::map::{no_loop_vectorize, simd_level, SimdLevel};
use crate::reduce::builtin::{max_by_gt, Compute};
use crate::rows::RowScratch;
use crate::value::{F32x16, F64x4, Lane, Value};

/// A finished row whose output is still to be written: softmax's is `src · c` (`src` the
/// scratch row of e^(x − max), `c` = 1 / Σ), log_softmax's `(src − m) − c` (`src` the input
/// row, `c` = ln Σ).
#[derive(Clone, Copy)]
struct Finished<E> {
    out: *mut E,
    src: *const E,
    m: E,
    c: E,
}

/// A 64-byte aligned line of elements, staged for a streaming store.
#[repr(align(64))]
struct Line<E>([E; 16]);

impl<E: Copy> Finished<E> {
    /// The elements before the row's first 64-byte aligned output line.
    fn head(&self, len: usize) -> usize {
        let size = std::mem::size_of::<E>();
        let to_line = (self.out as usize).wrapping_neg() % 64;
        if to_line.is_multiple_of(size) {
            (to_line / size).min(len)
        } else {
            len
        }
    }

    /// `(head, lines)`: the elements before the first aligned output line, and the whole
    /// aligned lines after them.
    fn layout(&self, len: usize) -> (usize, usize) {
        let head = self.head(len);
        (head, (len - head) / (64 / std::mem::size_of::<E>()))
    }

    /// Writes what is left of the row once its lines `..from` are streamed: lines
    /// `from..`, then the head and tail elements with plain stores.
    ///
    /// # Safety
    /// As [`Self::stream_line`] for every line, [`Self::write_plain`] for the rest.
    #[inline(always)]
    unsafe fn flush<V: Value<Elem = E>, S: StreamLine>(&self, log: bool, len: usize, from: usize)
    where
        E: Default,
        Lane<E>: Value<Elem = E>,
    {
        let per_line = 64 / std::mem::size_of::<E>();
        let (head, lines) = self.layout(len);
        // SAFETY: the caller's contract; every range lies inside the row's `len` elements.
        unsafe {
            for k in from.min(lines)..lines {
                self.stream_line::<V, S>(log, head + k * per_line);
            }
            self.write_plain(log, 0..head);
            self.write_plain(log, head + lines * per_line..len);
        }
    }

    /// Writes elements `range` with plain stores.
    ///
    /// # Safety
    /// `out` and `src` are valid for the row's `len` elements, `range` inside it.
    #[inline(always)]
    unsafe fn write_plain(&self, log: bool, range: std::ops::Range<usize>)
    where
        Lane<E>: Value<Elem = E>,
    {
        for j in range {
            // SAFETY: element j of both rows (the caller's contract).
            unsafe { *self.out.add(j) = finish(log, Lane(*self.src.add(j)), Lane(self.m), Lane(self.c)).0 };
        }
    }

    /// Streams out the aligned line starting at element `at` (vectors of `V`, `V::LANES`
    /// dividing a line's elements).
    ///
    /// # Safety
    /// As [`Self::write_plain`] for `at..at + 64 / size`, and `out + at` is 64-byte aligned.
    #[inline(always)]
    unsafe fn stream_line<V: Value<Elem = E>, S: StreamLine>(&self, log: bool, at: usize)
    where
        E: Default,
    {
        let (n, per_line) = (V::LANES, 64 / std::mem::size_of::<E>());
        let mut line = Line([E::default(); 16]);
        let (m, c) = (V::splat(self.m), V::splat(self.c));
        for q in 0..per_line / n {
            // SAFETY: elements at + q·n .. + n of the source row (inside the line).
            let src = unsafe { std::slice::from_raw_parts(self.src.add(at + q * n), n) };
            finish(log, V::load(src), m, c).store(&mut line.0[q * n..(q + 1) * n]);
        }
        // SAFETY: one whole 64-byte aligned line of the output row, from an aligned line; the
        // driver fences; the caller runs at `S`'s SIMD level.
        unsafe { S::stream_line(self.out.add(at).cast(), line.0.as_ptr().cast()) };
    }
}

/// How far apart two addresses are modulo 4 KiB (0 to 2048).
fn page_distance<A, B>(a: *const A, b: *const B) -> usize {
    let d = (a as usize).wrapping_sub(b as usize) % 4096;
    d.min(4096 - d)
}

/// `rows` consecutive dense rows, vectors of `V` and one-lane tails. Per row: the maximum,
/// then e^(x − max) into a scratch row (summed on the way), then the output. Small outputs
/// are written by a plain scaling pass. Outputs larger than the cache are streamed
/// (non-temporal stores: no read-for-ownership of their lines), and a row's lines go out
/// during the *next* row's e^x pass — the stores drain to memory while the CPU computes
/// instead of after it — the last row's after the loop.
///
/// # Safety
/// As [`crate::rows::RowFn`].
#[inline(always)]
unsafe fn rows<V: Value, S: StreamLine>(
    out: *mut V::Elem,
    x: *const V::Elem,
    len: usize,
    count: usize,
    sc: RowScratch,
    log: bool,
) where
    Lane<V::Elem>: Value<Elem = V::Elem>,
    V::Elem: Compute,
{
    let n = V::LANES;
    let per_line = 64 / std::mem::size_of::<V::Elem>();
    // Streaming by whole vectors of a line (every SIMD value here: 16 f32 or 4 f64).
    let stream = sc.stream && per_line >= n && per_line.is_multiple_of(n);
    let body = len - len % n;
    let mut pending: Option<Finished<V::Elem>> = None;
    for r in 0..count {
        let (x, out) = (x.wrapping_add(r * len), out.wrapping_add(r * len));
        // Streaming alternates the scratch rows (one is being written out); otherwise the
        // one farther from this row's input and output modulo 4 KiB (a load of one element
        // right after a store to another 4 KiB apart waits for the store: rows of a power
        // of two bytes hit this on every row).
        let pick = if stream {
            r % 2
        } else {
            let apart = |k: usize| page_distance(sc.scratch[k], x).min(page_distance(sc.scratch[k], out));
            usize::from(apart(1) > apart(0))
        };
        // SAFETY: the caller's contract: `count` rows of `len` elements in each of input
        // and output, two scratch rows; all disjoint.
        let (x, tmp) = unsafe {
            (
                std::slice::from_raw_parts(x, len),
                std::slice::from_raw_parts_mut(sc.scratch[pick].cast::<V::Elem>(), len),
            )
        };
        // The maximum by `>` over 16 independent lanes; no NaN or ±0 rule is needed: a NaN
        // anywhere in the row makes Σ e^(x − max) NaN, so every output NaN, whatever
        // maximum was picked (and a row of −inf gives NaN either way).
        let mx = max_by_gt(x);
        let m = Lane(mx);
        let mv = V::splat(mx);
        // The previous row's aligned lines, one per vector of this pass.
        let (head, lines) = pending.map_or((0, 0), |p| p.layout(len));
        // The e^x pass; with a row pending, vector k also streams out line k of it. (Two
        // whole loops: a loop continuing another's sum had LLVM add the lanes one by one.)
        let iters = body / n;
        let mut vs = V::zero();
        if let Some(p) = pending {
            for k in 0..iters {
                // Each iteration is already one vector: keep LLVM from widening across them.
                no_loop_vectorize();
                vs = exp_step(x, tmp, k, mv, vs, log, x.as_ptr().wrapping_add(len));
                if k < lines {
                    // SAFETY: line k of the previous row (aligned, inside it).
                    unsafe { p.stream_line::<V, S>(log, head + k * per_line) };
                }
            }
        } else {
            for k in 0..iters {
                no_loop_vectorize();
                vs = exp_step(x, tmp, k, mv, vs, log, x.as_ptr().wrapping_add(len));
            }
        }
        if let Some(p) = pending.take() {
            // SAFETY: the previous row's lines the pass above did not reach, its head and
            // its tail.
            unsafe { p.flush::<V, S>(log, len, iters) };
        }
        let mut lanes = [V::Elem::default(); 16];
        vs.store(&mut lanes[..n]);
        let mut s = Lane::<V::Elem>::zero();
        for &l in &lanes[..n] {
            s = s + Lane(l);
        }
        for (&xk, o) in x[body..].iter().zip(&mut tmp[body..]) {
            let e = (Lane(xk) - m).exp_nonpositive();
            if !log {
                *o = e.0;
            }
            s = s + e;
        }
        let row = Finished {
            out,
            src: if log { x.as_ptr() } else { tmp.as_ptr() },
            m: mx,
            c: if log { s.ln().0 } else { (Lane::<V::Elem>::one() / s).0 },
        };
        if stream {
            pending = Some(row);
            continue;
        }
        let (mv, cv) = (V::splat(row.m), V::splat(row.c));
        // SAFETY: the output row holds `len` elements (the caller's contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(out, len) };
        for (k, o) in dst[..body].chunks_exact_mut(n).enumerate() {
            no_loop_vectorize();
            // SAFETY: elements k·n .. + n of the source row.
            let src = unsafe { std::slice::from_raw_parts(row.src.add(k * n), n) };
            finish(log, V::load(src), mv, cv).store(o);
        }
        // SAFETY: the row's tail.
        unsafe { row.write_plain(log, body..len) };
    }
    if let Some(p) = pending {
        // SAFETY: the last row, all of it.
        unsafe { p.flush::<V, S>(log, len, 0) };
    }
}

/// The row functions per dtype and mode, at the CPU's SIMD level.
macro_rules! row_fns {
    ($($name:ident: $v:ty, $e:ty, $log:expr;)*) => { $(
        /// `count` rows (see [`rows`]).
        ///
        /// # Safety
        /// As [`crate::rows::RowFn`].
        pub(super) unsafe fn $name(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn avx512(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch) {
                // SAFETY: forwarded.
                unsafe { rows::<$v, Avx512Lines>(out.cast::<$e>(), x.cast::<$e>(), len, count, r, $log) }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(out: *mut u8, x: *const u8, len: usize, count: usize, r: RowScratch) {
                // SAFETY: forwarded.
                unsafe { rows::<$v, Avx2Lines>(out.cast::<$e>(), x.cast::<$e>(), len, count, r, $log) }
            }
            match simd_level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `simd_level` never exceeds what the CPU has; forwarded.
                SimdLevel::Avx512 => unsafe { avx512(out, x, len, count, r) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above.
                SimdLevel::Avx2 => unsafe { avx2(out, x, len, count, r) },
                // SAFETY: forwarded.
                _ => unsafe { rows::<$v, Sse2Lines>(out.cast::<$e>(), x.cast::<$e>(), len, count, r, $log) },
            }
        }
    )* };
}

row_fns! {
    softmax_f32: F32x16, f32, false;
    softmax_f64: F64x4, f64, false;
    log_softmax_f32: F32x16, f32, true;
    log_softmax_f64: F64x4, f64, true;
}
