//! The short way through the call path for dense calls (every operand contiguous, one shape,
//! the inputs of one dtype) against the general way: the same bits for every CPU map op and
//! dtype (new, `_out` and in-place outputs), the same aliasing rules, the same errors, and a
//! held-lock table left clean when a call fails half-way through its locks.

mod common;

use common::{bits, gen_values, make, params_for, poison, Lay};
use tensor_core::call::{map, Output};
use tensor_core::registry::registry;
use tensor_core::DeviceKind;
use tensor_core::Layout;
use tensor_ops::prelude::*;

const SHAPE: [usize; 2] = [3, 37];

/// Inputs of `op`'s arity: dense ones and the same values as strided views (which take the
/// general way).
fn inputs(arity: usize, dtype: DType, seed: u64) -> (Vec<Tensor>, Vec<Tensor>) {
    let n = SHAPE.iter().product();
    let vals: Vec<_> = (0..arity).map(|k| gen_values(dtype, n, seed + 31 * k as u64)).collect();
    let dense = vals.iter().map(|v| make(v, &SHAPE, dtype, Lay::Contiguous)).collect();
    let strided = vals.iter().map(|v| make(v, &SHAPE, dtype, Lay::Stepped)).collect();
    (dense, strided)
}

#[test]
fn every_cpu_map_op_and_dtype_gives_the_general_paths_bits() {
    let mut checked = 0;
    for (name, device, layout, dtypes) in registry().entries() {
        if device != DeviceKind::Cpu || layout != Layout::Strided {
            continue;
        }
        let set = registry().row_set(name, device, layout).unwrap();
        for dtype in dtypes {
            if set.get(dtype).unwrap().kernel.kind() != "cpu-map" {
                continue;
            }
            let spec = set.op;
            let params = params_for(spec);
            let (dense, strided) = inputs(spec.arity, dtype, 11);
            let d: Vec<&Tensor> = dense.iter().collect();
            let s: Vec<&Tensor> = strided.iter().collect();
            let what = format!("{name}({dtype})");
            let got = map(spec, &d, &params, Output::New).unwrap_or_else(|e| panic!("{what}: {e}")).unwrap();
            let want = map(spec, &s, &params, Output::New).unwrap().unwrap();
            assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()), "{what}");
            assert!(got.is_contiguous(), "{what}");
            assert_eq!(bits(&got), bits(&want), "{what}: new output");

            let out = common::empty_any(&SHAPE, want.dtype()).unwrap();
            poison(&out);
            map(spec, &d, &params, Output::Out(&out)).unwrap_or_else(|e| panic!("{what} out: {e}"));
            assert_eq!(bits(&out), bits(&want), "{what}: out");

            if want.dtype() == dtype {
                map(spec, &d, &params, Output::InPlace).unwrap_or_else(|e| panic!("{what} in place: {e}"));
                assert_eq!(bits(&dense[0]), bits(&want), "{what}: in place");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} (op, dtype) rows checked");
}

#[test]
fn an_input_that_is_the_output_is_read_before_it_is_written() {
    let a = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[4]).unwrap();
    let b = Tensor::from_vec(vec![10f32, 20., 30., 40.], &[4]).unwrap();
    tensor_ops::add_out(&a, &b, &a).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![11., 22., 33., 44.]);
    a.add_(&a).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![22., 44., 66., 88.]);
}

#[test]
fn a_partially_overlapping_output_reads_the_inputs_as_they_were() {
    // out is `a` shifted by one element in the same storage: the general way copies `a`.
    let base = Tensor::from_vec((0..9).map(|i| i as f32).collect(), &[9]).unwrap();
    let a = base.narrow(0, 0, 8).unwrap();
    let out = base.narrow(0, 1, 8).unwrap();
    let b = Tensor::ones(&[8], DType::F32, Device::Cpu).unwrap();
    tensor_ops::add_out(&a, &b, &out).unwrap();
    let want: Vec<f32> = std::iter::once(0.).chain((0..8).map(|i| i as f32 + 1.)).collect();
    assert_eq!(base.to_vec::<f32>().unwrap(), want);
}

#[test]
fn dense_calls_keep_the_dtype_rules() {
    // Float-only ops compute integers in f32; predicates give Bool; a wider out is cast into.
    let i = Tensor::from_vec(vec![0i32, 1, 2], &[3]).unwrap();
    let e = i.exp().unwrap();
    assert_eq!(e.dtype(), DType::F32);
    let f = Tensor::from_vec(vec![0f32, 1., 2.], &[3]).unwrap().exp().unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), f.to_vec::<f32>().unwrap());
    let lt = i.lt(&Tensor::from_vec(vec![1i32, 1, 1], &[3]).unwrap()).unwrap();
    assert_eq!(lt.to_vec::<bool>().unwrap(), vec![true, false, false]);
    let wide = Tensor::zeros(&[3], DType::F64, Device::Cpu).unwrap();
    tensor_ops::add_out(&i, &i, &wide).unwrap();
    assert_eq!(wide.to_vec::<f64>().unwrap(), vec![0., 2., 4.]);
    // 0-dim operands of one dtype.
    let s = Tensor::scalar(2.5, DType::F64).unwrap();
    assert_eq!(s.mul(&s).unwrap().to_vec::<f64>().unwrap(), vec![6.25]);
    // Empty operands.
    let z = Tensor::zeros(&[0, 4], DType::F32, Device::Cpu).unwrap();
    assert_eq!(z.add(&z).unwrap().shape(), &[0, 4]);
}

#[test]
fn dense_calls_report_the_general_paths_errors() {
    let a = Tensor::from_vec(vec![1.5f32, 2.5], &[2]).unwrap();
    let ints = Tensor::zeros(&[2], DType::I32, Device::Cpu).unwrap();
    let e = tensor_ops::add_out(&a, &a, &ints).unwrap_err();
    assert!(matches!(e, Error::InvalidOutput { op: "add", .. }), "{e}");
    assert!(e.to_string().contains("f32") && e.to_string().contains("i32"), "{e}");
    let short = Tensor::zeros(&[1], DType::F32, Device::Cpu).unwrap();
    let e = tensor_ops::add_out(&a, &a, &short).unwrap_err();
    assert!(matches!(e, Error::InvalidOutput { op: "add", .. }) && e.to_string().contains("[1]"), "{e}");
    let frozen = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
    frozen.storage().set_read_only();
    assert!(matches!(tensor_ops::add_out(&a, &a, &frozen).unwrap_err(), Error::ReadOnly { op: "add" }));
}

#[test]
fn a_call_failing_half_way_through_its_locks_leaves_no_lock_behind() {
    // The read-only output is locked after (or before) the inputs, by address: either way
    // the failed call must release what it took and record nothing, so the inputs can be
    // written next, on this thread and on another.
    for _ in 0..8 {
        let a = Tensor::from_vec(vec![1f32, 2.], &[2]).unwrap();
        let b = Tensor::from_vec(vec![3f32, 4.], &[2]).unwrap();
        let frozen = Tensor::zeros(&[2], DType::F32, Device::Cpu).unwrap();
        frozen.storage().set_read_only();
        assert!(tensor_ops::add_out(&a, &b, &frozen).is_err());
        a.add_(&b).unwrap();
        b.add_(&a).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![4., 6.]);
        std::thread::scope(|s| {
            s.spawn(|| b.mul_(&a).unwrap());
        });
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![28., 60.]);
        // A guard the thread held before the failed call is still known afterwards: a
        // write into its storage is an error, not a wait for itself.
        let guard = a.storage().read().unwrap();
        assert!(tensor_ops::add_out(&a, &b, &frozen).is_err());
        assert!(matches!(a.add_(&b).unwrap_err(), Error::Locked { op: "add", .. }));
        drop(guard);
        a.add_(&b).unwrap();
    }
}
