//! The CUDA path of every registered op, checked three ways:
//!
//! - (a) NVRTC compiles the kernels of every registered `Device::Cuda` row (op × dtype ×
//!   layout class) and the copy/cast/fill/transpose kernels for `compute_80` and `sm_90`,
//!   with no error, warning or spill (no GPU needed; without NVRTC it skips, unless `CI`):
//!   every op body and every template × dtype combination at least once (the covering
//!   sample of `tensor_cuda_testing::coverage`), every kernel with `TOPS_KERNEL_CHECK=all`.
//! - (b) The CPU shim runs the plans the CUDA launchers make (`tensor_kernels_cuda::plan`)
//!   over the generated CUDA C, compiled by the host C++ compiler, and compares with the
//!   CPU ops, for every op × dtype on contiguous, misaligned, strided (negative, transposed)
//!   outputs and inputs, broadcast inputs, deep (host-split) plans and the 64-bit kernels;
//!   and the registered CUDA copy/fill plans (memcpy, tiled transposes, casts, fills).
//! - (c) Without a driver, CUDA tensors give error values (checked on every machine). The
//!   same ops end to end through `Device::Cuda` — on a GPU, or on the CPU-backed stand-in
//!   of the driver and NVRTC — are in `cuda_device.rs`.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{assert_close, empty_with, input, params_for, values, Lay};
use tensor_core::registry::{registry, KernelRow, OpSpec};
use tensor_core::{lock_many, Access, DeviceKind, Tensor};
use tensor_cuda_testing::{check, coverage, shim};
use tensor_kernels_cuda::kernel::CudaMapKernel;
use tensor_kernels_cuda::{nvrtc, plan, runtime};
use tensor_ops::by_spec::call_map_out;
use tensor_ops::prelude::*;

/// A user op with a parameter, so parameter passing is covered too.
#[tensor_op(dtypes = [f16, bf16, f32, f64])]
pub fn cuda_leaky<T: Float>(x: T, #[param] slope: f32) -> T {
    if x > T::zero() {
        x
    } else {
        x * T::from_f32(slope)
    }
}

/// Three inputs, an integer parameter.
#[tensor_op(dtypes = [int, f32, f64])]
pub fn cuda_axpbk<T: Num>(a: T, x: T, b: T, #[param] k: i64) -> T {
    let y: T = a * x;
    y + b + T::from_i64(k)
}

/// A predicate with two parameters.
#[tensor_op(dtypes = [numeric])]
pub fn cuda_between<T: Num>(x: T, #[param] lo: f64, #[param] hi: f64) -> bool {
    x >= T::from_f64(lo) && !(x > T::from_f64(hi))
}

/// Every (op spec, dtype, row) with a CUDA elementwise kernel.
fn cuda_rows() -> Vec<(&'static OpSpec, DType, &'static KernelRow)> {
    common::cuda_rows_of::<CudaMapKernel>()
}

// ------------------------------------------------------------------ (a) NVRTC

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn every_registered_cuda_kernel_compiles_with_nvrtc() {
    match nvrtc::nvrtc() {
        Ok(lib) => println!("NVRTC {}.{} from {:?}", lib.version.0, lib.version.1, lib.path),
        Err(e) => {
            panic!("{e}: run .ci/install-nvrtc.sh (where the build finds no NVRTC, this test is reported as ignored)")
        }
    }
    let rows = || inventory::iter::<KernelRow>.into_iter().filter(|r| r.device == DeviceKind::Cuda);
    let specs = check::specs_for(rows());
    let checked = check::checked_specs_for(rows());
    // The sample compiles every body and every template × dtype combination of the suite.
    let missing = coverage::uncovered(&specs, &checked);
    assert!(
        missing.is_empty(),
        "the check leaves out {} of the suite: {:?}",
        missing.len(),
        &missing[..missing.len().min(8)]
    );
    let reports = check::compile_specs(&checked).unwrap_or_else(|e| panic!("{e}"));
    for r in reports.iter().filter(|r| r.arch.starts_with("sm_")) {
        println!("{:>3} registers  {}  {}", r.registers, r.arch, r.name);
    }
    assert_eq!(reports.len(), checked.len() * check::CHECK_ARCHS.len());
    // three layout classes for every registered CUDA row
    let rows = cuda_rows();
    assert!(!rows.is_empty());
    assert!(specs.len() >= rows.len() * 3, "{} specs for {} rows", specs.len(), rows.len());
    println!(
        "{} of {} kernels x {} archs compiled ({:?}; {}=all for every kernel)",
        checked.len(),
        specs.len(),
        check::CHECK_ARCHS.len(),
        coverage::Coverage::from_env(),
        coverage::ENV
    );
}

// ------------------------------------------------------------------ (b) the CPU shim

/// One planned shim run: the plan writes `got`; `want` holds the CPU result.
struct Case {
    what: String,
    steps: Vec<plan::Step>,
    got: Tensor,
    want: Tensor,
    _keep: Vec<Tensor>,
    exact: bool,
}

/// Plans `row`'s kernel into `out` from `inputs` (host memory stands in for the device).
fn plan_map_case(
    row: &KernelRow,
    out: &Tensor,
    inputs: &[&Tensor],
    params: &[Scalar],
) -> (Vec<plan::Step>, Vec<Tensor>) {
    let Some(k) = row.kernel.as_any().downcast_ref::<CudaMapKernel>() else { panic!("not a CUDA row") };
    let staged: Vec<Tensor> = inputs.iter().map(|t| t.broadcast_to(out.shape()).unwrap()).collect();
    let mut wants: Vec<_> = staged.iter().map(|t| (t.storage(), Access::Read)).collect();
    wants.push((out.storage(), Access::Write));
    let locks = lock_many(&wants).unwrap();
    let out_raw = out.raw(locks.base(out.storage()));
    let in_raw: Vec<_> = staged.iter().map(|t| t.raw(locks.base(t.storage()))).collect();
    // Quantized operands' arithmetic, output first (what the call path hands the kernel).
    let mut quant: tensor_core::quant::OperandAffines = Default::default();
    for (slot, t) in quant.iter_mut().zip(std::iter::once(out).chain(&staged)) {
        *slot = t.quantizer().map(|q| q.affine(0));
    }
    let quant = quant.iter().any(Option::is_some).then_some(&quant);
    let steps = plan::plan_map(k, &out_raw, &in_raw, params, quant, 5).unwrap();
    drop(locks);
    (steps, staged)
}

#[allow(clippy::too_many_arguments)]
fn map_case(
    what: String,
    spec: &'static OpSpec,
    row: &KernelRow,
    inputs: Vec<Tensor>,
    out_lay: Lay,
    shape: &[usize],
    out_dtype: DType,
    widen: bool,
) -> Case {
    let params = params_for(spec);
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let want = empty_with(out_lay, shape, out_dtype);
    call_map_out(spec, &refs, &params, &want).unwrap_or_else(|e| panic!("{what}: CPU: {e}"));
    let got = empty_with(out_lay, shape, out_dtype);
    common::poison(&got);
    let (mut steps, staged) = plan_map_case(row, &got, &refs, &params);
    if widen {
        steps = plan::widen_index(&steps);
    }
    let mut keep = inputs;
    keep.extend(staged);
    Case { what, steps, got, want, _keep: keep, exact: false }
}

fn map_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let shape = [5usize, 37];
    for (spec, d, row) in cuda_rows() {
        let out_dtype = if spec.bool_output { DType::Bool } else { d };
        let ar = spec.arity;
        let mk = |lays: &[Lay], shape: &[usize]| -> Vec<Tensor> {
            (0..ar).map(|i| input(d, shape, lays[i.min(lays.len() - 1)], 17 * i as u64 + 3)).collect()
        };
        let name = |what: &str| format!("{} {d} {what}", spec.name);
        use Lay::*;
        cases.push(map_case(
            name("contiguous"),
            spec,
            row,
            mk(&[Contiguous], &shape),
            Contiguous,
            &shape,
            out_dtype,
            false,
        ));
        cases.push(map_case(name("misaligned"), spec, row, mk(&[Offset], &shape), Offset, &shape, out_dtype, false));
        cases.push(map_case(
            name("strided"),
            spec,
            row,
            mk(&[Flipped, Permuted, Stepped], &shape),
            Transposed,
            &shape,
            out_dtype,
            false,
        ));
        cases.push(map_case(
            name("strided 64-bit"),
            spec,
            row,
            mk(&[Transposed, Flipped, Contiguous], &shape),
            Stepped,
            &shape,
            out_dtype,
            true,
        ));
        // more elements than the grid (five blocks of 256 threads, four elements each) takes
        // in a round: whole rounds, a partial one, every thread's four elements
        let long = [23usize, 301];
        cases.push(map_case(
            name("strided, several rounds"),
            spec,
            row,
            mk(&[Stepped, Flipped], &long),
            Stepped,
            &long,
            out_dtype,
            false,
        ));
        // broadcast: the last input is a row (strided kernel) or a single element (scalar mask)
        for (bshape, tag) in [(vec![37usize], "row"), (vec![1usize], "element")] {
            let mut ins = mk(&[Contiguous], &shape);
            ins[ar - 1] = input(d, &bshape, Contiguous, 99).expand(&shape).unwrap();
            cases.push(map_case(
                name(&format!("broadcast {tag}")),
                spec,
                row,
                ins,
                Contiguous,
                &shape,
                out_dtype,
                false,
            ));
        }
        // 10 dims that cannot coalesce: split on the host into 8-dim launches
        let deep = [2usize; 10];
        cases.push(map_case(
            name("deep"),
            spec,
            row,
            mk(&[Permuted, Contiguous], &deep),
            Contiguous,
            &deep,
            out_dtype,
            false,
        ));
        // a single element
        cases.push(map_case(name("0-dim"), spec, row, mk(&[Contiguous], &[]), Contiguous, &[], out_dtype, false));
    }
    // mixed storage dtypes: converted on load to the kernel dtype, on store to the output
    let reg = registry();
    let mixed: [(&str, &[DType], DType, DType); 4] = [
        ("add", &[DType::I32, DType::F32], DType::F32, DType::F64),
        ("add", &[DType::F16, DType::BF16], DType::F32, DType::F16),
        ("exp", &[DType::I16], DType::F32, DType::BF16),
        ("lt", &[DType::U8, DType::I64], DType::I64, DType::Bool),
    ];
    for (op, ins, kd, od) in mixed {
        let Some(spec) = reg.op(op) else { continue };
        let row = reg.lookup(op, Device::Cuda(0), tensor_ops::Layout::Strided, kd).unwrap();
        let inputs: Vec<Tensor> =
            ins.iter().enumerate().map(|(i, &d)| input(d, &shape, Lay::Transposed, i as u64)).collect();
        cases.push(map_case(format!("{op} {ins:?} -> {od}"), spec, row, inputs, Lay::Contiguous, &shape, od, false));
    }
    cases
}

fn copy_case(what: String, src: Tensor, dst_lay: Lay, dst_dtype: DType, shape: &[usize]) -> Case {
    let want = empty_with(dst_lay, shape, dst_dtype);
    want.copy_(&src).unwrap();
    let got = empty_with(dst_lay, shape, dst_dtype);
    common::poison(&got);
    let src_b = src.broadcast_to(shape).unwrap();
    let steps = {
        let locks = lock_many(&[(src_b.storage(), Access::Read), (got.storage(), Access::Write)]).unwrap();
        plan::plan_copy(&got.raw(locks.base(got.storage())), &src_b.raw(locks.base(src_b.storage())), 5).unwrap()
    };
    Case { what, steps, got, want, _keep: vec![src, src_b], exact: true }
}

fn data_movement_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let shape = [3usize, 40, 33];
    for d in DType::ALL {
        for lay in [Lay::Contiguous, Lay::Transposed, Lay::Permuted, Lay::Flipped, Lay::Offset] {
            let src = input(d, &shape, lay, 5);
            cases.push(copy_case(format!("copy {d} from {lay:?}"), src, Lay::Contiguous, d, &shape));
        }
        // 4-D transpose whose batch dims cannot coalesce: host loop over the outer one
        let src = input(d, &[2, 3, 20, 17], Lay::Contiguous, 8).permute(&[1, 0, 3, 2]).unwrap();
        cases.push(copy_case(format!("copy {d} 4-D transpose"), src, Lay::Contiguous, d, &[3, 2, 17, 20]));
        let src = input(d, &[33], Lay::Contiguous, 6);
        cases.push(copy_case(format!("copy {d} broadcast"), src, Lay::Transposed, d, &[4, 33]));
        for dst in DType::ALL.into_iter().filter(|&x| x != d) {
            let src = input(d, &shape, Lay::Contiguous, 7);
            cases.push(copy_case(format!("cast {d} -> {dst}"), src, Lay::Offset, dst, &shape));
            let src = input(d, &shape, Lay::Flipped, 7);
            cases.push(copy_case(format!("cast {d} -> {dst} strided"), src, Lay::Contiguous, dst, &shape));
        }
        for lay in [Lay::Contiguous, Lay::Offset, Lay::Stepped] {
            let value = if d.is_float() { Scalar::Float(-2.75) } else { Scalar::Int(-3) };
            let want = empty_with(lay, &shape, d);
            want.fill_(value).unwrap();
            let got = empty_with(lay, &shape, d);
            let steps = {
                let mut g = got.storage().write().unwrap();
                plan::plan_fill(&got.raw(g.as_mut_ptr()), value, 5).unwrap()
            };
            cases.push(Case { what: format!("fill {d} {lay:?}"), steps, got, want, _keep: vec![], exact: true });
        }
    }
    cases
}

fn shim_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-shim")
}

fn run_cases(cases: &[Case]) {
    let specs: Vec<_> = cases
        .iter()
        .flat_map(|c| c.steps.iter())
        .filter_map(|s| if let plan::Step::Kernel(l) = s { Some(l.spec.clone()) } else { None })
        .collect();
    let lib = match shim::build(&specs, &shim_dir()) {
        Ok(lib) => lib,
        Err(e) => panic!("{e}"),
    };
    for c in cases {
        // SAFETY: the plans address the host storages of `c`'s tensors, alive in `c`.
        unsafe { lib.run(&c.steps) }.unwrap_or_else(|e| panic!("{}: {e}", c.what));
        assert_close(&values(&c.got), &values(&c.want), c.got.dtype(), c.exact, &c.what);
    }
    println!("{} cases, {} kernels", cases.len(), specs.len());
}

static SHIM_LOCK: OnceLock<std::sync::Mutex<()>> = OnceLock::new();

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn shim_runs_every_registered_op_like_the_cpu() {
    let _g = SHIM_LOCK.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    run_cases(&map_cases());
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn shim_runs_registered_copies_casts_transposes_and_fills_like_the_cpu() {
    let _g = SHIM_LOCK.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    run_cases(&data_movement_cases());
}

// ------------------------------------------------------------------ (c) no driver

fn gpu() -> Option<Device> {
    match runtime::init() {
        Ok(info) => {
            println!("CUDA: {} device(s), NVRTC {:?}", info.devices, info.nvrtc);
            Some(Device::Cuda(0))
        }
        Err(e) => {
            println!("no CUDA device: {e}");
            None
        }
    }
}

#[test]
fn cuda_tensors_without_a_driver_are_error_values() {
    // Lazy: creating is fine everywhere; the first allocation initialises CUDA.
    let t = Tensor::empty(&[4], DType::F32, Device::Cuda(0)).unwrap();
    match t.fill_(1.0f32) {
        Ok(()) => assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0; 4]),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("cuda:"), "{msg}");
            assert!(gpu().is_none(), "a GPU is present but fill_ failed: {msg}");
            println!("no driver: fill_ returned the error value {msg:?}");
        }
    }
}
