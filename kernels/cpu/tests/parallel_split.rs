//! The parallel split: every index or element visited exactly once whatever the sizes,
//! panics carried back to the caller, nesting inside rayon without deadlock.

use std::sync::atomic::{AtomicUsize, Ordering};
use tensor_kernels_cpu::parallel::{for_each_chunk, for_each_index, for_each_row_chunk};

fn counters(n: usize) -> Vec<AtomicUsize> {
    (0..n).map(|_| AtomicUsize::new(0)).collect()
}

fn assert_once(hits: &[AtomicUsize]) {
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(h.load(Ordering::Relaxed), 1, "index {i} visited {} times", h.load(Ordering::Relaxed));
    }
}

#[test]
fn every_index_once() {
    for n in [0, 1, 2, 3, 7, 64, 1000] {
        let hits = counters(n);
        for_each_index(n, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert_once(&hits);
    }
}

#[test]
fn every_element_once_in_chunks_and_rows() {
    for (total, grain) in [(0, 8), (5, 8), (100_000, 1024), (1 << 20, 32 * 1024), (1_000_003, 777)] {
        let hits = counters(total);
        for_each_chunk(total, grain, |r| {
            for i in r {
                hits[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_once(&hits);
    }
    for (rows, row_len) in [(0, 5), (1, 100_000), (1000, 257), (33, 4096)] {
        let hits = counters(rows);
        for_each_row_chunk(rows, row_len, 32 * 1024, |r| {
            for i in r {
                hits[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_once(&hits);
    }
}

#[test]
fn many_calls_back_to_back_reuse_nothing_stale() {
    // Helpers of earlier calls may start late; they must not touch a later call's work.
    for round in 0..2000 {
        let n = 2 + round % 5;
        let hits = counters(n);
        for_each_index(n, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert_once(&hits);
    }
}

#[test]
fn a_panic_in_any_index_reaches_the_caller() {
    for bad in [0, 1, 5, 99] {
        let seen = AtomicUsize::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_index(100, &|i| {
                seen.fetch_add(1, Ordering::Relaxed);
                if i == bad {
                    panic!("index {i} fails");
                }
            })
        }));
        let err = result.expect_err("the panic must be resumed on the caller");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(msg, format!("index {bad} fails"));
        assert!(seen.load(Ordering::Relaxed) <= 100);
    }
    // The pool still works afterwards.
    let hits = counters(50);
    for_each_index(50, &|i| {
        hits[i].fetch_add(1, Ordering::Relaxed);
    });
    assert_once(&hits);
}

#[test]
fn nested_inside_rayon_workers() {
    use rayon::prelude::*;
    let hits = counters(64 * 100);
    (0..64usize).into_par_iter().for_each(|outer| {
        for_each_index(100, &|i| {
            hits[outer * 100 + i].fetch_add(1, Ordering::Relaxed);
        });
    });
    assert_once(&hits);
}

#[test]
fn concurrent_callers_on_plain_threads() {
    let hits = counters(4 * 10_000);
    std::thread::scope(|s| {
        for t in 0..4 {
            let hits = &hits;
            s.spawn(move || {
                for_each_chunk(10_000, 100, |r| {
                    for i in r {
                        hits[t * 10_000 + i].fetch_add(1, Ordering::Relaxed);
                    }
                })
            });
        }
    });
    assert_once(&hits);
}
