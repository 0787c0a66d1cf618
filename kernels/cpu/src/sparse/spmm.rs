//! `sparse_csr_spmm`: CSR `[m, k]` × dense `[k, n]` → dense `[m, n]` (spmv is `n = 1`).
//!
//! Rows are split into chunks of about equal *work* (stored entries plus rows, found by
//! binary searches over `crow`), not equal row counts, so a few dense rows do not leave one
//! thread with most of the matrix; chunks run on [`for_each_index`]. Each output row is
//! summed in the order of its stored entries into a row of accumulators (f16/bf16: f32)
//! and written once: for `n = 1` a scalar dot product over the row's entries, for `n > 1`
//! an axpy of each entry's dense row into the accumulators (contiguous, vectorised at the
//! [`simd_level`]: the AVX2/AVX-512 copies compute the same bits, there are no fused
//! multiply-adds). Nothing in the components is trusted: `crow` must rise from 0 to nnz
//! and every column must be in `0..k`, else the call is an `Err` (every read is
//! bounds-checked; a row of a bad chunk may be left unwritten, the output is then garbage
//! but the call failed).

use super::{elems, elems_mut, input, output, Shared, KIND};
use crate::parallel::{for_each_index, GRAIN};
use crate::simd_level::{level_copies, simd_level, SimdLevel};
use std::ops::{Add, AddAssign, Mul};
use std::sync::atomic::{AtomicBool, Ordering};
use tensor_core::registry::sparse::{ComponentKernel, CSR_SPMM};
use tensor_core::registry::{KernelRow, PreparedCall};
use tensor_core::{DType, DeviceKind, Element, Error, Layout, Result};

/// A float element of a sparse product and its accumulator type.
pub(crate) trait MmElem: Element {
    /// The type sums are kept in (f32 for f16/bf16).
    type Acc: Copy + Default + Add<Output = Self::Acc> + AddAssign + Mul<Output = Self::Acc> + Send + Sync;
    /// `self` as an accumulator.
    fn widen(self) -> Self::Acc;
    /// An accumulator rounded to `Self`.
    fn narrow(a: Self::Acc) -> Self;
}

impl MmElem for f32 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    #[inline(always)]
    fn narrow(a: f32) -> f32 {
        a
    }
}
impl MmElem for f64 {
    type Acc = f64;
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(a: f64) -> f64 {
        a
    }
}
// The narrow floats sum in f32 and round once per output element.
macro_rules! f32_acc {
    ($($t:ty),*) => { $(
        impl MmElem for $t {
            type Acc = f32;
            #[inline(always)]
            fn widen(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn narrow(a: f32) -> $t {
                <$t>::from_f32(a)
            }
        }
    )* };
}
f32_acc!(half::f16, half::bf16, tensor_core::F8E4M3, tensor_core::F8E5M2);

/// An index type of CSR components: I32 or I64 (PyTorch's choice; scipy's default is
/// int32, 12 bytes a stored f32 entry instead of 16).
pub(crate) trait CsrIndex: Element + Into<i64> {}
impl CsrIndex for i32 {}
impl CsrIndex for i64 {}

/// One product's operands, shared by the workers.
struct Mm<'a, T, I> {
    crow: &'a [I],
    col: &'a [I],
    vals: &'a [T],
    dense: &'a [T],
    n: usize,
    out: Shared<T>,
}

/// Output columns summed at once, in registers (a tile of the `n` columns).
const TILE: usize = 16;
/// How many entries ahead the dense rows (the vector's elements) are prefetched: the
/// gathers are random, so the hardware prefetchers cannot guess them, and a row's gathers
/// alone do not keep enough misses in flight (measured: spmm n = 16 about 2× faster).
const AHEAD: usize = 16;
/// How many entries ahead spmv prefetches the one vector element an entry needs, into L2
/// ([`crate::map::prefetch_l2`]): with `n = 1` each entry is one random read, so the
/// prefetches must run far ahead and must not hold L1's few miss buffers (measured on a
/// 2^20-row matrix, 16 entries a row, vector in L3: 16/32/64/128 entries ahead into L2
/// 12-25 % faster than 16 into L1; 512 ahead a little slower again).
const SPMV_AHEAD: usize = 32;
/// How many entries ahead spmv asks for its matrix stream (columns and values) with the
/// non-temporal hint ([`crate::map::prefetch_nta`]), so that the stream, read once, evicts
/// less of the vector from L2 and L3 (measured 5-9 % faster at 256; 1024 and 4096 less).
const SPMV_STREAM_AHEAD: usize = 256;

/// Asks for the bytes of entries `a..b` of `s` from [`SPMV_STREAM_AHEAD`] entries on, a
/// line at a time, with the non-temporal hint (a hint: any address is allowed).
#[inline(always)]
fn prefetch_stream<E>(s: &[E], a: usize, b: usize) {
    let start = s.as_ptr().wrapping_add(a + SPMV_STREAM_AHEAD) as *const u8;
    crate::map::prefetch_lines_with(start, (b - a) * std::mem::size_of::<E>(), crate::map::prefetch_nta::<u8>);
}

/// Asks for the dense row of column `col[j]` (a hint: any address, even of a corrupt
/// column, is allowed): into L1 when it is one cache line, into L2 when it is more. With
/// [`AHEAD`] rows of several lines in flight, L1 prefetches would need more miss buffers
/// than L1 has (measured, n = 64 f32: 126-141 → 70-100 ms); a one-line row (n = 16 f32)
/// was 1.5-2.5× slower into L2 with i64 columns, unchanged with i32.
#[inline(always)]
fn prefetch_row<T, I: CsrIndex>(mm: &Mm<'_, T, I>, j: usize) {
    if let Some(&c) = mm.col.get(j) {
        let row = mm.dense.as_ptr().wrapping_add((c.into() as usize).wrapping_mul(mm.n)) as *const u8;
        let bytes = mm.n * std::mem::size_of::<T>();
        if bytes <= 64 {
            crate::map::prefetch(row);
        } else {
            crate::map::prefetch_lines_with(row, bytes, crate::map::prefetch_l2::<u8>);
        }
    }
}

/// Writes output rows `lo..hi`; `false` when a row pointer or a column is invalid (the
/// remaining rows of the range are then left unwritten).
///
/// # Safety
/// `mm.out` points to `m * n` writable elements, `lo <= hi <= m`, and no other thread
/// writes rows `lo..hi` while this runs.
#[inline(always)]
unsafe fn rows_generic<T: MmElem, I: CsrIndex>(mm: &Mm<'_, T, I>, lo: usize, hi: usize, acc: &mut [T::Acc]) -> bool {
    let (nnz, n) = (mm.vals.len(), mm.n);
    for r in lo..hi {
        let (a, b): (i64, i64) = (mm.crow[r].into(), mm.crow[r + 1].into());
        if a < 0 || a > b || b as u64 > nnz as u64 {
            return false;
        }
        let (a, b) = (a as usize, b as usize);
        let (cols, vals) = (&mm.col[a..b], &mm.vals[a..b]);
        if n == 1 {
            prefetch_stream(mm.col, a, b);
            prefetch_stream(mm.vals, a, b);
            let (x, mut s) = (mm.dense, T::Acc::default());
            for (i, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                // One element to ask for (no loop over lines as for a dense row: measured
                // 10-35% faster than `prefetch_row` here).
                if let Some(&ahead) = mm.col.get(a + i + SPMV_AHEAD) {
                    crate::map::prefetch_l2(x.as_ptr().wrapping_add(ahead.into() as usize));
                }
                // `c as usize` of a negative column is huge: `get` refuses it too.
                let Some(&xc) = x.get(c.into() as usize) else { return false };
                s += v.widen() * xc.widen();
            }
            // SAFETY: `r < m` and `n = 1`: inside the output, this worker's row.
            unsafe { *mm.out.at(r) = T::narrow(s) };
            continue;
        }
        // Whole tiles of TILE columns, each summed in registers.
        let mut t0 = 0;
        while t0 + TILE <= n {
            let mut tile = [T::Acc::default(); TILE];
            for (i, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                if t0 == 0 {
                    prefetch_row(mm, a + i + AHEAD);
                }
                let c: i64 = c.into();
                let start = (c as usize).wrapping_mul(n).wrapping_add(t0);
                let Some(src) = (c >= 0 && (c as u64) < (mm.dense.len() / n) as u64)
                    .then(|| mm.dense.get(start..start + TILE))
                    .flatten()
                else {
                    return false;
                };
                let v = v.widen();
                for (o, &x) in tile.iter_mut().zip(src) {
                    *o += v * x.widen();
                }
            }
            // SAFETY: columns `t0..t0 + TILE <= n` of row `r < m` of the `[m, n]` output,
            // written by this worker only.
            let dst = unsafe { std::slice::from_raw_parts_mut(mm.out.at(r * n + t0), TILE) };
            for (o, &s) in dst.iter_mut().zip(&tile) {
                *o = T::narrow(s);
            }
            t0 += TILE;
        }
        if t0 == n {
            continue;
        }
        // The remaining columns (fewer than TILE), in `acc`.
        let rest = &mut acc[..n - t0];
        rest.fill(T::Acc::default());
        for (i, (&c, &v)) in cols.iter().zip(vals).enumerate() {
            if t0 == 0 {
                prefetch_row(mm, a + i + AHEAD);
            }
            let c: i64 = c.into();
            let start = (c as usize).wrapping_mul(n).wrapping_add(t0);
            let Some(src) = (c >= 0 && (c as u64) < (mm.dense.len() / n) as u64)
                .then(|| mm.dense.get(start..start + rest.len()))
                .flatten()
            else {
                return false;
            };
            let v = v.widen();
            for (o, &x) in rest.iter_mut().zip(src) {
                *o += v * x.widen();
            }
        }
        // SAFETY: columns `t0..n` of row `r < m` of the output, this worker's row.
        let dst = unsafe { std::slice::from_raw_parts_mut(mm.out.at(r * n + t0), n - t0) };
        for (o, &s) in dst.iter_mut().zip(rest.iter()) {
            *o = T::narrow(s);
        }
    }
    true
}

level_copies!(unsafe fn rows_avx2, rows_avx512 [T: MmElem, I: CsrIndex]
    (mm: &Mm<'_, T, I>, lo: usize, hi: usize, acc: &mut [T::Acc]) -> bool
    => rows_generic::<T, I>; "As [`rows_generic`]");

/// [`rows_generic`] in the copy of the current [`simd_level`].
///
/// # Safety
/// As [`rows_generic`].
unsafe fn rows<T: MmElem, I: CsrIndex>(mm: &Mm<'_, T, I>, lo: usize, hi: usize, acc: &mut [T::Acc]) -> bool {
    match simd_level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `simd_level` never exceeds the CPU's level, so it has AVX-512 F/BW/DQ/VL,
        // AVX2 and FMA; the rest of the contract is forwarded.
        SimdLevel::Avx512 => unsafe { rows_avx512::<T, I>(mm, lo, hi, acc) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, the CPU has AVX2 and FMA.
        SimdLevel::Avx2 => unsafe { rows_avx2::<T, I>(mm, lo, hi, acc) },
        // SAFETY: forwarded.
        _ => unsafe { rows_generic::<T, I>(mm, lo, hi, acc) },
    }
}

/// The first row `r` in `0..=m` whose work before it (`crow[r] * n + r`) reaches `target`
/// (a binary search; on a corrupt, non-monotone `crow` some row in range).
fn split_row<I: CsrIndex>(crow: &[I], n: usize, target: usize) -> usize {
    let (mut lo, mut hi) = (0, crow.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let work = (crow[mid].into().max(0) as usize).saturating_mul(n).saturating_add(mid);
        if work < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `sparse_csr_spmm` (see the module docs).
///
/// # Safety
/// The `ComponentFn` contract.
pub(super) unsafe fn spmm<T: MmElem>(call: &PreparedCall<'_>) -> Result<()> {
    let (op, index) = (call.op.name, input(call, 0)?.dtype);
    match index {
        // SAFETY: forwarded.
        DType::I32 => unsafe { spmm_indexed::<T, i32>(call) },
        // SAFETY: forwarded.
        DType::I64 => unsafe { spmm_indexed::<T, i64>(call) },
        _ => Err(Error::DType { op, msg: format!("crow_indices and col_indices must be i32 or i64, got {index}") }),
    }
}

/// [`spmm`] with index components of type `I`.
///
/// # Safety
/// The `ComponentFn` contract.
unsafe fn spmm_indexed<T: MmElem, I: CsrIndex>(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let (cr, cl, vl, de, out) = (input(call, 0)?, input(call, 1)?, input(call, 2)?, input(call, 3)?, output(call)?);
    // SAFETY: the ComponentFn contract; the output is disjoint from the inputs.
    let (crow, col, vals, dense, res) = unsafe {
        (elems::<I>(op, cr)?, elems::<I>(op, cl)?, elems::<T>(op, vl)?, elems::<T>(op, de)?, elems_mut::<T>(op, out)?)
    };
    let shapes_ok = cr.shape.len() == 1
        && cl.shape.len() == 1
        && vl.shape.len() == 1
        && de.shape.len() == 2
        && out.shape.len() == 2
        && cl.shape[0] == vl.shape[0]
        && cr.shape[0] == out.shape[0] + 1
        && de.shape[1] == out.shape[1];
    if !shapes_ok {
        return Err(Error::shape(
            op,
            format!(
                "needs crow [m + 1], col [nnz], values [nnz], dense [k, n], out [m, n]; got {:?}, {:?}, {:?}, {:?}, {:?}",
                cr.shape, cl.shape, vl.shape, de.shape, out.shape
            ),
        ));
    }
    let (m, n, nnz) = (out.shape[0], out.shape[1], vals.len());
    let bad_crow = || Error::invalid(op, format!("crow_indices must rise from 0 to nnz = {nnz}"));
    if crow[0].into() != 0 || crow[m].into() != nnz as i64 {
        return Err(bad_crow());
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let mm = Mm { crow, col, vals, dense, n, out: Shared(res.as_mut_ptr()) };
    let work = nnz.saturating_mul(n).saturating_add(m);
    let chunks = (work / GRAIN).clamp(1, rayon::current_num_threads() * 4);
    // Row bounds of the chunks, forced to rise from 0 to m (a corrupt `crow` could make
    // the searches disagree), so the chunks' row ranges are disjoint and cover `0..m`.
    let mut bounds: Vec<usize> = (0..=chunks).map(|c| split_row(crow, n, c * (work / chunks)).min(m)).collect();
    bounds[0] = 0;
    bounds[chunks] = m;
    for c in 1..=chunks {
        bounds[c] = bounds[c].max(bounds[c - 1]);
    }
    let failed = AtomicBool::new(false);
    for_each_index(chunks, &|c| {
        let (lo, hi) = (bounds[c], bounds[c + 1]);
        if lo == hi {
            return;
        }
        let mut acc = vec![T::Acc::default(); if n > 1 { n } else { 0 }];
        // SAFETY: the output holds `m * n` elements and `lo < hi <= m`; the bounds rise,
        // so chunk `c`'s rows `lo..hi` are no other chunk's.
        if !unsafe { rows::<T, I>(&mm, lo, hi, &mut acc) } {
            failed.store(true, Ordering::Relaxed);
        }
    });
    if failed.into_inner() {
        return Err(Error::out_of_bounds(
            op,
            format!("crow_indices must rise from 0 to nnz = {nnz} and every col index must be in 0..{}", de.shape[0]),
        ));
    }
    Ok(())
}

macro_rules! spmm_rows {
    ($($d:ident),*) => { $(
        tensor_core::inventory::submit! {
            KernelRow {
                op: &CSR_SPMM,
                device: DeviceKind::Cpu,
                layout: Layout::SparseCsr,
                dtype: DType::$d,
                kernel: &ComponentKernel { kind: KIND, func: spmm::<tensor_core::ElemOf<{ DType::$d as u8 }>> },
            }
        }
    )* };
}
spmm_rows!(F8E4M3, F8E5M2, F16, BF16, F32, F64);

#[cfg(test)]
mod tests {
    //! The kernel on corrupt components (which the constructors never make): each is an
    //! `Err`, never a read outside a component.
    use super::spmm;
    use tensor_core::registry::sparse::CSR_SPMM;
    use tensor_core::registry::{CallExtra, PreparedCall, RawTensor};
    use tensor_core::{Device, Result};

    fn raw<'a, T: tensor_core::Element>(v: &'a mut [T], shape: &'a [usize], strides: &'a [isize]) -> RawTensor<'a> {
        RawTensor { ptr: v.as_mut_ptr() as *mut u8, dtype: T::DTYPE, shape, strides, device: Device::Cpu }
    }

    /// `crow`/`col` (values all 1) times a `[k, n]` operand of ones; the output's values.
    fn run(mut crow: Vec<i64>, mut col: Vec<i64>, k: usize, n: usize) -> Result<Vec<f32>> {
        let (m, nnz) = (crow.len() - 1, col.len());
        let (mut vals, mut dense, mut out) = (vec![1f32; nnz], vec![1f32; k * n], vec![0f32; m * n]);
        let (s_crow, s_col, s_dense, s_out) = ([m + 1], [nnz], [k, n], [m, n]);
        let (t1, t2n) = ([1isize], [n as isize, 1]);
        let inputs = [
            raw(&mut crow, &s_crow, &t1),
            raw(&mut col, &s_col, &t1),
            raw(&mut vals, &s_col, &t1),
            raw(&mut dense, &s_dense, &t2n),
        ];
        let outputs = [raw(&mut out, &s_out, &t2n)];
        let call =
            PreparedCall { op: &CSR_SPMM, outputs: &outputs, inputs: &inputs, params: &[], extra: CallExtra::None };
        // SAFETY: every operand is a live, contiguous Vec of its shape and dtype, the output
        // is its own Vec; nothing else touches them during the call.
        unsafe { spmm::<f32>(&call) }?;
        Ok(out)
    }

    #[test]
    fn valid_components_compute() {
        assert_eq!(run(vec![0, 2, 2, 3], vec![0, 2, 1], 3, 1).unwrap(), vec![2., 0., 1.]);
        assert_eq!(run(vec![0, 2, 3], vec![0, 2, 1], 3, 2).unwrap(), vec![2., 2., 1., 1.]);
    }

    #[test]
    fn corrupt_components_are_errors() {
        for n in [1, 3] {
            // a column equal to k, a negative column
            assert!(run(vec![0, 1], vec![3], 3, n).is_err());
            assert!(run(vec![0, 1], vec![-1], 3, n).is_err());
            // crow not from 0, not ending at nnz, falling, negative, past nnz in the middle
            assert!(run(vec![1, 1], vec![0], 3, n).is_err());
            assert!(run(vec![0, 0], vec![0], 3, n).is_err());
            assert!(run(vec![0, 1, 0, 1], vec![0], 3, n).is_err());
            assert!(run(vec![0, -5, 1], vec![0], 3, n).is_err());
            assert!(run(vec![0, 9, 1], vec![0], 3, n).is_err());
        }
        // a large product (split over threads) with one bad column in the middle
        let (m, per) = (1 << 14, 8);
        let crow: Vec<i64> = (0..=m).map(|r| (r * per) as i64).collect();
        let mut col: Vec<i64> = (0..m * per).map(|j| (j % 64) as i64).collect();
        assert!(run(crow.clone(), col.clone(), 64, 4).is_ok());
        col[m * per / 2 + 3] = 64;
        assert!(run(crow.clone(), col.clone(), 64, 1).is_err());
        assert!(run(crow, col, 64, 4).is_err());
    }
}
