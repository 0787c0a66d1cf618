//! Fused chains on the device: random chains equal the CPU's, and fusion never changes an
//! answer (the eager device chain bit for bit).

use super::*;

/// Numbers in a chain are constants of the kernel (issue 32): `x * 0.5 + 1.0` six times
/// runs on the device with one leaf, equal to the eager device chain bit for bit (a number
/// in an eager call is a 0-dim tensor on the device), and to the CPU; so does the chain
/// ending in a reduction.
pub fn fused_chains_with_numbers_equal_the_eager_device_chain() {
    for dtype in [DType::F32, DType::F16, DType::I32] {
        let host = input(dtype, &[33, 65], Lay::Flipped, 11);
        let x = device_view(&host, DEV);
        let (mut fused, mut eager, mut cpu) = (Expr::input(&x), x.clone(), Expr::input(&host));
        let half = Tensor::scalar(0.5f32, DType::F32).unwrap().to_device(DEV).unwrap();
        let one = Tensor::scalar(1.0f32, DType::F32).unwrap().to_device(DEV).unwrap();
        for _ in 0..6 {
            fused = &fused * 0.5f32 + 1.0f32;
            cpu = &cpu * 0.5f32 + 1.0f32;
            eager = eager.mul(&half).unwrap().add(&one).unwrap();
        }
        assert_eq!(fused.to_chain().unwrap().leaves.len(), 1, "{dtype}");
        let got = fused.eval().unwrap();
        assert_eq!(got.device(), DEV);
        assert_eq!(common::bits(&got), common::bits(&eager), "{dtype}: fused != eager on the device");
        let want = cpu.eval().unwrap();
        assert_close(&values(&got), &values(&want), want.dtype(), !want.dtype().is_float(), &format!("{dtype}"));
        let s = fused.sum(&[1], false).eval().unwrap();
        let es = eager.sum(&[1], false).unwrap();
        assert_eq!(common::bits(&s), common::bits(&es), "{dtype}: fused sum != eager sum on the device");
    }
}

/// Random fused chains (broadcasts, strides, mixed dtypes) on the device equal the CPU's,
/// and so do those chains ending in a reduction.
pub fn fused_chains_match_the_cpu() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut ran = 0;
    while ran < 40 {
        let mut c = case().new_tree(&mut runner).unwrap().current();
        c.reduce = None;
        let leaves = leaf_tensors(&c);
        let Ok(cpu) = fused_expr(&c, &leaves).eval() else { continue };
        ran += 1;
        let on_dev: Vec<Tensor> = leaves.iter().map(|t| device_view(t, DEV)).collect();
        let got = fused_expr(&c, &on_dev).eval().unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert_eq!(got.device(), DEV);
        let exact = !cpu.dtype().is_float();
        assert_close(&values(&got), &values(&cpu), cpu.dtype(), exact, &format!("{c:?}"));
        let r_cpu = fused_expr(&c, &leaves).sum_all().eval().unwrap();
        let r_dev = fused_expr(&c, &on_dev).sum_all().eval().unwrap();
        assert_close(&values(&r_dev), &values(&r_cpu), r_cpu.dtype(), false, &format!("sum of {c:?}"));
    }
    // number operands (0-dim CPU constants) join a chain on the device, as in PyTorch
    for d in [DType::F16, DType::F32, DType::I32] {
        let x = input(d, &[5, 40], Lay::Transposed, 11);
        let chain = |t: &Tensor| (Expr::input(t) * 2.0f32 - 1i32).maximum(0.5f64);
        let want = chain(&x).eval().unwrap();
        let got = chain(&device_view(&x, DEV)).eval().unwrap_or_else(|e| panic!("numbers on the device, {d}: {e}"));
        assert_eq!((got.device(), got.dtype()), (DEV, want.dtype()));
        assert_close(&values(&got), &values(&want), want.dtype(), true, &format!("numbers {d}"));
        let s = chain(&device_view(&x, DEV)).sum_all().eval().unwrap();
        let w = chain(&x).sum_all().eval().unwrap();
        assert_close(&values(&s), &values(&w), w.dtype(), false, &format!("sum with numbers {d}"));
    }
}

/// Fusion never changes an answer on the device either: random chains, most ending in a
/// reduction (computed by the reduction's kernel from the leaves, never stored), and chains
/// built to reach every path of that kernel (split extents, column passes, broadcast and
/// transposed leaves, unaligned slices, Welford and arg reducers) equal the eager device
/// chain bit for bit, and the CPU's fused result in value.
pub fn fused_chains_equal_the_eager_device_chain_bit_for_bit() {
    fn compare(what: &str, eager: Tensor, fused: Tensor, cpu: Option<Tensor>) {
        assert_eq!((eager.shape(), eager.dtype()), (fused.shape(), fused.dtype()), "{what}");
        assert_eq!(fused.device(), DEV, "{what}");
        assert_eq!(common::bits(&fused), common::bits(&eager), "fused != eager on the device: {what}");
        if let Some(cpu) = cpu {
            let exact = !cpu.dtype().is_float();
            assert_close(&values(&fused), &values(&cpu), cpu.dtype(), exact, &format!("device vs CPU: {what}"));
        }
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut reductions = 0;
    while reductions < 20 {
        let c = case().new_tree(&mut runner).unwrap().current();
        let Some(_) = c.reduce else { continue };
        let leaves = leaf_tensors(&c);
        let (Ok(_), Ok(cpu)) = eager_and_fused(&c, &leaves) else { continue };
        let on_dev: Vec<Tensor> = leaves.iter().map(|t| device_view(t, DEV)).collect();
        let (eager, fused) = eager_and_fused(&c, &on_dev);
        let (eager, fused) = (
            eager.unwrap_or_else(|e| panic!("eager {c:?}: {e}")),
            fused.unwrap_or_else(|e| panic!("fused {c:?}: {e}")),
        );
        compare(&format!("{c:?}"), eager, fused, Some(cpu));
        reductions += 1;
    }
    use tensor_ops::fuse::specs;
    let sq_diff = |a: &Tensor, b: &Tensor| (Expr::input(a) - Expr::input(b)) * (Expr::input(a) - Expr::input(b));
    for dtype in [DType::F32, DType::F16] {
        let a = input(dtype, &[37, 1001], Lay::Contiguous, 3);
        let row = input(dtype, &[1001], Lay::Contiguous, 4);
        let at = input(dtype, &[1001, 37], Lay::Contiguous, 5).t().unwrap();
        // a long extent: split into slices whose partials a second pass combines
        let long = input(dtype, &[3, 70001], Lay::Contiguous, 6).slice(1, 1, 70001, 1).unwrap();
        let long_b = input(dtype, &[3, 70000], Lay::Contiguous, 7);
        let cases: [(&str, Tensor, Tensor); 4] = [
            ("dense", a.clone(), a.clone()),
            ("broadcast row", a.clone(), row),
            ("transposed", a.clone(), at),
            ("long", long, long_b),
        ];
        for (name, x, y) in cases {
            let ndim = x.ndim();
            for (spec, dims) in [
                (&specs::SUM, Some(vec![ndim - 1])),
                (&specs::SUM, Some(vec![0])),
                (&specs::SUM, None),
                (&specs::AMAX, Some(vec![ndim - 1])),
                (&specs::ARGMAX, Some(vec![0])),
                (&specs::VAR, Some(vec![ndim - 1])),
                (&specs::LOGSUMEXP, None),
            ] {
                let params: Vec<Scalar> = spec.op.params.iter().map(|_| Scalar::Int(1)).collect();
                let run = |x: &Tensor, y: &Tensor| {
                    let e = sq_diff(x, y);
                    match &dims {
                        Some(d) => e.reduce(spec, d, false, &params).eval(),
                        None => e.reduce_all(spec, &params).eval(),
                    }
                };
                let (xd, yd) = (device_view(&x, DEV), device_view(&y, DEV));
                let stored = sq_diff(&xd, &yd).eval().unwrap();
                let eager = match &dims {
                    Some(d) => tensor_ops::by_spec::call_reduce_new(
                        spec,
                        &stored,
                        tensor_core::call::ReduceDims::Dims(d),
                        false,
                        &params,
                    ),
                    None => tensor_ops::by_spec::call_reduce_new(
                        spec,
                        &stored,
                        tensor_core::call::ReduceDims::All,
                        false,
                        &params,
                    ),
                };
                let what = format!("{} {dims:?} of (x - y)^2, {name}, {dtype}", spec.op.name);
                let fused = run(&xd, &yd).unwrap_or_else(|e| panic!("{what}: {e}"));
                let cpu = run(&x, &y).unwrap();
                compare(&what, eager.unwrap(), fused, Some(cpu));
            }
        }
    }
    // an empty extent: the identity, no leaf read; no identity: an error, as eager
    let e = input(DType::F32, &[3, 0], Lay::Contiguous, 8);
    let ed = device_view(&e, DEV);
    let fused = sq_diff(&ed, &ed).reduce(&specs::SUM, &[1], false, &[]).eval().unwrap();
    let stored = sq_diff(&ed, &ed).eval().unwrap();
    let dims = tensor_core::call::ReduceDims::Dims(&[1]);
    let eager = tensor_ops::by_spec::call_reduce_new(&specs::SUM, &stored, dims, false, &[]).unwrap();
    let cpu = sq_diff(&e, &e).reduce(&specs::SUM, &[1], false, &[]).eval().unwrap();
    compare("sum of (x - x)^2 over an empty extent", eager, fused, Some(cpu));
    assert!(sq_diff(&ed, &ed).reduce(&specs::AMAX, &[1], false, &[]).eval().is_err());
}
