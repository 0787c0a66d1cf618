//! Sparse tensors in the core alone (no backend; Miri runs this): the data-less stand-in
//! storage refuses every lock, strided-only methods are `Error::Layout`, a step with no row
//! is `NoKernel` naming the layout, and a step row registered here runs through the call
//! path's `run_components` tail (`ComponentKernel`).

use tensor_core::registry::sparse::{ComponentKernel, COO_TO_DENSE};
use tensor_core::registry::{KernelRow, PreparedCall};
use tensor_core::{DType, DeviceKind, Error, Layout, Result, Tensor};

/// A scalar f64 scatter-add for `sparse_coo_to_dense` (the test's own backend row).
///
/// # Safety
/// The `ComponentFn` contract: operands locked, contiguous, in bounds; output disjoint.
unsafe fn scatter_f64(call: &PreparedCall<'_>) -> Result<()> {
    let (ind, val, out) = (&call.inputs[0], &call.inputs[1], &call.outputs[0]);
    let (sd, nnz) = (ind.shape[0], ind.shape[1]);
    for j in 0..nnz {
        let mut p = 0usize;
        for d in 0..sd {
            // SAFETY: `d * nnz + j` < sd * nnz, the contiguous indices' length.
            let i = unsafe { *(ind.ptr as *const i64).add(d * nnz + j) } as usize;
            assert!(i < out.shape[d]);
            p = p * out.shape[d] + i;
        }
        // SAFETY: `p` < the dense element count (each index checked above); `j` < nnz.
        unsafe { *(out.ptr as *mut f64).add(p) += *(val.ptr as *const f64).add(j) };
    }
    Ok(())
}

tensor_core::inventory::submit! {
    KernelRow {
        op: &COO_TO_DENSE,
        device: DeviceKind::Cpu,
        layout: Layout::SparseCoo,
        dtype: DType::F64,
        kernel: &ComponentKernel { kind: "test-sparse", func: scatter_f64 },
    }
}

fn coo() -> Tensor {
    let i = Tensor::from_vec(vec![0i64, 1, 1, 2, 0, 0], &[2, 3]).unwrap();
    let v = Tensor::from_vec(vec![1f64, 2., 3.], &[3]).unwrap();
    Tensor::sparse_coo(&i, &v, &[2, 3]).unwrap()
}

#[test]
fn a_registered_step_runs_through_the_tail() {
    let d = coo().to_dense().unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), vec![0., 0., 1., 5., 0., 0.]);
    // another dtype has no row here: NoKernel under the sparse layout, never a panic
    let f = coo().to_dtype(DType::F32).unwrap();
    assert!(matches!(f.to_dense(), Err(Error::NoKernel { layout: Layout::SparseCoo, .. })));
}

#[test]
fn the_stand_in_storage_refuses_every_access() {
    let s = coo();
    assert!(matches!(s.storage().read(), Err(Error::Layout { layout: Layout::SparseCoo, .. })));
    assert!(matches!(s.storage().write(), Err(Error::Layout { .. })));
    assert!(matches!(s.storage().ensure_allocated(), Err(Error::Layout { .. })));
    assert!(matches!(tensor_core::lock_many(&[(s.storage(), tensor_core::Access::Read)]), Err(Error::Layout { .. })));
    for r in [s.view(&[6]).map(drop), s.as_strided(&[1], &[1], 0).map(drop), s.to_vec::<f64>().map(drop), s.fill_(0)] {
        assert!(matches!(r, Err(Error::Layout { layout: Layout::SparseCoo, .. })), "{r:?}");
    }
    // copy into a strided tensor converts; copy into the sparse one is refused
    let dst = Tensor::zeros(&[2, 3], DType::F64, tensor_core::Device::Cpu).unwrap();
    dst.copy_(&s).unwrap();
    assert_eq!(dst.to_vec::<f64>().unwrap(), vec![0., 0., 1., 5., 0., 0.]);
    assert!(matches!(s.copy_(&dst), Err(Error::Layout { .. })));
    // the components are ordinary tensors
    assert_eq!(s.values().unwrap().to_vec::<f64>().unwrap(), vec![1., 2., 3.]);
    assert!(s.deep_clone().unwrap().is_sparse());
}
