//! The fused softmax / log_softmax of a dense tensor along its last dim: per row, the
//! maximum, then Σ e^(x − max) (softmax stores e^(x − max) on the way), then one scaling
//! pass — the row is read from memory once and stays in cache. A CPU row kernel
//! (`tensor_kernels_cpu::rows`), f32 and f64, at the CPU's SIMD level.

use tensor_core::registry::{KernelRow, OpSpec, RowCache};
use tensor_core::{DType, DeviceKind, Layout};
use tensor_kernels_cpu::copy::stream::copy_bytes_nt_unfenced;
use tensor_kernels_cpu::map::{no_loop_vectorize, prefetch, simd_level, SimdLevel};
use tensor_kernels_cpu::rows::{RowKernel, RowScratch};
use tensor_kernels_cpu::value::{F32x16, F64x4, Lane, Value};

/// The fused row softmax (param: the row length).
pub static SOFTMAX_ROWS: OpSpec = OpSpec {
    name: "softmax_rows",
    arity: 1,
    params: &["row_len"],
    bool_output: false,
    float_only: true,
    doc: "softmax of dense rows, fused",
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// The fused row log_softmax (param: the row length).
pub static LOG_SOFTMAX_ROWS: OpSpec = OpSpec {
    name: "log_softmax_rows",
    arity: 1,
    params: &["row_len"],
    bool_output: false,
    float_only: true,
    doc: "log_softmax of dense rows, fused",
    defined_at: concat!(module_path!(), " (", file!(), ":", line!(), ")"),
    rows: RowCache::new(),
};

/// One row, vectors of `V` and one-lane tails: the maximum, then e^(x − max) into the
/// scratch row (summed on the way), then the scaled row written to `out` once — with
/// streaming stores when the output is larger than the cache (no read-for-ownership of the
/// output's lines), else straight from the scaling loop.
///
/// # Safety
/// As [`tensor_kernels_cpu::rows::RowFn`] (input, output and scratch rows disjoint).
#[inline(always)]
unsafe fn row<V: Value>(out: *mut V::Elem, x: *const V::Elem, len: usize, row: RowScratch, log: bool)
where
    Lane<V::Elem>: Value<Elem = V::Elem>,
{
    // SAFETY: the caller's contract: three disjoint rows of `len` elements.
    let (x, out, tmp) = unsafe {
        (
            std::slice::from_raw_parts(x, len),
            std::slice::from_raw_parts_mut(out, len),
            std::slice::from_raw_parts_mut(row.scratch.cast::<V::Elem>(), len),
        )
    };
    let n = V::LANES;
    let body = len - len % n;
    let mut vm = V::splat(x[0]);
    for c in x[..body].chunks_exact(n) {
        no_loop_vectorize();
        vm = vm.max(V::load(c));
    }
    let mut lanes = [V::Elem::default(); 16];
    vm.store(&mut lanes[..n]);
    let mut m = Lane(x[0]);
    for &l in lanes[..n].iter().chain(&x[body..]) {
        m = m.max(Lane(l));
    }
    let mv = V::splat(m.0);
    let mut vs = V::zero();
    for (k, (c, o)) in x[..body].chunks_exact(n).zip(tmp[..body].chunks_exact_mut(n)).enumerate() {
        // Each iteration is already one vector: keep LLVM from widening across them
        // (it would turn the lane arrays into gathers).
        no_loop_vectorize();
        // The next row (dense rows follow each other) streams in while this one computes:
        // its maximum pass then reads from cache, not memory.
        prefetch(x.as_ptr().wrapping_add(len + k * n));
        let e = (V::load(c) - mv).exp();
        if !log {
            e.store(o);
        }
        vs = vs + e;
    }
    vs.store(&mut lanes[..n]);
    let mut s = Lane::<V::Elem>::zero();
    for &l in &lanes[..n] {
        s = s + Lane(l);
    }
    for (&xk, o) in x[body..].iter().zip(&mut tmp[body..]) {
        let e = (Lane(xk) - m).exp();
        if !log {
            *o = e.0;
        }
        s = s + e;
    }
    // The finished row goes to the scratch when it is to be streamed, else to `out`.
    let dst: &mut [V::Elem] = if row.stream { &mut *tmp } else { &mut *out };
    if log {
        let ln_s = s.ln();
        let ls = V::splat(ln_s.0);
        for (c, o) in x[..body].chunks_exact(n).zip(dst[..body].chunks_exact_mut(n)) {
            no_loop_vectorize();
            ((V::load(c) - mv) - ls).store(o);
        }
        for (&xk, o) in x[body..].iter().zip(&mut dst[body..]) {
            *o = ((Lane(xk) - m) - ln_s).0;
        }
    } else {
        let inv = V::one() / V::splat(s.0);
        if row.stream {
            for o in tmp[..body].chunks_exact_mut(n) {
                no_loop_vectorize();
                (V::load(o) * inv).store(o);
            }
        } else {
            for (e, o) in tmp[..body].chunks_exact(n).zip(out[..body].chunks_exact_mut(n)) {
                no_loop_vectorize();
                (V::load(e) * inv).store(o);
            }
        }
        for k in body..len {
            let v = (Lane(tmp[k]) / s).0;
            if row.stream {
                tmp[k] = v;
            } else {
                out[k] = v;
            }
        }
    }
    if row.stream {
        // SAFETY: `tmp` and `out` are disjoint rows of `len` elements; the driver fences.
        unsafe {
            copy_bytes_nt_unfenced(out.as_mut_ptr().cast(), tmp.as_ptr().cast(), len * std::mem::size_of::<V::Elem>())
        };
    }
}

/// The row functions per dtype and mode, at the CPU's SIMD level.
macro_rules! row_fns {
    ($($name:ident: $v:ty, $e:ty, $log:expr;)*) => { $(
        /// One row (see the module docs).
        ///
        /// # Safety
        /// As [`tensor_kernels_cpu::rows::RowFn`].
        unsafe fn $name(out: *mut u8, x: *const u8, len: usize, r: RowScratch) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn avx512(out: *mut u8, x: *const u8, len: usize, r: RowScratch) {
                // SAFETY: forwarded.
                unsafe { row::<$v>(out.cast::<$e>(), x.cast::<$e>(), len, r, $log) }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(out: *mut u8, x: *const u8, len: usize, r: RowScratch) {
                // SAFETY: forwarded.
                unsafe { row::<$v>(out.cast::<$e>(), x.cast::<$e>(), len, r, $log) }
            }
            match simd_level() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `simd_level` never exceeds what the CPU has; forwarded.
                SimdLevel::Avx512 => unsafe { avx512(out, x, len, r) },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above.
                SimdLevel::Avx2 => unsafe { avx2(out, x, len, r) },
                // SAFETY: forwarded.
                _ => unsafe { row::<$v>(out.cast::<$e>(), x.cast::<$e>(), len, r, $log) },
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

macro_rules! rows {
    ($($spec:ident, $dt:ident, $f:ident;)*) => { $(
        inventory::submit! {
            KernelRow {
                op: &$spec,
                device: DeviceKind::Cpu,
                layout: Layout::Strided,
                dtype: DType::$dt,
                kernel: &RowKernel { dtype: DType::$dt, func: $f },
            }
        }
    )* };
}

rows! {
    SOFTMAX_ROWS, F32, softmax_f32;
    SOFTMAX_ROWS, F64, softmax_f64;
    LOG_SOFTMAX_ROWS, F32, log_softmax_f32;
    LOG_SOFTMAX_ROWS, F64, log_softmax_f64;
}
