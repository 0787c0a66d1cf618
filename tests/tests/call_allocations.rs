//! Per-call overhead, counted rather than timed: the heap allocations one small op makes.
//! Shapes, strides, plans and lock sets stay inline (rank ≤ 6, ≤ 4 operands); a new
//! output costs its storage handle, nothing else (the process-wide caching allocator's
//! deleter captures nothing, so its box allocates nothing).
//!
//! Only the calling thread's allocations are counted: worker threads of the test harness or
//! of rayon's pool start up and allocate on their own schedule, which made a global count
//! flaky (these small calls never leave the calling thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tensor_ops::prelude::*;

/// The system allocator, counting each thread's allocations.
struct Counting;

thread_local! {
    // `const`-initialised, no destructor: reading it never allocates or registers anything.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; the counter is a plain thread-local cell.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: during thread teardown the cell may be gone; such allocations are not ours.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made on this thread by `f` (after a warm-up call, so one-time set-up is not counted).
fn allocations(f: impl Fn()) -> usize {
    f();
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn small_ops_allocate_only_their_output() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap();
    let out = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
    let one = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();

    // A new output: its storage handle (the buffer itself comes from the caching allocator
    // after the warm-up).
    let new = allocations(|| drop(one.add(&one).unwrap()));
    assert_eq!(new, 1, "1-element add");
    let new = allocations(|| drop(a.add(&b).unwrap()));
    assert_eq!(new, 1, "broadcast add");
    let new = allocations(|| drop(a.t().unwrap().exp().unwrap()));
    assert_eq!(new, 1, "exp of a transpose");
    // Into an existing output or in place: none.
    let into = allocations(|| tensor_ops::add_out(&a, &b, &out).unwrap());
    assert_eq!(into, 0, "add_out");
    let inplace = allocations(|| out.add_(&b).unwrap());
    assert_eq!(inplace, 0, "add_");
    // The values are still right.
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![31.0, 62.0, 93.0, 34.0, 65.0, 96.0]);
}
