//! The CPU kernels of the sparse layouts: the steps of `to_dense`, `coalesce`, `to_sparse`,
//! the COO ↔ CSR conversions, the pattern lookups and gathers of binary ops, and the
//! per-segment max/min and softmax (`tensor_core::registry::sparse` documents each), as
//! [`ComponentKernel`] rows keyed by `Layout::SparseCoo` / `Layout::SparseCsr`.
//!
//! Every operand is a contiguous component; each kernel checks the dtype and contiguity
//! of what it is given and bounds-checks every index it writes through, so a bad index is
//! an `Err`, never a write outside the output. Work splits over the crate's parallel
//! helpers (`parallel::for_each_chunk`/`for_each_index`, never `rayon::join` while locks
//! are held: see the crate docs); the sort is a parallel stable merge sort (`sort.rs`).

mod coo;
mod from_dense;
mod lookup;
mod radix;
mod segment;
mod sort;
mod spmm;

use tensor_core::registry::sparse::{
    ComponentKernel, COO_LOOKUP, COO_SEGMENTS, COO_SEGMENT_SUM, COO_SORT, COO_TO_DENSE, COO_UNIQUE_INDICES,
    CROW_TO_ROWS, DENSE_COUNT, DENSE_GATHER, DENSE_INDICES, DENSE_VALUES, GATHER_ROWS, ROWS_TO_CROW, SEGMENT_EXTREME,
    SEGMENT_SOFTMAX,
};
use tensor_core::registry::{KernelRow, PreparedCall, RawTensor};
use tensor_core::{DType, DeviceKind, Element, Error, Layout, Result};

/// Adding two elements of a dtype (duplicates sum): wrapping for integers, `or` for bool,
/// f16/bf16 through f32.
pub(crate) trait SparseElem: Element {
    /// `self + other`.
    fn add(self, other: Self) -> Self;
}

impl SparseElem for bool {
    fn add(self, other: bool) -> bool {
        self | other
    }
}
macro_rules! wrapping_add {
    ($($t:ty),*) => { $(impl SparseElem for $t { fn add(self, other: $t) -> $t { self.wrapping_add(other) } })* };
}
wrapping_add!(u8, i8, i16, i32, i64);
impl SparseElem for f32 {
    fn add(self, other: f32) -> f32 {
        self + other
    }
}
impl SparseElem for f64 {
    fn add(self, other: f64) -> f64 {
        self + other
    }
}
// The narrow floats add in f32 and round once, as their dense sums do.
macro_rules! f32_add {
    ($($t:ty),*) => { $(impl SparseElem for $t { fn add(self, other: $t) -> $t { <$t>::from_f32(self.to_f32() + other.to_f32()) } })* };
}
f32_add!(half::f16, half::bf16, tensor_core::F8E4M3, tensor_core::F8E5M2);

/// The elements of `raw` (of dtype `T`, contiguous) as a slice.
///
/// # Safety
/// `raw` is an operand of a call satisfying the `ComponentFn` contract, and nothing
/// writes its elements while the slice lives.
unsafe fn elems<'a, T: Element>(op: &'static str, raw: &RawTensor<'a>) -> Result<&'a [T]> {
    let n = checked_len::<T>(op, raw)?;
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: `raw` is locked for the call and its `n` contiguous elements are in bounds
    // (the caller's contract); it is non-null and aligned for `T` (a live allocation of
    // dtype `T`).
    Ok(unsafe { std::slice::from_raw_parts(raw.ptr as *const T, n) })
}

/// The output's elements (of dtype `T`, contiguous) as a mutable slice.
///
/// # Safety
/// As [`elems`], and `raw` is the call's output: locked exclusively and disjoint from every
/// input, so this is the only access to its elements.
unsafe fn elems_mut<'a, T: Element>(op: &'static str, raw: &RawTensor<'a>) -> Result<&'a mut [T]> {
    let n = checked_len::<T>(op, raw)?;
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as in `elems`; exclusive by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(raw.ptr as *mut T, n) })
}

/// `raw`'s element count, checking its dtype is `T`'s and that it is contiguous.
fn checked_len<T: Element>(op: &'static str, raw: &RawTensor<'_>) -> Result<usize> {
    if raw.dtype != T::DTYPE {
        return Err(Error::DTypeMismatch { op, expected: T::DTYPE, got: raw.dtype });
    }
    if !tensor_core::shape::is_contiguous(raw.shape, raw.strides) {
        return Err(Error::invalid(op, format!("a component must be contiguous, got strides {:?}", raw.strides)));
    }
    Ok(raw.shape.iter().product())
}

/// `call`'s input `i`, or an `Err` naming the step when it has fewer.
fn input<'a>(call: &PreparedCall<'a>, i: usize) -> Result<&'a RawTensor<'a>> {
    call.inputs.get(i).ok_or_else(|| Error::invalid(call.op.name, format!("needs input {i}")))
}

/// `call`'s one output.
fn output<'a>(call: &PreparedCall<'a>) -> Result<&'a RawTensor<'a>> {
    call.outputs.first().ok_or_else(|| Error::invalid(call.op.name, "needs an output"))
}

/// A pointer shared by parallel workers that write disjoint elements through it.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
impl<T> Shared<T> {
    /// The address `i` elements on (a method, so closures capture the whole `Shared`, which
    /// is `Sync`, not its raw pointer field).
    fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

// SAFETY: workers only write elements no other worker touches (each use says why), and the
// call outlives them (`for_each_chunk`/`for_each_index` return when all have finished).
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for Shared<T> {}

const KIND: &str = "cpu-sparse";

macro_rules! row {
    ($spec:expr, $layout:ident, $d:ident, $func:expr) => {
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec,
                device: DeviceKind::Cpu,
                layout: Layout::$layout,
                dtype: DType::$d,
                kernel: &ComponentKernel { kind: KIND, func: $func },
            }
        }
    };
}

macro_rules! typed_rows {
    ($($d:ident),*) => { $(
        row!(COO_TO_DENSE, SparseCoo, $d, coo::to_dense::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(COO_SEGMENT_SUM, SparseCoo, $d, coo::segment_sum::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(DENSE_COUNT, SparseCoo, $d, from_dense::count::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(DENSE_INDICES, SparseCoo, $d, from_dense::indices::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(DENSE_VALUES, SparseCoo, $d, from_dense::values::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(DENSE_GATHER, SparseCoo, $d, lookup::dense_gather::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(GATHER_ROWS, SparseCoo, $d, lookup::gather_rows::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
        row!(SEGMENT_EXTREME, SparseCoo, $d, segment::extreme::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
    )* };
}
tensor_core::for_each_dtype!(typed_rows;);

macro_rules! float_rows {
    ($($d:ident),*) => { $(
        row!(SEGMENT_SOFTMAX, SparseCoo, $d, segment::softmax::<tensor_core::ElemOf<{ DType::$d as u8 }>>);
    )* };
}
float_rows!(F8E4M3, F8E5M2, F16, BF16, F32, F64);

row!(COO_SORT, SparseCoo, I64, coo::sort);
row!(COO_SEGMENTS, SparseCoo, I64, coo::segments);
row!(COO_UNIQUE_INDICES, SparseCoo, I64, coo::unique_indices);
row!(COO_LOOKUP, SparseCoo, I64, lookup::lookup);
row!(ROWS_TO_CROW, SparseCsr, I64, coo::rows_to_crow);
row!(CROW_TO_ROWS, SparseCsr, I64, coo::crow_to_rows);

/// Keeps this module's rows in the final link (see `register::ensure_linked`).
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(coo::sort as tensor_core::registry::sparse::ComponentFn);
    std::hint::black_box(spmm::spmm::<f32> as tensor_core::registry::sparse::ComponentFn);
}
