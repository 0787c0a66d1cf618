//! Fused chains (issue 12, level 2): random chains of elementwise ops over random dtypes,
//! shapes (broadcasting) and layouts, optionally ending in a reduction, evaluated fused and
//! eagerly (one `tensor_ops` call per node): the results must agree bit for bit, with the
//! same shape, dtype and memory order; errors must agree and name the node.

mod chains;
mod common;

use chains::{case, eager_and_fused, leaf_tensors, Case};
use common::bits;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// Compares fused with eager; returns whether both produced a value (compared bits).
fn check(c: &Case) -> bool {
    let leaves = leaf_tensors(c);
    let (want, got) = eager_and_fused(c, &leaves);
    match (want, got) {
        (Ok(w), Ok(g)) => {
            assert_eq!((w.shape(), w.dtype()), (g.shape(), g.dtype()), "{c:?}");
            assert_eq!(w.strides(), g.strides(), "memory order differs: {c:?}");
            assert_eq!(bits(&w), bits(&g), "fused != eager: {c:?}");
            true
        }
        (Err(_), Err(_)) => false,
        (w, g) => {
            panic!("eager {:?} but fused {:?}: {c:?}", w.map(|t| t.shape().to_vec()), g.map(|t| t.shape().to_vec()))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn fused_chains_equal_the_eager_chain_bit_for_bit(c in case()) {
        check(&c);
    }
}

#[test]
fn the_random_chains_mostly_compute_values_and_reductions() {
    // the property above is only as good as its cases: most must produce values
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut values, mut reductions) = (0, 0);
    for _ in 0..300 {
        let c = case().new_tree(&mut runner).unwrap().current();
        if check(&c) {
            values += 1;
            reductions += c.reduce.is_some() as usize;
        }
    }
    assert!(values >= 150 && reductions >= 50, "{values} of 300 chains computed values, {reductions} reductions");
}

fn f32s(n: usize, seed: u64, shape: &[usize]) -> Tensor {
    common::from_values(&common::gen_values(DType::F32, n, seed), shape, DType::F32)
}

#[test]
fn large_chains_split_across_threads_and_stream_like_the_eager_chain() {
    // 2^22 + 3 elements of f32 (16 MiB + 12 B: the streamed-output path), and a reduction
    // whose rows span many leaves and threads
    let n = (1 << 22) + 3;
    let (a, b, c) = (f32s(n, 1, &[n]), f32s(n, 2, &[n]), f32s(1, 3, &[1]));
    let (x, y, z) = (Expr::input(&a), Expr::input(&b), Expr::input(&c));
    let fused = (&x * &y + &z).relu().eval().unwrap();
    let eager = a.mul(&b).unwrap().add(&c).unwrap().relu().unwrap();
    assert_eq!(bits(&fused), bits(&eager));
    let d = &x - &y;
    let fused = (&d * &d).sum_all().eval().unwrap();
    let dd = a.sub(&b).unwrap();
    let eager = dd.mul(&dd).unwrap().sum_all().unwrap();
    assert_eq!(bits(&fused), bits(&eager));
    // a column reduction (the kept dim innermost) and a row reduction of a 2-d chain
    let m = f32s(1000 * 777, 4, &[1000, 777]);
    let e = Expr::input(&m).sigmoid() * 3.0f32;
    let eager_m = m.sigmoid().unwrap().mul(&Tensor::from_vec(vec![3.0f32], &[]).unwrap()).unwrap();
    for dims in [[0usize], [1]] {
        let f = e.sum(&dims, false).eval().unwrap();
        assert_eq!(bits(&f), bits(&eager_m.sum(&dims, false).unwrap()), "sum over {dims:?}");
        let f = e.var(&dims, 1, true).eval().unwrap();
        assert_eq!(bits(&f), bits(&eager_m.var(&dims, 1, true).unwrap()), "var over {dims:?}");
    }
}

#[test]
fn streamed_chains_with_strided_and_cast_leaves_match_the_eager_chain() {
    // Over 32 MiB of operands the runner takes short blocks (`STREAM_BLOCK`): a transposed
    // f64 leaf (gathered), a broadcast bf16 row squared (a bf16 node: computed in f32 and
    // rounded, then cast up for the f64 product) and an f32 scalar go through every
    // staging case there.
    let (r, c) = (2049, 2051);
    let t = common::from_values(&common::gen_values(DType::F64, r * c, 7), &[c, r], DType::F64).t().unwrap();
    let row = common::from_values(&common::gen_values(DType::BF16, c, 8), &[c], DType::BF16);
    let w = f32s(1, 9, &[1]);
    let (xt, xr, xw) = (Expr::input(&t), Expr::input(&row), Expr::input(&w));
    let chain = (&(&xr * &xr) * &xt + &xw).relu();
    let fused = chain.eval().unwrap();
    let eager = row.mul(&row).unwrap().mul(&t).unwrap().add(&w).unwrap().relu().unwrap();
    assert_eq!(fused.dtype(), DType::F64);
    assert_eq!(bits(&fused), bits(&eager));
    // the same chain ending in a reduction over each dim (streamed leaves, no output)
    for dims in [[0usize], [1]] {
        let f = chain.sum(&dims, false).eval().unwrap();
        assert_eq!(bits(&f), bits(&eager.sum(&dims, false).unwrap()), "sum over {dims:?}");
    }
}

#[test]
fn eval_into_writes_like_the_eager_out_call_and_in_place() {
    let a = f32s(300, 5, &[30, 10]).to_dtype(DType::F16).unwrap();
    let b = f32s(10, 6, &[10]).to_dtype(DType::F16).unwrap();
    let e = (Expr::input(&a) * Expr::input(&b)).exp();
    // into an f32 out: the last op writes f32 straight from its f32 compute (no f16 rounding)
    let out = Tensor::zeros(&[30, 10], DType::F32, Device::Cpu).unwrap();
    e.eval_into(&out).unwrap();
    let want = Tensor::zeros(&[30, 10], DType::F32, Device::Cpu).unwrap();
    tensor_ops::exp_out(&a.mul(&b).unwrap(), &want).unwrap();
    assert_eq!(bits(&out), bits(&want));
    // into a transposed view, and in place into a leaf
    let t = Tensor::zeros(&[10, 30], DType::F16, Device::Cpu).unwrap().t().unwrap();
    e.eval_into(&t).unwrap();
    assert_eq!(bits(&t), bits(&a.mul(&b).unwrap().exp().unwrap()));
    let c = a.contiguous().unwrap();
    let eager = c.mul(&b).unwrap().exp().unwrap();
    let x = Expr::input(&c);
    (&x * Expr::input(&b)).exp().eval_into(&c).unwrap();
    assert_eq!(bits(&c), bits(&eager));
}

#[test]
fn errors_name_the_node_that_failed() {
    let a = f32s(6, 1, &[2, 3]);
    let b = f32s(4, 2, &[4]);
    let x = Expr::input(&a);
    let e = (x.exp() + Expr::input(&b)).eval().unwrap_err().to_string();
    assert!(e.contains("node 1 (`add`)") && e.contains("[2, 3]") && e.contains("[4]"), "{e}");
    let bools = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let e = Expr::input(&bools).neg().eval().unwrap_err().to_string();
    assert!(e.contains("neg") && e.contains("node 0"), "{e}");
    let e = Expr::apply(&tensor_ops::add::SPEC, &[&x], &[]).eval().unwrap_err().to_string();
    assert!(e.contains("node 0 (`add`)") && e.contains("takes 2 tensor(s)"), "{e}");
    let e = x.exp().sum(&[5], false).eval().unwrap_err().to_string();
    assert!(e.contains("dim 5 is out of range"), "{e}");
    let out = Tensor::zeros(&[3], DType::F32, Device::Cpu).unwrap();
    let e = x.exp().eval_into(&out).unwrap_err().to_string();
    assert!(e.contains("node 0 (`exp`)") && e.contains("shape"), "{e}");
}

#[test]
fn shared_subexpressions_and_user_ops_fuse() {
    let a = f32s(1000, 9, &[1000]);
    let x = Expr::input(&a);
    let s = x.sigmoid();
    // `s` is used three times: computed once per block, same values as eager
    let f = (&s * &s + &s).eval().unwrap();
    let es = a.sigmoid().unwrap();
    assert_eq!(bits(&f), bits(&es.mul(&es).unwrap().add(&es).unwrap()));
    // a composed built-in (silu) and a user op by spec
    let f = x.silu().maximum(x.tanh()).eval().unwrap();
    let want = tensor_ops::silu(&a).unwrap().maximum(&a.tanh().unwrap()).unwrap();
    assert_eq!(bits(&f), bits(&want));
    // a bare tensor evaluates to a copy; its reduction is the eager reduction
    assert_eq!(bits(&x.eval().unwrap()), bits(&a));
    assert_eq!(bits(&x.sum_all().eval().unwrap()), bits(&a.sum_all().unwrap()));
}
