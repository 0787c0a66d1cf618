//! The kernels of the sparse layouts' steps: which ones exist ([`SparseKernel`]) and their
//! `extern "C"` wrappers around the templates of `kernels/cuda/include/sparse.cuh`,
//! `sparse_sort.cuh` and `sparse_ops.cuh` ([`generate`]). Like `reduce_codegen`, it knows
//! nothing of plans or launches: `codegen` wraps its text into a `Generated` kernel, and
//! `sparse::kernels::all` lists the kernels the NVRTC check compiles.

use tensor_core::{DType, Error, Result};

use crate::ctype::CType;

/// The steps' kernels (`kernels/cuda/include/sparse.cuh`).
pub const SPARSE_HEADER: &str = include_str!("../include/sparse.cuh");
/// The sort's and scans' kernels (`kernels/cuda/include/sparse_sort.cuh`).
pub const SORT_HEADER: &str = include_str!("../include/sparse_sort.cuh");
/// The ops' kernels: lookups, gathers, segment max/min, softmax and the CSR × dense product
/// (`kernels/cuda/include/sparse_ops.cuh`, after [`SPARSE_HEADER`]).
pub const OPS_HEADER: &str = include_str!("../include/sparse_ops.cuh");

/// Threads per block of the elementwise-style sparse kernels (grid-strided).
pub const THREADS: u32 = 256;
/// Threads per block of a scan tile.
pub const SCAN_THREADS: u32 = 256;
/// Elements per thread of a scan tile.
pub const SCAN_ITEMS: u32 = 8;
/// Threads per block of a radix pass's tile.
pub const RADIX_THREADS: u32 = 128;
/// Entries per thread of a radix pass's tile.
pub const RADIX_ITEMS: u32 = 8;
/// Bits of one radix digit (`TOPS_SP_RADIX` = 16 buckets in the header).
pub const RADIX_BITS: u32 = 4;
/// Threads per block of the min/max kernel.
pub const MINMAX_THREADS: u32 = 256;

/// One kernel of the sparse steps; the dtype-dependent ones name the values' dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SparseKernel {
    /// A scan tile (inclusive or exclusive by its param).
    ScanTiles,
    /// Adds the scanned tile totals to each tile.
    ScanAdd,
    /// The identity permutation.
    Iota,
    /// Per-block minimum and maximum of each index row.
    MinMax,
    /// Radix pass: per-tile digit histograms.
    RadixHist,
    /// Radix pass: the stable scatter.
    RadixScatter,
    /// to_dense: zeros the output, as raw words of this many bytes.
    Zero(usize),
    /// to_dense of distinct positions.
    ScatterUnique(DType),
    /// to_dense with atomics (integer and bool dtypes).
    ScatterAtomic(DType),
    /// to_dense over the sorted runs (float dtypes).
    ScatterRuns(DType),
    /// coalesce: the segment-start flags.
    SegmentFlags,
    /// coalesce: each segment's index column.
    UniqueIndices,
    /// coalesce: each segment's values summed in sorted order.
    SegmentSum(DType),
    /// to_sparse: a position's nonzero flag.
    DenseFlags(DType),
    /// to_sparse: the specified positions' multi-indices.
    DenseIndices,
    /// to_sparse: the specified positions' rows, as raw words of this many bytes.
    DenseValues(usize),
    /// COO → CSR row pointers.
    RowsToCrow,
    /// CSR → COO rows.
    CrowToRows,
    /// Binary ops: each query column's one-based place in a coalesced pattern.
    Lookup,
    /// Binary ops: rows by position, as raw words of this many bytes.
    GatherRows(usize),
    /// Binary ops: a dense tensor's slices at index columns, as raw words of this many bytes.
    DenseGather(usize),
    /// amax/amin: each segment's max or min.
    SegmentExtreme(DType),
    /// softmax/log_softmax within each segment (float dtypes).
    SegmentSoftmax(DType),
    /// spmm/spmv: CSR × dense, a thread per output element (float dtypes), with index
    /// components of the second dtype (I32 or I64).
    CsrSpmm(DType, DType),
    /// spmv (one dense column): a group of lanes a row, the third field lanes (a power of
    /// two, 2..=32), the products summed in entry order through shuffles (the same bits as
    /// `CsrSpmm`); value and index dtypes as there.
    CsrSpmvRows(DType, DType, u8),
}

/// Lanes a row of the grouped spmv ([`SparseKernel::CsrSpmvRows`]) for rows of `mean`
/// entries on average: the power of two at or above it, 2 to 32.
///
/// ```
/// use tensor_kernels_cuda::sparse_codegen::spmv_lanes;
/// assert_eq!((spmv_lanes(0.5), spmv_lanes(3.0), spmv_lanes(16.0), spmv_lanes(17.0), spmv_lanes(900.0)), (2, 4, 16, 32, 32));
/// ```
pub fn spmv_lanes(mean: f64) -> u8 {
    let mut g = 2u8;
    while g < 32 && f64::from(g) < mean {
        g *= 2;
    }
    g
}

impl SparseKernel {
    /// Whether its tiles cooperate through shared memory and barriers.
    pub fn synchronises(self) -> bool {
        matches!(
            self,
            SparseKernel::ScanTiles
                | SparseKernel::MinMax
                | SparseKernel::RadixHist
                | SparseKernel::RadixScatter
                | SparseKernel::CsrSpmvRows(..)
        )
    }

    /// (name, call of the template) of the kernel.
    fn parts(self) -> Result<(String, String)> {
        let t = |d: DType| CType::of(d);
        let (scan, radix) = (format!("{SCAN_THREADS}, {SCAN_ITEMS}"), format!("{RADIX_THREADS}, {RADIX_ITEMS}"));
        let plain = |name: &str| (format!("tops_sparse_{name}"), format!("tops_sp_{name}(a)"));
        let typed = |name: &str, d: DType| {
            (format!("tops_sparse_{name}__{}", t(d).tag), format!("tops_sp_{name}<{}>(a)", t(d).name))
        };
        let raw = |name: &str, bytes: usize| -> Result<(String, String)> {
            let b = CType::bits(bytes)
                .ok_or_else(|| Error::Cuda(format!("no raw element type of {bytes} bytes (1, 2, 4 or 8)")))?;
            Ok((format!("tops_sparse_{name}__{}", b.tag), format!("tops_sp_{name}<{}>(a)", b.name)))
        };
        Ok(match self {
            SparseKernel::ScanTiles => ("tops_sparse_scan_tiles".into(), format!("tops_sp_scan_tiles<{scan}>(a)")),
            SparseKernel::ScanAdd => ("tops_sparse_scan_add".into(), format!("tops_sp_scan_add<{scan}>(a)")),
            SparseKernel::Iota => plain("iota"),
            SparseKernel::MinMax => ("tops_sparse_minmax".into(), format!("tops_sp_minmax<{MINMAX_THREADS}>(a)")),
            SparseKernel::RadixHist => ("tops_sparse_radix_hist".into(), format!("tops_sp_radix_hist<{radix}>(a)")),
            SparseKernel::RadixScatter => {
                ("tops_sparse_radix_scatter".into(), format!("tops_sp_radix_scatter<{radix}>(a)"))
            }
            SparseKernel::Zero(bytes) => raw("zero", bytes)?,
            SparseKernel::ScatterUnique(d) => typed("scatter_unique", d),
            SparseKernel::ScatterAtomic(d) => typed("scatter_atomic", d),
            SparseKernel::ScatterRuns(d) => typed("scatter_runs", d),
            SparseKernel::SegmentFlags => plain("segment_flags"),
            SparseKernel::UniqueIndices => plain("unique_indices"),
            SparseKernel::SegmentSum(d) => typed("segment_sum", d),
            SparseKernel::DenseFlags(d) => typed("dense_flags", d),
            SparseKernel::DenseIndices => plain("dense_indices"),
            SparseKernel::DenseValues(bytes) => raw("dense_values", bytes)?,
            SparseKernel::RowsToCrow => plain("rows_to_crow"),
            SparseKernel::CrowToRows => plain("crow_to_rows"),
            SparseKernel::Lookup => plain("lookup"),
            SparseKernel::GatherRows(bytes) => raw("gather_rows", bytes)?,
            SparseKernel::DenseGather(bytes) => raw("dense_gather", bytes)?,
            SparseKernel::SegmentExtreme(d) => typed("segment_extreme", d),
            SparseKernel::SegmentSoftmax(d) => typed("segment_softmax", d),
            SparseKernel::CsrSpmvRows(d, index, lanes) => {
                let i = match index {
                    DType::I32 => t(DType::I32),
                    DType::I64 => t(DType::I64),
                    _ => return Err(Error::Cuda(format!("CSR index components are i32 or i64, not {index}"))),
                };
                if !(lanes.is_power_of_two() && (2..=32).contains(&lanes)) {
                    return Err(Error::Cuda(format!(
                        "a grouped spmv takes 2, 4, 8, 16 or 32 lanes a row, not {lanes}"
                    )));
                }
                (
                    format!("tops_sparse_csr_spmv_rows__{}__{}__g{lanes}", t(d).tag, i.tag),
                    format!("tops_sp_csr_spmv_rows<{}, {}, {lanes}>(a)", t(d).name, i.name),
                )
            }
            SparseKernel::CsrSpmm(d, index) => {
                let i = match index {
                    DType::I32 => t(DType::I32),
                    DType::I64 => t(DType::I64),
                    _ => return Err(Error::Cuda(format!("CSR index components are i32 or i64, not {index}"))),
                };
                (
                    format!("tops_sparse_csr_spmm__{}__{}", t(d).tag, i.tag),
                    format!("tops_sp_csr_spmm<{}, {}>(a)", t(d).name, i.name),
                )
            }
        })
    }
}

/// A sparse kernel's text: its name, its `__global__` definition and the headers it needs
/// in front of it, as (name, source) pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseKernelText {
    /// Deterministic `extern "C"` name.
    pub name: String,
    /// The kernel definition (it takes a `tops_sparse_args`).
    pub kernel: String,
    /// The headers it calls into.
    pub device_fns: Vec<(String, String)>,
}

/// The kernel `k`: an `extern "C"` wrapper calling its template, after the header it needs.
///
/// ```
/// use tensor_kernels_cuda::sparse_codegen::{generate, SparseKernel};
/// use tensor_core::{DType, Error, Result};
/// let g = generate(SparseKernel::SegmentSum(DType::F16)).unwrap();
/// assert_eq!(g.name, "tops_sparse_segment_sum__f16");
/// assert!(g.kernel.contains("tops_sp_segment_sum<__half>(a)"));
/// assert!(generate(SparseKernel::DenseValues(3)).is_err());
/// ```
pub fn generate(k: SparseKernel) -> Result<SparseKernelText> {
    let (name, call) = k.parts()?;
    let kernel = format!("extern \"C\" __global__ void {name}(tops_sparse_args a) {{\n    {call};\n}}\n");
    let ops = matches!(
        k,
        SparseKernel::Lookup
            | SparseKernel::GatherRows(_)
            | SparseKernel::DenseGather(_)
            | SparseKernel::SegmentExtreme(_)
            | SparseKernel::SegmentSoftmax(_)
            | SparseKernel::CsrSpmm(..)
            | SparseKernel::CsrSpmvRows(..)
    );
    let sort = !ops && (matches!(k, SparseKernel::ScanAdd | SparseKernel::Iota) || k.synchronises());
    let sparse = ("tops_sparse_header".to_string(), SPARSE_HEADER.to_string());
    let device_fns = if sort {
        vec![("tops_sparse_sort_header".to_string(), SORT_HEADER.to_string())]
    } else if ops {
        vec![sparse, ("tops_sparse_ops_header".to_string(), OPS_HEADER.to_string())]
    } else {
        vec![sparse]
    };
    Ok(SparseKernelText { name, kernel, device_fns })
}
