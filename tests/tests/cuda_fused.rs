//! Fused chains on CUDA without a GPU (issue 12): the kernel the CUDA runner generates for a
//! chain (one `__device__` function from the nodes' functions) is compiled by NVRTC and run
//! on the CPU shim over the plans the runner makes, for random chains of random dtypes,
//! broadcast shapes and layouts; the values must match the CPU's fused (= eager) result.

mod chains;
mod common;
mod shim;

use chains::{case, fused_expr, leaf_tensors, Case};
use common::{assert_close, values};
use proptest::strategy::{Strategy, ValueTree};
use tensor_core::call::fused::{plan_nodes, FusedCall};
use tensor_kernels_cuda::kernel::CudaReduceKernel;
use tensor_kernels_cuda::reduce_codegen::{ChainSource, ReduceFn, ReducePass};
use tensor_kernels_cuda::{codegen::KernelSpec, fused, plan};
use tensor_ops::fuse::{Expr, FlatChain};
use tensor_ops::prelude::*;

/// The core's chain of a case (what `Expr` evaluates: the nodes the result depends on).
fn chain_of(c: &Case, leaves: &[Tensor]) -> FlatChain {
    fused_expr(c, leaves).to_chain().expect("a chain with a node")
}

/// Plans the CUDA runner's launches for `c` into a new host output (the shim's "device").
fn plan_case(c: &Case, leaves: &[Tensor], what: String) -> Option<(shim::Planned, Vec<KernelSpec<'static>>)> {
    plan_flat(&chain_of(c, leaves), what)
}

/// Plans the CUDA runner's launches for `flat` into a new poisoned host output; `None`
/// when the chain has no CUDA plan.
fn plan_flat(flat: &FlatChain, what: String) -> Option<(shim::Planned, Vec<KernelSpec<'static>>)> {
    let refs: Vec<&Tensor> = flat.leaves.iter().collect();
    let (planned, dtype, shape) = plan_nodes(&flat.chain(&refs, None), Device::Cuda(0)).ok()?;
    let out = Tensor::empty(&shape, dtype, Device::Cpu).unwrap();
    common::poison(&out);
    let staged: Vec<Tensor> = flat.leaves.iter().map(|t| t.broadcast_to(&shape).unwrap()).collect();
    let call = FusedCall { nodes: &planned, consts: &flat.consts, reduce: None };
    let steps = shim::with_raw(&out, &staged, |out_raw, in_raw| fused::plan_chain(&call, out_raw, in_raw, 3))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let specs =
        steps.iter().filter_map(|s| if let plan::Step::Kernel(l) = s { Some(l.spec.clone()) } else { None }).collect();
    Some((shim::planned(what, steps, out, staged), specs))
}

/// Random chains whose every node has a row (the ones an eager chain could run).
fn cases(n: usize) -> Vec<Case> {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut v = Vec::new();
    while v.len() < n {
        let mut c = case().new_tree(&mut runner).unwrap().current();
        c.reduce = None;
        let flat = chain_of(&c, &leaf_tensors(&c));
        let refs: Vec<&Tensor> = flat.leaves.iter().collect();
        if plan_nodes(&flat.chain(&refs, None), Device::Cpu).is_ok() {
            v.push(c);
        }
    }
    v
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_chain_kernels_run_on_the_shim_like_the_cpu() {
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for (i, c) in cases(120).iter().enumerate() {
        let leaves = leaf_tensors(c);
        // the chain on the CPU, fused (= the eager chain, bit for bit)
        let cpu = chain_of(c, &leaves).run(None, None).unwrap().unwrap();
        let what = format!("case {i}: {c:?}");
        let (planned, _) = plan_case(c, &leaves, what.clone()).expect("a CUDA plan");
        calls.push(planned);
        wants.push((what, cpu));
    }
    shim::run_all(&calls);
    for (call, (what, cpu)) in calls.iter().zip(&wants) {
        let exact = !cpu.dtype().is_float();
        assert_close(&values(&call.out), &values(cpu), cpu.dtype(), exact, what);
    }
    // and the public API builds the same chain on the CPU
    let c = &cases(1)[0];
    let leaves = leaf_tensors(c);
    assert!(fused_expr(c, &leaves).eval().is_ok());
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_chain_kernels_compile_with_nvrtc() {
    let mut specs = Vec::new();
    for (i, c) in cases(40).iter().enumerate() {
        let leaves = leaf_tensors(c);
        let (_, s) = plan_case(c, &leaves, format!("case {i}")).expect("a CUDA plan");
        specs.extend(s);
    }
    // every layout class of one chain (contiguous, strided 32- and 64-bit)
    let a = Tensor::from_vec((0..64).map(|i| i as f32).collect(), &[8, 8]).unwrap();
    let leaf = (DType::F32, vec![8, 8], common::Lay::Contiguous, 0);
    let c = Case { leaves: vec![leaf], nodes: vec![("mul", vec![0, 0]), ("relu", vec![1])], reduce: None };
    for leaf in [a.clone(), a.t().unwrap()] {
        let (p, s) = plan_case(&c, &[leaf], "layouts".into()).unwrap();
        specs.extend(s.iter().cloned());
        specs.extend(plan::widen_index(&p.steps).iter().filter_map(|s| match s {
            plan::Step::Kernel(l) => Some(l.spec.clone()),
            _ => None,
        }));
    }
    specs.sort_by_key(|s| format!("{s:?}"));
    specs.dedup();
    assert!(specs.len() >= 30, "{} kernels", specs.len());
    shim::nvrtc_compiles_specs(&specs);
}

/// The chain source a fused reduction's kernel reads (the core's planned nodes, as the CUDA
/// runner builds it) and the dtype of the values it folds.
fn chain_source(flat: &FlatChain) -> (ChainSource<'static>, DType) {
    let refs: Vec<&Tensor> = flat.leaves.iter().collect();
    let (planned, value, _) = plan_nodes(&flat.chain(&refs, None), Device::Cuda(0)).unwrap();
    let dtypes: Vec<DType> = flat.leaves.iter().map(|t| t.dtype()).collect();
    let call = FusedCall { nodes: &planned, consts: &flat.consts, reduce: None };
    let func = fused::chain_function(&call, &dtypes).unwrap();
    (ChainSource { name: func.name, source: func.source, returns: func.output, value, leaves: dtypes }, value)
}

/// A fused chain ending in a reduction is one kernel reading the leaves: its row and column
/// first passes, for random chains (a reducer each) and for `(a - b)^2` with every built-in
/// reducer of f32 (and f16's sum and var), compile with NVRTC for every checked arch (no warnings,
/// no spills). They run on the stand-in and on a GPU in `cuda_device.rs`, bit for bit
/// against the eager chain.
#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_reduction_kernels_compile_with_nvrtc() {
    let reducers = common::cuda_rows_of::<CudaReduceKernel>();
    let kernel_of = |row: &tensor_core::registry::KernelRow| {
        ReduceFn::from_kernel(row.kernel.as_any().downcast_ref::<CudaReduceKernel>().unwrap())
    };
    let mut specs = Vec::new();
    let mut push = |chain: &ChainSource<'static>, reducer: ReduceFn<'static>| {
        for pass in [ReducePass::Rows, ReducePass::Columns] {
            specs.push(KernelSpec::FusedReduce { reducer, chain: chain.clone(), pass });
        }
    };
    for (i, c) in cases(10).iter().enumerate() {
        let (chain, value) = chain_source(&chain_of(c, &leaf_tensors(c)));
        let of_value: Vec<_> = reducers.iter().filter(|(_, d, _)| *d == value).collect();
        if let Some((_, _, row)) = of_value.get((3 * i) % of_value.len().max(1)) {
            push(&chain, kernel_of(row));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for dtype in [DType::F32, DType::F16] {
        let a = Tensor::zeros(&[4, 4], dtype, Device::Cpu).unwrap();
        let b = Tensor::zeros(&[4], dtype, Device::Cpu).unwrap();
        let d = Expr::input(&a) - Expr::input(&b);
        let (chain, value) = chain_source(&(d.clone() * d).to_chain().unwrap());
        for (op, _, row) in reducers.iter().filter(|(_, d, _)| *d == value) {
            // f16 (values converted to an f32 accumulator): the plain and the Welford fold
            if dtype == DType::F32 || matches!(op.name, "sum" | "var") {
                names.insert(op.name);
                push(&chain, kernel_of(row));
            }
        }
    }
    for want in ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp", "all", "any"] {
        assert!(names.contains(want), "no CUDA {want} row for the fused (a - b)^2 chain: {names:?}");
    }
    specs.sort_by_key(|s| format!("{s:?}"));
    specs.dedup();
    assert!(specs.len() >= 40, "{} kernels", specs.len());
    shim::nvrtc_compiles_specs(&specs);
}

#[test]
fn the_same_chain_structure_reuses_its_kernel_source() {
    let c = &cases(1)[0];
    let l1 = leaf_tensors(c);
    let l2: Vec<Tensor> = l1.iter().map(|t| t.contiguous().unwrap()).collect();
    let (_, s1) = plan_case(c, &l1, "first".into()).unwrap();
    let (_, s2) = plan_case(c, &l2, "second".into()).unwrap();
    let name = |s: &KernelSpec<'static>| match s {
        KernelSpec::Fused { func, .. } => (func.name, func.source.as_ptr()),
        other => panic!("not a fused kernel: {other:?}"),
    };
    assert_eq!(name(&s1[0]), name(&s2[0]), "new tensors, same chain: one interned function");
}

/// An op with params of three types, for chains whose params must reach CUDA exactly.
#[tensor_op(dtypes = [i32, i64, f32, f64])]
pub fn fz_affine<T: Num>(x: T, #[param] k: i64, #[param] s: f64, #[param] on: bool) -> T {
    if on {
        x * T::from_f64(s) + T::from_i64(k)
    } else {
        x
    }
}

#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_chain_params_reach_cuda_exactly() {
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    let big = (1i64 << 53) + 1;
    for dtype in [DType::I32, DType::I64, DType::F32, DType::F64] {
        for (k, s, on) in [(16_777_217, 0.1, true), (big, 1.0 / 3.0, true), (i64::MIN, 2.5, false)] {
            let x = Tensor::from_vec((0..77).map(|i| i as f64 * 1.25 - 40.0).collect(), &[7, 11])
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let y =
                Tensor::from_vec((0..11).map(|i| i as f64 - 5.0).collect(), &[11]).unwrap().to_dtype(dtype).unwrap();
            let params = [Scalar::Int(k), Scalar::Float(s), Scalar::Bool(on)];
            let e = Expr::apply(&fz_affine::SPEC, &[&Expr::input(&x)], &params) + Expr::input(&y);
            let cpu = e.eval().unwrap();
            // the eager chain, for good measure: fusion never changes an answer
            let eager = tensor_ops::by_spec::call_map_new(&fz_affine::SPEC, &[&x], &params).unwrap().add(&y).unwrap();
            assert_eq!(common::bits(&cpu), common::bits(&eager), "{dtype} {k} {s} {on}");
            let (planned, _) = plan_flat(&e.to_chain().unwrap(), format!("{dtype} {k} {s} {on}")).expect("a plan");
            calls.push(planned);
            wants.push(cpu);
        }
    }
    shim::run_all(&calls);
    for (c, want) in calls.iter().zip(&wants) {
        assert_eq!(common::bits(&c.out), common::bits(want), "{}: CUDA C (shim) != CPU", c.what);
    }
}

/// Numbers in a chain (`x * 0.1f32 + 3`) are constants of the CUDA kernel, not leaves: the
/// kernel takes the one tensor and computes what the CPU (and the eager chain) computes,
/// bit for bit, for numbers of every kind against leaves of several dtypes (promotion
/// included), with more distinct numbers than a kernel takes leaves.
#[test]
#[cfg_attr(
    tops_cuda_checks_unavailable,
    ignore = "needs NVRTC, the CUDA headers and a host C++ compiler: run .ci/install-nvrtc.sh"
)]
fn fused_chain_numbers_are_kernel_constants_on_cuda() {
    let mut calls = Vec::new();
    let mut wants = Vec::new();
    for dtype in [DType::F16, DType::F32, DType::F64, DType::I32, DType::I64, DType::U8] {
        let x = Tensor::from_vec((0..60).map(|i| i as f64 * 0.75 - 20.0).collect(), &[5, 12])
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
            .t()
            .unwrap();
        let e = Expr::input(&x);
        let chains = [
            (&e * 0.1f32 + 3i32).maximum(-1.5f64),
            (&e * 7i64 - 16_777_217i64).abs() + true,
            ((&e + 1i32) * 0.5f32 + 0.25f32 - 2.0f64) / 3i32,
        ];
        for (k, c) in chains.iter().enumerate() {
            let cpu = c.eval().unwrap();
            let flat = c.to_chain().unwrap();
            assert_eq!(flat.leaves.len(), 1, "{dtype} chain {k}: the numbers are not leaves");
            assert!(flat.consts.len() >= 3, "{dtype} chain {k}");
            let (planned, _) = plan_flat(&flat, format!("{dtype} chain {k}")).expect("a plan");
            assert_eq!((planned.out.dtype(), planned.out.shape()), (cpu.dtype(), cpu.shape()), "{dtype} chain {k}");
            calls.push(planned);
            wants.push(cpu);
        }
    }
    shim::run_all(&calls);
    for (c, want) in calls.iter().zip(&wants) {
        assert_eq!(common::bits(&c.out), common::bits(want), "{}: CUDA C (shim) != CPU", c.what);
    }
}
