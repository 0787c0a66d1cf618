//! The list of every kernel the sparse rows launch, as the NVRTC check and the shim build
//! take it ([`all`]); the kernels themselves are named and generated in
//! [`crate::sparse_codegen`].

use tensor_core::DType;

use crate::codegen::KernelSpec;
use crate::sparse_codegen::SparseKernel;

/// Every kernel the sparse rows launch: the NVRTC check's list.
pub fn all() -> Vec<KernelSpec<'static>> {
    let mut v: Vec<SparseKernel> = vec![
        SparseKernel::ScanTiles,
        SparseKernel::ScanAdd,
        SparseKernel::Iota,
        SparseKernel::MinMax,
        SparseKernel::RadixHist,
        SparseKernel::RadixScatter,
        SparseKernel::SegmentFlags,
        SparseKernel::UniqueIndices,
        SparseKernel::DenseIndices,
        SparseKernel::RowsToCrow,
        SparseKernel::CrowToRows,
        SparseKernel::Lookup,
    ];
    for d in DType::ALL {
        v.push(SparseKernel::ScatterUnique(d));
        v.push(if d.is_float() { SparseKernel::ScatterRuns(d) } else { SparseKernel::ScatterAtomic(d) });
        v.push(SparseKernel::SegmentSum(d));
        v.push(SparseKernel::DenseFlags(d));
        v.push(SparseKernel::SegmentExtreme(d));
        if d.is_float() {
            v.push(SparseKernel::SegmentSoftmax(d));
            v.push(SparseKernel::CsrSpmm(d, DType::I32));
            v.push(SparseKernel::CsrSpmm(d, DType::I64));
            for lanes in [2, 4, 8, 16, 32] {
                v.push(SparseKernel::CsrSpmvRows(d, DType::I32, lanes));
                v.push(SparseKernel::CsrSpmvRows(d, DType::I64, lanes));
            }
        }
    }
    for bytes in [1, 2, 4, 8] {
        v.push(SparseKernel::Zero(bytes));
        v.push(SparseKernel::DenseValues(bytes));
        v.push(SparseKernel::GatherRows(bytes));
        v.push(SparseKernel::DenseGather(bytes));
    }
    v.into_iter().map(KernelSpec::Sparse).collect()
}
