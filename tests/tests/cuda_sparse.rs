//! The CUDA rows of the sparse layouts' steps without a GPU: NVRTC compiles every kernel
//! they launch, and the CPU shim runs the very orchestration of the rows
//! (`tensor_kernels_cuda::sparse::run_step` over an executor of host memory: the same plans,
//! scratch, read-backs) through the chains the core runs — to_dense, coalesce, to_sparse, the
//! CSR row pointers — for every dtype over random COO tensors (nnz 0, duplicates, unsorted,
//! hybrid dense dims, several sort tiles and scan levels). Results equal the CPU's bit for
//! bit, and the structure (the sort's order, unique columns, nonzero positions, row
//! pointers) equals naive references. Bad indices are `Err`s, with nothing written out of
//! bounds. The ops' steps (lookups, gathers, segment max/min and softmax) are in
//! `cuda_sparse/ops.rs`, the CSR × dense product (spmm/spmv) in `cuda_sparse/spmm.rs`.
//! `cuda_device.rs` runs the same rows end to end on `Device::Cuda`.

#[path = "cuda_sparse/cases.rs"]
mod cases;
mod common;
#[path = "cuda_sparse/ops.rs"]
mod ops;
mod shim;
#[path = "cuda_sparse/spmm.rs"]
mod spmm;

use std::path::PathBuf;

use proptest::prelude::*;

use cases::{cases, naive_crow, naive_nonzero, naive_order, naive_unique, Case};
use common::bits;
use shim::{nvrtc_available, with_raw};
use tensor_core::registry::sparse::*;
use tensor_core::registry::{KernelRow, OpSpec};
use tensor_core::{DeviceKind, Error, Result};
use tensor_cuda_testing::{check, shim as cuda_shim};
use tensor_kernels_cuda::plan::Step;
use tensor_kernels_cuda::sparse::{kernels, run_step, Exec, Operand, Scratch};
use tensor_ops::prelude::*;

const NEEDS: &str = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh";

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn every_sparse_kernel_compiles_with_nvrtc_and_is_in_the_check() {
    nvrtc_available();
    let rows: Vec<&KernelRow> = inventory::iter::<KernelRow>
        .into_iter()
        .filter(|r| r.device == DeviceKind::Cuda && r.kernel.kind() == "cuda-sparse")
        .collect();
    // every CPU row has its CUDA twin
    let cpu = inventory::iter::<KernelRow>.into_iter().filter(|r| r.kernel.kind() == "cpu-sparse");
    let key = |r: &KernelRow| (r.op.name, r.layout, r.dtype);
    let mut want: Vec<_> = cpu.map(key).collect();
    let mut got: Vec<_> = rows.iter().map(|r| key(r)).collect();
    want.sort_by_key(|k| format!("{k:?}"));
    got.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(got, want);
    let all = kernels::all();
    let listed = check::specs_for(rows.into_iter());
    assert!(all.iter().all(|k| listed.contains(k)), "the NVRTC check misses sparse kernels");
    let reports = check::compile_specs(&all).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), all.len() * check::CHECK_ARCHS.len());
    for r in reports.iter().filter(|r| r.arch.starts_with("sm_")) {
        println!("{:>3} registers  {}", r.registers, r.name);
    }
}

/// The shim as an [`Exec`]: host memory stands in for device memory; few blocks, so the
/// grid-stride loops run.
struct HostExec(cuda_shim::ShimLib);

impl Exec for HostExec {
    fn max_blocks(&self) -> u32 {
        3
    }
    unsafe fn run(&self, steps: &[Step]) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.run(steps) }.map_err(Error::Cuda)
    }
    fn scratch(&self, bytes: usize) -> Result<Scratch> {
        let mut v = vec![0u64; bytes.div_ceil(8).max(1)];
        let addr = v.as_mut_ptr() as usize as u64;
        Ok(Scratch::new(addr, Box::new(v)))
    }
    unsafe fn upload(&self, src: &[u8], dst: u64) -> Result<()> {
        // SAFETY: `dst` is host memory valid for `src.len()` bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as usize as *mut u8, src.len()) };
        Ok(())
    }
    unsafe fn download(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: `src` is host memory valid for `dst.len()` bytes (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src as usize as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}

fn host_exec() -> HostExec {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim");
    match cuda_shim::build(&kernels::all(), &dir) {
        Ok(lib) => HostExec(lib),
        Err(e) => panic!("{e}: {NEEDS} (where the build finds no NVRTC, this test is reported as ignored)"),
    }
}

/// Runs step `spec` on the shim: `out` from `inputs` (CPU tensors standing in for device
/// memory).
fn step(e: &HostExec, spec: &'static OpSpec, out: &Tensor, inputs: &[&Tensor], params: &[Scalar]) -> Result<()> {
    let inputs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    with_raw(out, &inputs, |o, ins| {
        let ins: Vec<Operand<'_>> = ins.iter().map(operand).collect();
        // SAFETY: the operands address the locked host storages of live CPU tensors; the
        // output is a tensor of its own.
        unsafe { run_step(e, spec, &operand(o), &ins, params) }
    })
}

/// A raw host view as an [`Operand`].
fn operand<'a>(r: &tensor_core::registry::RawTensor<'a>) -> Operand<'a> {
    Operand { addr: r.ptr as usize as u64, dtype: r.dtype, shape: r.shape }
}

fn last(t: &Tensor) -> usize {
    t.to_vec::<i64>().unwrap().last().map_or(0, |&x| x as usize)
}

fn empty(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::zeros(shape, dtype, Device::Cpu).unwrap()
}

/// `to_dense` through the shim, into a poisoned output (the step zeros it).
fn to_dense(e: &HostExec, c: &Case, coalesced: bool) -> Result<Tensor> {
    let out = Tensor::full(&c.shape, 7, c.dtype, Device::Cpu).unwrap();
    step(e, &COO_TO_DENSE, &out, &[&c.indices(), &c.values()], &[Scalar::Bool(coalesced)])?;
    Ok(out)
}

/// `coalesce` through the shim, as the core chains it: (perm, indices, values).
fn coalesce(e: &HostExec, c: &Case) -> (Vec<i64>, Tensor, Tensor) {
    let (idx, vals, nnz) = (c.indices(), c.values(), c.nnz());
    let perm = empty(&[nnz], DType::I64);
    step(e, &COO_SORT, &perm, &[&idx], &[]).unwrap();
    let seg = empty(&[nnz], DType::I64);
    step(e, &COO_SEGMENTS, &seg, &[&idx, &perm], &[]).unwrap();
    let n = if nnz == 0 { 0 } else { last(&seg) + 1 };
    let uniq = empty(&[c.sd, n], DType::I64);
    step(e, &COO_UNIQUE_INDICES, &uniq, &[&idx, &perm, &seg], &[]).unwrap();
    let shape: Vec<usize> = std::iter::once(n).chain(c.shape[c.sd..].iter().copied()).collect();
    let sums = empty(&shape, c.dtype);
    step(e, &COO_SEGMENT_SUM, &sums, &[&vals, &perm, &seg], &[]).unwrap();
    (perm.to_vec::<i64>().unwrap(), uniq, sums)
}

/// The CPU's segment sums of `s` at the unique columns `uniq`: the rows of its dense tensor
/// there (`to_dense` adds each position's entries into zero in entry order, as the segment
/// sums do), which are also the values of its `coalesce()` when the core ran the steps (an
/// input already sorted and unique, or of one entry, is returned as it is, `-0.0` kept).
fn want_sums(c: &Case, s: &Tensor, uniq: &Tensor) -> Vec<u64> {
    let dense = bits(&s.to_dense().unwrap());
    let (n, row) = (uniq.shape()[1], c.shape[c.sd..].iter().product::<usize>());
    let u = uniq.to_vec::<i64>().unwrap();
    let want: Vec<u64> = (0..n)
        .flat_map(|k| {
            let p = (0..c.sd).fold(0usize, |acc, d| acc * c.shape[d] + u[d * n + k] as usize);
            dense[p * row..(p + 1) * row].to_vec()
        })
        .collect();
    if !s.is_coalesced().unwrap() && c.nnz() > 1 {
        assert_eq!(want, bits(&s.coalesce().unwrap().values().unwrap()), "the CPU's coalesce");
    }
    want
}

/// `to_sparse(sd)` of a dense CPU tensor through the shim: (indices, values).
fn to_sparse(e: &HostExec, dense: &Tensor, sd: usize) -> (Tensor, Tensor) {
    let positions: usize = dense.shape()[..sd].iter().product();
    let counts = empty(&[positions], DType::I64);
    step(e, &DENSE_COUNT, &counts, &[dense], &[Scalar::Int(sd as i64)]).unwrap();
    let nnz = last(&counts);
    let indices = empty(&[sd, nnz], DType::I64);
    step(e, &DENSE_INDICES, &indices, &[&counts, dense], &[]).unwrap();
    let shape: Vec<usize> = std::iter::once(nnz).chain(dense.shape()[sd..].iter().copied()).collect();
    let values = empty(&shape, dense.dtype());
    step(e, &DENSE_VALUES, &values, &[&counts, dense], &[]).unwrap();
    (indices, values)
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn steps_on_the_shim_match_the_cpu_for_every_dtype() {
    let e = host_exec();
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        for c in cases(dtype, 0x5eed + k as u64) {
            let what = format!("{dtype} {:?} sd {} nnz {}", c.shape, c.sd, c.nnz());
            let s = c.tensor();
            // to_dense of the uncoalesced tensor: duplicates summed as the CPU sums them
            let want = s.to_dense().unwrap();
            assert_eq!(bits(&to_dense(&e, &c, false).unwrap()), bits(&want), "{what}: to_dense");
            // coalesce: the stable order, the unique columns, the sums
            let (perm, uniq, sums) = coalesce(&e, &c);
            assert_eq!(perm, naive_order(&c), "{what}: sort");
            let cpu = s.coalesce().unwrap();
            assert_eq!(uniq.to_vec::<i64>().unwrap(), naive_unique(&c), "{what}: unique indices");
            assert_eq!(uniq.to_vec::<i64>().unwrap(), cpu.indices().unwrap().to_vec::<i64>().unwrap(), "{what}");
            assert_eq!(bits(&sums), want_sums(&c, &s, &uniq), "{what}: segment sums");
            // to_dense of the coalesced tensor (distinct positions, no sort)
            let co = Case { idx: uniq.to_vec::<i64>().unwrap(), vals: vec![], ..c.clone() };
            let out = empty(&c.shape, dtype);
            step(&e, &COO_TO_DENSE, &out, &[&co.indices(), &sums], &[Scalar::Bool(true)]).unwrap();
            assert_eq!(bits(&out), bits(&want), "{what}: to_dense of the coalesced tensor");
            // to_sparse of the dense result, every number of sparse dims
            for sd in 1..=c.shape.len() {
                let (idx, vals) = to_sparse(&e, &want, sd);
                let cpu = want.to_sparse(sd).unwrap();
                assert_eq!(idx.to_vec::<i64>().unwrap(), naive_nonzero(&want, sd), "{what}: to_sparse({sd})");
                assert_eq!(bits(&vals), bits(&cpu.values().unwrap()), "{what}: to_sparse({sd}) values");
            }
            if c.sd == 2 {
                csr_round_trip(&e, &cpu, &what);
            }
        }
    }
}

/// The row pointers of the coalesced `cpu` and back, against naive counts and the CPU.
fn csr_round_trip(e: &HostExec, cpu: &Tensor, what: &str) {
    let rows = cpu.indices().unwrap().select(0, 0).unwrap().contiguous().unwrap();
    let n = cpu.shape()[0];
    let crow = empty(&[n + 1], DType::I64);
    step(e, &ROWS_TO_CROW, &crow, &[&rows], &[]).unwrap();
    let r = rows.to_vec::<i64>().unwrap();
    assert_eq!(crow.to_vec::<i64>().unwrap(), naive_crow(&r, n), "{what}: crow");
    assert_eq!(
        crow.to_vec::<i64>().unwrap(),
        cpu.to_sparse_csr().unwrap().crow_indices().unwrap().to_vec::<i64>().unwrap()
    );
    let back = empty(&[r.len()], DType::I64);
    step(e, &CROW_TO_ROWS, &back, &[&crow], &[]).unwrap();
    assert_eq!(back.to_vec::<i64>().unwrap(), r, "{what}: rows from crow");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random shapes (rank 1..=4, sizes 1..=5), sparse dims, dtypes and nnz 0..=24: to_dense
    /// and coalesce on the shim equal the CPU's bit for bit.
    #[test]
    #[cfg_attr(tops_cuda_checks_unavailable, ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh")]
    fn random_coo_tensors_on_the_shim_match_the_cpu(
        shape in prop::collection::vec(1usize..=5, 1..=4),
        sd_pick in 0usize..4,
        dtype in prop::sample::select(DType::ALL.to_vec()),
        nnz in 0usize..=24,
        seed in any::<u64>(),
    ) {
        let e = shared_exec();
        let sd = 1 + sd_pick % shape.len();
        let c = Case::random(&shape, sd, dtype, nnz, &mut cases::Rng(seed | 1));
        let s = c.tensor();
        prop_assert_eq!(bits(&to_dense(e, &c, false).unwrap()), bits(&s.to_dense().unwrap()));
        let (perm, uniq, sums) = coalesce(e, &c);
        prop_assert_eq!(perm, naive_order(&c));
        let cpu = s.coalesce().unwrap();
        prop_assert_eq!(uniq.to_vec::<i64>().unwrap(), cpu.indices().unwrap().to_vec::<i64>().unwrap());
        prop_assert_eq!(bits(&sums), want_sums(&c, &s, &uniq));
    }
}

/// One shim library for the property test's cases.
fn shared_exec() -> &'static HostExec {
    static EXEC: std::sync::OnceLock<HostExec> = std::sync::OnceLock::new();
    EXEC.get_or_init(host_exec)
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn the_sort_takes_any_i64_indices() {
    // negative and huge indices, a dim with one value, 64-bit ranges: the order is the
    // naive stable one (the step sorts whatever I64 columns it is given).
    let e = host_exec();
    let mut rng = cases::Rng(99);
    let nnz = 2500;
    let pick = [i64::MIN, -5, -1, 0, 3, 1 << 40, i64::MAX];
    let idx: Vec<i64> = (0..3 * nnz)
        .map(|k| match k / nnz {
            0 => pick[rng.below(pick.len() as u64) as usize],
            1 => 7,
            _ => rng.below(1 << 20) as i64 - (1 << 19),
        })
        .collect();
    let c = Case { shape: vec![1, 1, 1], sd: 3, dtype: DType::F32, idx, vals: vec![] };
    let perm = empty(&[nnz], DType::I64);
    step(&e, &COO_SORT, &perm, &[&c.indices()], &[]).unwrap();
    assert_eq!(perm.to_vec::<i64>().unwrap(), naive_order(&c));
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn bad_indices_are_errors_and_write_nothing_out_of_bounds() {
    let e = host_exec();
    for dtype in [DType::F32, DType::I32, DType::U8, DType::F16] {
        for (bad, coalesced) in [(-1i64, false), (3, false), (3, true), (i64::MIN, true)] {
            // [1, 4] indices into [3, 2]: entry 2 is outside; the output sits between guards
            let c = Case { shape: vec![3, 2], sd: 1, dtype, idx: vec![0, 2, bad, 1], vals: vec![1.0; 8] };
            let guarded = Tensor::full(&[10], Scalar::Int(9), dtype, Device::Cpu).unwrap();
            let out = guarded.narrow(0, 2, 6).unwrap().reshape(&[3, 2]).unwrap();
            let err = step(&e, &COO_TO_DENSE, &out, &[&c.indices(), &c.values()], &[Scalar::Bool(coalesced)]);
            assert!(matches!(err, Err(Error::OutOfBounds { .. })), "{dtype} {bad}: {err:?}");
            let g = guarded.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert!(g[..2].iter().chain(&g[8..]).all(|&x| x == 9.0), "{dtype} {bad}: a guard was written: {g:?}");
        }
    }
    // unsorted rows, and crow_indices that do not rise from 0 to nnz
    let crow = empty(&[4], DType::I64);
    let rows = Tensor::from_vec(vec![0i64, 2, 1], &[3]).unwrap();
    assert!(step(&e, &ROWS_TO_CROW, &crow, &[&rows], &[]).is_err());
    for bad in [vec![0i64, 2, 1, 3], vec![1, 1, 2, 3], vec![0, 1, 2, 5], vec![0, 4, 4, 3]] {
        let out = empty(&[3], DType::I64);
        let r = step(&e, &CROW_TO_ROWS, &out, &[&Tensor::from_vec(bad.clone(), &[4]).unwrap()], &[]);
        assert!(r.is_err(), "{bad:?}");
    }
}
