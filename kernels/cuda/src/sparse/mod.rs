//! The CUDA rows of the sparse layouts' steps (`tensor_core::registry::sparse` documents
//! each): `ComponentKernel`s keyed `(step, DeviceKind::Cuda, SparseCoo|SparseCsr, dtype)` for
//! every dtype the CPU rows have, so `to_dense`, `coalesce`, `to_sparse`, `to_sparse_csr`,
//! `to_sparse_coo`, the ops on sparse tensors and `spmm`/`spmv` of a CUDA sparse tensor run
//! on its device.
//!
//! - `to_dense` scatters into the zeroed output: a thread per element for distinct
//!   positions; with duplicates, atomics for the integer and bool dtypes (their sums do not
//!   depend on the order; a compare-and-swap on the 32-bit word for 1/2-byte ones) and, for
//!   the float dtypes, a sum over the sorted order in entry order (`coo.rs`), so results
//!   equal the CPU's bit for bit.
//! - `coalesce`: a stable LSD radix sort of the permutation, one group of 4-bit passes per
//!   sparse dim from the last to the first (`sort.rs`: histograms, a scan, a scatter), the
//!   segments as flags + an inclusive scan (`scan.rs`), and a thread per segment start for
//!   the unique indices and the sums (in sorted order, f16/bf16 rounded after each add as
//!   on the CPU).
//! - `to_sparse`: nonzero flags + an inclusive scan, then gathers (`dense.rs`), and the CSR
//!   row pointers by binary searches.
//! - the binary ops: pattern lookups by binary search and row gathers (`gather.rs`);
//!   `amax`/`amin` and softmax: a thread per segment start walking its segment in sorted
//!   order (`segment.rs`), so NaN rules and f64 sums are the CPU's.
//! - `spmm`/`spmv` (`sparse_csr_spmm`, `spmm.rs`): a thread per output element summing its
//!   row's entries in entry order with the CPU row's arithmetic (no FMA; f16/bf16 in f32),
//!   so the products equal the CPU's bit for bit.
//!
//! An index read from the data is checked before anything is addressed through it: a bad
//! one sets a device flag the step reads back, an `Err` (the CPU rows' errors), never a
//! write out of bounds. The steps run on an [`Exec`]: a CUDA device ([`DeviceExec`]), or in
//! tests the CPU shim over host memory. The CUDA C is in `kernels/cuda/include/sparse.cuh`,
//! `sparse_sort.cuh` and `sparse_ops.cuh` ([`kernels`]).

mod coo;
mod dense;
mod exec;
mod gather;
pub mod kernels;
pub mod scan;
mod segment;
mod sort;
mod spmm;

pub use crate::sparse_codegen::SparseKernel;
pub use exec::{DeviceExec, Exec, Scratch};

use tensor_core::registry::sparse::{
    ComponentKernel, COO_LOOKUP, COO_SEGMENTS, COO_SEGMENT_SUM, COO_SORT, COO_TO_DENSE, COO_UNIQUE_INDICES,
    CROW_TO_ROWS, CSR_SPMM, DENSE_COUNT, DENSE_GATHER, DENSE_INDICES, DENSE_VALUES, GATHER_ROWS, ROWS_TO_CROW,
    SEGMENT_EXTREME, SEGMENT_SOFTMAX,
};
use tensor_core::registry::{KernelRow, OpSpec, PreparedCall, RawTensor};
use tensor_core::{DType, DeviceKind, Error, Layout, Result, Scalar};

/// A contiguous operand of a step on an [`Exec`]: its address, dtype and shape.
#[derive(Debug, Clone, Copy)]
pub struct Operand<'a> {
    /// Address of its first element.
    pub addr: u64,
    /// Element dtype.
    pub dtype: DType,
    /// Shape (row-major, contiguous).
    pub shape: &'a [usize],
}

impl Operand<'_> {
    /// Its element count.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// `(rows, cols)` of an I64 matrix (`[sd, nnz]` indices), else an `Err` naming `op`.
    fn matrix(&self, op: &'static str) -> Result<(usize, usize)> {
        match (self.dtype, self.shape) {
            (DType::I64, &[r, c]) => Ok((r, c)),
            _ => Err(Error::shape(op, format!("expected an I64 matrix, got {} {:?}", self.dtype, self.shape))),
        }
    }
}

/// Runs the step `op` (one of the specs of `tensor_core::registry::sparse`) on `e`:
/// `out` from `inputs` and `params`, as the spec documents.
///
/// # Safety
/// Every operand addresses memory of `e` holding what its shape and dtype say; `out` is
/// disjoint from every input; index inputs other than COO indices (permutations, segments)
/// come from the earlier steps, as the spec says.
pub unsafe fn run_step(
    e: &impl Exec,
    op: &'static OpSpec,
    out: &Operand<'_>,
    inputs: &[Operand<'_>],
    params: &[Scalar],
) -> Result<()> {
    let name = op.name;
    let input = |i: usize| inputs.get(i).ok_or_else(|| Error::invalid(name, format!("needs input {i}")));
    let is = |spec: &'static OpSpec| std::ptr::eq(op, spec);
    let index = |t: &Operand<'_>| match t.dtype {
        DType::I64 => Ok(()),
        got => Err(Error::DTypeMismatch { op: name, expected: DType::I64, got }),
    };
    // SAFETY (every arm): forwarded from the caller.
    unsafe {
        if is(&COO_TO_DENSE) {
            let coalesced = params.first().is_some_and(|p| p.to::<bool>());
            index(input(0)?)?;
            coo::to_dense(e, name, out, input(0)?, input(1)?, coalesced)
        } else if is(&COO_SORT) {
            let (sd, nnz) = input(0)?.matrix(name)?;
            index(out)?;
            if out.numel() != nnz {
                return Err(Error::shape(name, format!("the permutation must hold {nnz} entries")));
            }
            sort::sort_columns(e, input(0)?.addr, sd, nnz, out.addr)
        } else if is(&COO_SEGMENTS) {
            [out, input(1)?].into_iter().try_for_each(index)?;
            coo::segments(e, name, out, input(0)?, input(1)?)
        } else if is(&COO_UNIQUE_INDICES) {
            [input(1)?, input(2)?].into_iter().try_for_each(index)?;
            coo::unique_indices(e, name, out, [input(0)?, input(1)?, input(2)?])
        } else if is(&COO_SEGMENT_SUM) {
            [input(1)?, input(2)?].into_iter().try_for_each(index)?;
            coo::segment_sum(e, name, out, [input(0)?, input(1)?, input(2)?])
        } else if is(&DENSE_COUNT) {
            index(out)?;
            let sd = params.first().map_or(0, |p| p.to::<i64>().max(0) as usize);
            dense::count(e, name, out, input(0)?, sd)
        } else if is(&DENSE_INDICES) || is(&DENSE_VALUES) {
            index(input(0)?)?;
            if is(&DENSE_INDICES) {
                index(out)?;
            }
            dense::gather(e, name, out, input(0)?, input(1)?, is(&DENSE_VALUES))
        } else if is(&ROWS_TO_CROW) || is(&CROW_TO_ROWS) {
            [out, input(0)?].into_iter().try_for_each(index)?;
            dense::crow(e, name, out, input(0)?, is(&ROWS_TO_CROW))
        } else if is(&COO_LOOKUP) {
            [out, input(0)?, input(1)?].into_iter().try_for_each(index)?;
            gather::lookup(e, name, out, input(0)?, input(1)?)
        } else if is(&GATHER_ROWS) {
            index(input(1)?)?;
            let base = params.first().map_or(0, |p| p.to::<i64>());
            gather::gather_rows(e, name, out, [input(0)?, input(1)?], base)
        } else if is(&DENSE_GATHER) {
            index(input(1)?)?;
            gather::dense_gather(e, name, out, input(0)?, input(1)?)
        } else if is(&SEGMENT_EXTREME) {
            let kind = params.first().map_or(0, |p| p.to::<i64>());
            let group = params.get(1).map_or(0, |p| p.to::<i64>());
            segment::extreme(e, name, out, [input(0)?, input(1)?, input(2)?], kind, group)
        } else if is(&SEGMENT_SOFTMAX) {
            let log = params.first().is_some_and(|p| p.to::<bool>());
            segment::softmax(e, name, out, [input(0)?, input(1)?, input(2)?], log)
        } else if is(&CSR_SPMM) {
            spmm::spmm(e, name, out, [input(0)?, input(1)?, input(2)?, input(3)?])
        } else {
            Err(Error::invalid(name, "is not a step of the sparse layouts"))
        }
    }
}

/// `raw` as an [`Operand`], when it is contiguous. An empty one gets a null address (its
/// storage may be no allocation at all; the kernels never read it), which the driver
/// accepts where a dangling one would not be a device allocation.
fn operand<'a>(op: &'static str, raw: &RawTensor<'a>) -> Result<Operand<'a>> {
    if !tensor_core::shape::is_contiguous(raw.shape, raw.strides) {
        return Err(Error::invalid(op, format!("a component must be contiguous, got strides {:?}", raw.strides)));
    }
    let addr = if raw.shape.contains(&0) { 0 } else { raw.ptr as usize as u64 };
    Ok(Operand { addr, dtype: raw.dtype, shape: raw.shape })
}

/// The `ComponentFn` of every CUDA row: the call's operands (one CUDA device, contiguous)
/// through [`run_step`] on the output's device.
///
/// # Safety
/// The `ComponentFn` contract.
unsafe fn component(call: &PreparedCall<'_>) -> Result<()> {
    let op = call.op.name;
    let [out] = call.outputs else {
        return Err(Error::invalid(op, "a sparse step writes exactly one output"));
    };
    crate::launch::same_device(op, out, call.inputs)?;
    let e = DeviceExec::of(out.device)?;
    let inputs: Vec<Operand<'_>> = call.inputs.iter().map(|r| operand(op, r)).collect::<Result<_>>()?;
    // SAFETY: the ComponentFn contract: every operand is locked on this device for the call,
    // holds what its shape says, and the output is disjoint from the inputs.
    unsafe { run_step(&e, call.op, &operand(op, out)?, &inputs, call.params) }
}

const KIND: &str = "cuda-sparse";

macro_rules! row {
    ($spec:expr, $layout:ident, $d:ident) => {
        tensor_core::inventory::submit! {
            KernelRow {
                op: &$spec,
                device: DeviceKind::Cuda,
                layout: Layout::$layout,
                dtype: DType::$d,
                kernel: &ComponentKernel { kind: KIND, func: component },
            }
        }
    };
}

macro_rules! typed_rows {
    ($($d:ident),*) => { $(
        row!(COO_TO_DENSE, SparseCoo, $d);
        row!(COO_SEGMENT_SUM, SparseCoo, $d);
        row!(DENSE_COUNT, SparseCoo, $d);
        row!(DENSE_INDICES, SparseCoo, $d);
        row!(DENSE_VALUES, SparseCoo, $d);
        row!(DENSE_GATHER, SparseCoo, $d);
        row!(GATHER_ROWS, SparseCoo, $d);
        row!(SEGMENT_EXTREME, SparseCoo, $d);
    )* };
}
tensor_core::for_each_dtype!(typed_rows;);

macro_rules! float_rows {
    ($($d:ident),*) => { $(
        row!(SEGMENT_SOFTMAX, SparseCoo, $d);
        row!(CSR_SPMM, SparseCsr, $d);
    )* };
}
float_rows!(F8E4M3, F8E5M2, F16, BF16, F32, F64);

row!(COO_SORT, SparseCoo, I64);
row!(COO_SEGMENTS, SparseCoo, I64);
row!(COO_UNIQUE_INDICES, SparseCoo, I64);
row!(COO_LOOKUP, SparseCoo, I64);
row!(ROWS_TO_CROW, SparseCsr, I64);
row!(CROW_TO_ROWS, SparseCsr, I64);

/// Keeps this module's rows in the final link (see [`crate::register::ensure_linked`]).
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(component as tensor_core::registry::sparse::ComponentFn);
}
