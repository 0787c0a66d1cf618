//! Sparse tensors on `Device::Cuda` end to end (issue 34's conversions on both devices):
//! the CUDA rows of the sparse layouts' steps through the core's conversions — to_dense,
//! coalesce, to_sparse, to_sparse_csr, to_sparse_coo — for every dtype over random COO
//! tensors (nnz 0, duplicates, unsorted, hybrid dense dims, several sort tiles), equal to
//! the CPU bit for bit (values, indices, row pointers, the coalesced flag); and a bad index
//! handed to the device's step directly (the constructors refuse them) — to_dense's, or a
//! gather's position or index — is an `Err` that writes nothing outside the output.

use tensor_core::registry::sparse::{COO_TO_DENSE, CROW_TO_ROWS, DENSE_GATHER, GATHER_ROWS, ROWS_TO_CROW};
use tensor_core::registry::{OpSpec, RawTensor};
use tensor_core::{lock_many, Access};
use tensor_kernels_cuda::sparse::{run_step, DeviceExec, Operand};
use tensor_ops::prelude::*;

use super::cases::{cases, naive_unique};
use super::common::bits;
use super::DEV;

/// `t` on the CPU.
pub fn cpu(t: &Tensor) -> Tensor {
    t.to_device(Device::Cpu).unwrap()
}

/// `got` (on the device) and `want` (CPU) hold the same layout, components and flag.
pub fn assert_same(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.device(), DEV, "{what}: left the device");
    assert_eq!((got.layout(), got.shape()), (want.layout(), want.shape()), "{what}");
    match want.layout() {
        Layout::Strided => assert_eq!(bits(&cpu(got)), bits(want), "{what}: dense"),
        Layout::SparseCoo => {
            assert_eq!(got.is_coalesced().unwrap(), want.is_coalesced().unwrap(), "{what}: coalesced flag");
            assert_eq!(bits(&cpu(&got.indices().unwrap())), bits(&want.indices().unwrap()), "{what}: indices");
            assert_eq!(bits(&cpu(&got.values().unwrap())), bits(&want.values().unwrap()), "{what}: values");
        }
        _ => {
            let (g, w) = (got.crow_indices().unwrap(), want.crow_indices().unwrap());
            assert_eq!(bits(&cpu(&g)), bits(&w), "{what}: crow_indices");
            let (g, w) = (got.col_indices().unwrap(), want.col_indices().unwrap());
            assert_eq!(bits(&cpu(&g)), bits(&w), "{what}: col_indices");
            assert_eq!(bits(&cpu(&got.values().unwrap())), bits(&want.values().unwrap()), "{what}: values");
        }
    }
}

/// Every conversion of random COO tensors of every dtype on the device equals the CPU's.
pub fn sparse_conversions_match_the_cpu_for_every_dtype() {
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        for c in cases(dtype, 0xc0de + k as u64) {
            let what = format!("{dtype} {:?} sd {} nnz {}", c.shape, c.sd, c.nnz());
            let host = c.tensor();
            // built on the device from device components, and moved there
            let built =
                Tensor::sparse_coo(&c.indices().to_device(DEV).unwrap(), &c.values().to_device(DEV).unwrap(), &c.shape)
                    .unwrap();
            let g = host.to_device(DEV).unwrap();
            assert_same(&built.to_dense().unwrap(), &host.to_dense().unwrap(), &format!("{what}: to_dense (built)"));
            let dense = host.to_dense().unwrap();
            assert_same(&g.to_dense().unwrap(), &dense, &format!("{what}: to_dense"));
            let co = host.coalesce().unwrap();
            let gco = g.coalesce().unwrap();
            assert_same(&gco, &co, &format!("{what}: coalesce"));
            assert_eq!(
                cpu(&gco.indices().unwrap()).to_vec::<i64>().unwrap(),
                naive_unique(&c),
                "{what}: unique columns"
            );
            assert_same(&gco.to_dense().unwrap(), &dense, &format!("{what}: to_dense of the coalesced"));
            let gd = dense.to_device(DEV).unwrap();
            for sd in 1..=c.shape.len() {
                assert_same(
                    &gd.to_sparse(sd).unwrap(),
                    &dense.to_sparse(sd).unwrap(),
                    &format!("{what}: to_sparse({sd})"),
                );
            }
            if c.sd == 2 {
                let csr = host.to_sparse_csr().unwrap();
                let gcsr = g.to_sparse_csr().unwrap();
                assert_same(&gcsr, &csr, &format!("{what}: to_sparse_csr"));
                assert_same(
                    &gd.to_sparse_csr_hybrid(gd.ndim() - 2).unwrap(),
                    &dense.to_sparse_csr_hybrid(dense.ndim() - 2).unwrap(),
                    &format!("{what}: dense → csr"),
                );
                assert_same(
                    &gcsr.to_sparse_coo().unwrap(),
                    &csr.to_sparse_coo().unwrap(),
                    &format!("{what}: csr → coo"),
                );
                assert_same(&gcsr.to_dense().unwrap(), &dense, &format!("{what}: csr → dense"));
            }
        }
    }
}

/// Runs step `spec` of the device's rows directly (no constructor in front).
pub fn step(spec: &'static OpSpec, out: &Tensor, inputs: &[&Tensor], params: &[Scalar]) -> tensor_core::Result<()> {
    let mut wants: Vec<_> = inputs.iter().map(|t| (t.storage(), Access::Read)).collect();
    wants.push((out.storage(), Access::Write));
    let locks = lock_many(&wants).unwrap();
    let operand = |r: &RawTensor<'_>| (r.ptr as usize as u64, r.dtype, r.shape.to_vec());
    let o = operand(&out.raw(locks.base(out.storage())));
    let ins: Vec<_> = inputs.iter().map(|t| operand(&t.raw(locks.base(t.storage())))).collect();
    let ins: Vec<Operand<'_>> = ins.iter().map(op).collect();
    let e = DeviceExec::of(DEV)?;
    // SAFETY: the operands are the locked device storages of live tensors on DEV; the
    // output is a tensor of its own.
    unsafe { run_step(&e, spec, &op(&o), &ins, params) }
}

/// An [`Operand`] of a locked raw view's (address, dtype, shape).
fn op((addr, dtype, shape): &(u64, DType, Vec<usize>)) -> Operand<'_> {
    Operand { addr: *addr, dtype: *dtype, shape: &shape[..] }
}

/// Out-of-range indices and malformed row pointers given to the device's steps are `Err`s,
/// and the elements around the output keep their values.
pub fn sparse_steps_with_bad_indices_are_errors_on_the_device() {
    for dtype in [DType::F32, DType::F64, DType::I64, DType::I8, DType::Bool, DType::BF16] {
        for (bad, coalesced) in [(-1i64, false), (3, false), (3, true), (i64::MAX, true)] {
            let idx = Tensor::from_vec(vec![0i64, 2, bad, 1], &[1, 4]).unwrap().to_device(DEV).unwrap();
            let vals = Tensor::ones(&[4, 2], dtype, DEV).unwrap();
            let guarded = Tensor::zeros(&[10], dtype, DEV).unwrap();
            let out = guarded.narrow(0, 2, 6).unwrap().reshape(&[3, 2]).unwrap();
            let r = step(&COO_TO_DENSE, &out, &[&idx, &vals], &[Scalar::Bool(coalesced)]);
            assert!(matches!(r, Err(tensor_core::Error::OutOfBounds { .. })), "{dtype} {bad}: {r:?}");
            let g = cpu(&guarded).to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert!(g[..2].iter().chain(&g[8..]).all(|&x| x == 0.0), "{dtype} {bad}: a guard was written: {g:?}");
        }
    }
    // the binary ops' gathers: a position past the source's rows, an index outside the
    // dense tensor's sizes
    for dtype in [DType::F32, DType::I8, DType::BF16] {
        let src = Tensor::ones(&[3, 2], dtype, DEV).unwrap();
        for (bad, base) in [(4i64, 1i64), (i64::MAX, -5)] {
            let positions = Tensor::from_vec(vec![1i64, bad, 0], &[3]).unwrap().to_device(DEV).unwrap();
            let guarded = Tensor::zeros(&[10], dtype, DEV).unwrap();
            let out = guarded.narrow(0, 2, 6).unwrap().reshape(&[3, 2]).unwrap();
            let r = step(&GATHER_ROWS, &out, &[&src, &positions], &[Scalar::Int(base)]);
            assert!(matches!(r, Err(tensor_core::Error::OutOfBounds { .. })), "{dtype} {bad}: {r:?}");
            let g = cpu(&guarded).to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert!(g[..2].iter().chain(&g[8..]).all(|&x| x == 0.0), "{dtype} {bad}: a guard was written: {g:?}");
            let idx = Tensor::from_vec(vec![0i64, bad, 2], &[1, 3]).unwrap().to_device(DEV).unwrap();
            let r = step(&DENSE_GATHER, &out, &[&src, &idx], &[]);
            assert!(matches!(r, Err(tensor_core::Error::OutOfBounds { .. })), "{dtype} {bad}: {r:?}");
        }
    }
    let crow = Tensor::zeros(&[4], DType::I64, DEV).unwrap();
    let rows = Tensor::from_vec(vec![0i64, 2, 1], &[3]).unwrap().to_device(DEV).unwrap();
    assert!(step(&ROWS_TO_CROW, &crow, &[&rows], &[]).is_err(), "unsorted rows");
    let bad = Tensor::from_vec(vec![0i64, 3, 1, 3], &[4]).unwrap().to_device(DEV).unwrap();
    let out = Tensor::zeros(&[3], DType::I64, DEV).unwrap();
    assert!(step(&CROW_TO_ROWS, &out, &[&bad], &[]).is_err(), "falling crow_indices");
}
