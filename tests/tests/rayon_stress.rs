//! Library calls from inside rayon (issue 32): reductions, fused chains and in-place ops on
//! shared tensors from a `par_iter` of a 6-thread pool on this 2-core machine must neither
//! hang nor fail with `Locked` (no guard is held by the caller). A reduction used to hold
//! its input's lock across `rayon::join`, whose waiting worker could pick up an `add_` of
//! the same tensor: a deadlock on that thread, or an `Err(Locked)` blaming a guard the user
//! never took. Bounded in time: a hang fails the test instead of stalling the suite.

use rayon::prelude::*;
use std::sync::mpsc;
use std::time::Duration;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// Elements of the shared tensor: enough that a sum splits its tree over threads.
const N: usize = 1 << 19;

/// One round: 48 tasks of four kinds over one shared tensor of ones, on `threads` threads.
/// Returns how many `add_` of 1 ran, after checking every value read on the way.
fn round(threads: usize) -> usize {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let p = Tensor::ones(&[N], DType::F64, Device::Cpu).unwrap();
    let one = Tensor::ones(&[], DType::F64, Device::Cpu).unwrap();
    let rows = p.view(&[512, (N / 512) as isize]).unwrap();
    let adds = pool.install(|| {
        (0..48usize)
            .into_par_iter()
            .map(|i| {
                // Every read sees some number k of completed adds: each element is 1 + k.
                let whole = |v: f64, per: f64, what: &str| {
                    let k = v / per - 1.0;
                    assert!(k >= 0.0 && k.fract() == 0.0, "{what} read {v}: not (1 + k) × {per}");
                };
                match i % 4 {
                    0 => {
                        p.add_(&one).unwrap_or_else(|e| panic!("add_: {e}"));
                        1
                    }
                    1 => {
                        let s = p.sum_all().unwrap_or_else(|e| panic!("sum_all: {e}"));
                        whole(s.to_vec::<f64>().unwrap()[0], N as f64, "sum_all");
                        0
                    }
                    2 => {
                        let x = Expr::input(&p);
                        let s = (&x * &x).sum_all().eval().unwrap_or_else(|e| panic!("fused: {e}"));
                        let v = s.to_vec::<f64>().unwrap()[0] / N as f64;
                        let k = v.sqrt() - 1.0;
                        assert!(k >= 0.0 && k.fract() == 0.0, "fused Σx² read {v} per element");
                        0
                    }
                    _ => {
                        let m = rows.amax(&[0], false).unwrap_or_else(|e| panic!("amax: {e}"));
                        let c = rows.sum(&[0], false).unwrap_or_else(|e| panic!("sum dim 0: {e}"));
                        let (m, c) = (m.to_vec::<f64>().unwrap(), c.to_vec::<f64>().unwrap());
                        whole(m[0], 1.0, "amax");
                        whole(c[0], 512.0, "column sum");
                        0
                    }
                }
            })
            .sum::<usize>()
    });
    let after = p.to_vec::<f64>().unwrap();
    assert!(after.iter().all(|&v| v == 1.0 + adds as f64), "every element is 1 + {adds}");
    adds
}

#[test]
fn reductions_fused_chains_and_in_place_ops_inside_rayon_neither_hang_nor_fail() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for threads in [4, 6, 8] {
            for _ in 0..3 {
                assert_eq!(round(threads), 12);
            }
        }
        tx.send(()).ok();
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a round failed (its panic is printed above)"),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the rounds did not finish in 300 s: a hang"),
    }
}
