//! Every case of the bench set runs through tensor-ops at a tiny size and gives the
//! expected values for the layout-changing ones.

use tensor_benches::cases::{Case, Op};
use tensor_benches::ours;
use tensor_ops::prelude::*;

#[test]
fn every_case_runs_at_a_tiny_size() {
    for dt in [DType::F32, DType::F16, DType::I64] {
        for op in Op::ALL {
            if dt != DType::F32 && matches!(op, Op::ExpNew | Op::ExpOut | Op::ReluNew | Op::ReluOut | Op::Fill) {
                continue;
            }
            if op == Op::QuantizePerChannel {
                continue; // quantized dtypes only (below)
            }
            let case = Case::new(op, dt, 4096);
            let mut call = ours::prepare(&case).unwrap_or_else(|e| panic!("{}: {e}", case.key()));
            call().unwrap_or_else(|e| panic!("{}: {e}", case.key()));
        }
    }
    // The quantized cases (cpu_set's qint8 ones), in every quantized dtype.
    for dt in DType::QUANTIZED {
        for op in [Op::CastFromF32, Op::QuantizePerChannel, Op::CastToF32, Op::AddNew, Op::AddOut, Op::ReluNew] {
            let case = Case::new(op, dt, 4096);
            let mut call = ours::prepare(&case).unwrap_or_else(|e| panic!("{}: {e}", case.key()));
            call().unwrap_or_else(|e| panic!("{}: {e}", case.key()));
        }
        let bad = Case::new(Op::Transpose, dt, 4096);
        assert!(ours::prepare(&bad).is_err(), "{}", bad.key());
    }
}

#[test]
fn the_benched_views_are_strided_as_intended() {
    let a = ours::input(DType::F32, &[4, 6]).unwrap();
    let host = a.to_vec::<f32>().unwrap();
    let t = a.t().unwrap().contiguous().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(t, (0..24).map(|k| host[(k % 4) * 6 + k / 4]).collect::<Vec<_>>());
    let s = a.slice(1, 0, 6, 2).unwrap().contiguous().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(s, (0..12).map(|k| host[(k / 3) * 6 + (k % 3) * 2]).collect::<Vec<_>>());
}

#[test]
fn cuda_perf_without_a_gpu_exits_zero() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuda-perf")).arg("--quick").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
