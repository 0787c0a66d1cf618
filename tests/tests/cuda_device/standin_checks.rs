//! The stand-in's checks (`standin_only` tests of `cuda_device.rs`): each check a real driver
//! would make fires on a bad launch, copy or free, and every injected fault is an `Err`
//! value that leaks nothing.

use super::{device, DEV};
use crate::standin::control;
use tensor_core::registry::RawTensor;
use tensor_cuda_testing::standin::Fault;
use tensor_kernels_cuda::alloc::{self, CudaAllocator};
use tensor_kernels_cuda::plan::{self, Step};
use tensor_kernels_cuda::runtime;
use tensor_ops::fuse::Expr;
use tensor_ops::prelude::*;

/// A fill kernel's launch over `bytes` bytes at `addr` (a plan of the real launcher).
fn fill_launch(addr: u64, n: usize) -> plan::Launch {
    let shape = [n];
    let strides = [1isize];
    let raw =
        RawTensor { ptr: addr as usize as *mut u8, dtype: DType::F32, shape: &shape, strides: &strides, device: DEV };
    let steps = plan::plan_fill(&raw, Scalar::Float(1.0), 4).unwrap();
    match steps.into_iter().next() {
        Some(Step::Kernel(l)) => l,
        other => panic!("a fill plan is one kernel: {other:?}"),
    }
}

/// Launches `l` with an argument buffer of `size` bytes and the given block / shared memory.
fn launch(l: &plan::Launch, grid: u32, block: (u32, u32), shared: u32, size: usize) -> Result<()> {
    // SAFETY: the stand-in checks everything this launch names before running it; the
    // tests only pass blocks of live device memory or expect the launch to be refused.
    unsafe { device().launch_with_shared_memory(&l.spec, grid, block, shared, l.args.as_ptr(), size) }
}

/// The checks that fired since the last call; asserts one of them mentions `what`.
fn expect_fired(what: &str) {
    let fired = control().expect("runs under the stand-in").take_violations();
    assert!(fired.iter().any(|v| v.contains(what)), "expected a check about {what:?}, got {fired:?}");
}

pub fn an_argument_block_of_the_wrong_size_is_rejected() {
    let block = CudaAllocator::allocate_on(0, 4096).unwrap();
    let l = fill_launch(block.as_ptr() as u64, 1024);
    let size = l.args.size();
    for wrong in [size - 8, size + 8, 4] {
        let e = launch(&l, l.grid, l.block, 0, wrong).unwrap_err();
        assert!(e.to_string().contains("launching a kernel"), "{e}");
        expect_fired("argument buffer");
    }
    launch(&l, l.grid, l.block, 0, size).unwrap();
    device().synchronize().unwrap();
}

pub fn grids_blocks_and_shared_memory_over_the_limits_are_rejected() {
    let block = CudaAllocator::allocate_on(0, 4096).unwrap();
    let l = fill_launch(block.as_ptr() as u64, 1024);
    let size = l.args.size();
    for (grid, threads) in [(l.grid, (2048, 1)), (l.grid, (512, 4)), (l.grid, (0, 1)), (u32::MAX, l.block)] {
        assert!(launch(&l, grid, threads, 0, size).is_err(), "grid {grid} block {threads:?}");
        expect_fired("outside the device limits");
    }
    assert!(launch(&l, l.grid, l.block, 64 * 1024, size).is_err());
    expect_fired("shared memory");
    launch(&l, l.grid, l.block, 1024, size).unwrap();
    device().synchronize().unwrap();
}

pub fn a_pointer_that_is_not_a_live_allocation_is_rejected() {
    // a host pointer passed as a device pointer, to a kernel and to copies
    let host = vec![0f32; 1024];
    let l = fill_launch(host.as_ptr() as u64, 1024);
    let e = launch(&l, l.grid, l.block, 0, l.args.size()).unwrap_err();
    assert!(e.to_string().contains("ILLEGAL_ADDRESS"), "{e}");
    expect_fired("device allocation");
    let dev = device();
    let mut back = vec![0u8; 64];
    // SAFETY: the stand-in refuses the copy before touching either side.
    assert!(unsafe { dev.copy_to_host(host.as_ptr() as u64, &mut back) }.is_err());
    expect_fired("device allocation");
    // a freed block (given back to the driver by emptying the cache)
    let block = CudaAllocator::allocate_on(0, 3 << 20).unwrap();
    let addr = block.as_ptr() as u64;
    drop(block);
    alloc::empty_cache(0).unwrap();
    dev.synchronize().unwrap();
    let l = fill_launch(addr, 1024);
    assert!(launch(&l, l.grid, l.block, 0, l.args.size()).is_err());
    expect_fired("device allocation");
}

pub fn a_copy_past_an_allocation_end_is_rejected() {
    let dev = device();
    // 1000 bytes asked, its 1024-byte size class given by the driver
    let a = CudaAllocator::allocate_on(0, 1000).unwrap();
    let b = CudaAllocator::allocate_on(0, 1000).unwrap();
    let big = vec![7u8; 2000];
    // SAFETY: the stand-in refuses each copy before moving a byte.
    unsafe {
        assert!(dev.copy_from_host(&big, a.as_ptr() as u64).is_err());
        expect_fired("runs past the end");
        let mut back = vec![0u8; 1500];
        assert!(dev.copy_to_host(a.as_ptr() as u64 + 100, &mut back).is_err());
        expect_fired("runs past the end");
        assert!(dev.memcpy_dtod(b.as_ptr() as u64 + 512, a.as_ptr() as u64, 1000).is_err());
        expect_fired("runs past the end");
        // in bounds: fine
        dev.copy_from_host(&big[..1024], a.as_ptr() as u64).unwrap();
        dev.memcpy_dtod(b.as_ptr() as u64, a.as_ptr() as u64, 1024).unwrap();
        let mut back = vec![0u8; 1024];
        dev.copy_to_host(b.as_ptr() as u64, &mut back).unwrap();
        assert_eq!(back, big[..1024]);
    }
}

pub fn freeing_a_block_a_stream_still_uses_is_rejected() {
    let c = control().expect("runs under the stand-in");
    let dev = device();
    let block = CudaAllocator::allocate_on(0, 4096).unwrap();
    let l = fill_launch(block.as_ptr() as u64, 1024);
    c.hold_streams(true);
    launch(&l, l.grid, l.block, 0, l.args.size()).unwrap();
    // SAFETY: the stand-in refuses the free: the queued fill still uses the block.
    let r = unsafe { c.free_now(block.as_ptr() as u64) };
    c.hold_streams(false);
    assert!(r.is_err(), "the free of a block in use went through");
    expect_fired("while a stream still uses it");
    dev.synchronize().unwrap();
}

pub fn another_devices_memory_in_a_launch_is_rejected() {
    let block = CudaAllocator::allocate_on(1, 4096).unwrap();
    let l = fill_launch(block.as_ptr() as u64, 1024);
    let e = launch(&l, l.grid, l.block, 0, l.args.size()).unwrap_err();
    assert!(e.to_string().contains("ILLEGAL_ADDRESS"), "{e}");
    expect_fired("memory of device 1");
}

// ------------------------------------------------------------------ fault injection

/// The allocator's live bytes on cuda:0 (blocks held by tensors).
fn allocated() -> usize {
    alloc::memory_stats(0).unwrap().allocated
}

/// After a failure: nothing leaked (the allocator holds no block for a tensor; with the
/// cache emptied, the driver has no live allocation) and the next call works.
fn leak_free_and_working() {
    device().synchronize().unwrap();
    assert_eq!(allocated(), 0, "the caching allocator still accounts blocks after the failure");
    for d in 0..runtime::device_count().unwrap() as u32 {
        alloc::empty_cache(d).unwrap();
        runtime::device(d).unwrap().synchronize().unwrap();
    }
    let (n, bytes) = control().unwrap().live();
    assert_eq!((n, bytes), (0, 0), "the stand-in still holds allocations");
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().to_device(DEV).unwrap();
    assert_eq!(x.add(&x).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
}

pub fn failed_allocations_are_errors_and_leak_nothing() {
    let c = control().unwrap();
    let host = Tensor::from_vec((0..5000).map(|i| i as f32).collect(), &[50, 100]).unwrap();
    // one failure: the allocator empties its cache and retries, the call works
    alloc::empty_cache(0).unwrap();
    c.inject(Fault::Alloc, 1, 1);
    let g = host.to_device(DEV).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), host.to_vec::<f32>().unwrap());
    drop(g);
    // the retry fails too: out of memory, as a value
    alloc::empty_cache(0).unwrap();
    c.inject(Fault::Alloc, 1, 2);
    let e = host.to_device(DEV).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    leak_free_and_working();
    // in the middle of an op: the output's allocation, a reduction's workspace
    let g = host.to_device(DEV).unwrap();
    for nth in 1..=3 {
        alloc::empty_cache(0).unwrap();
        c.inject(Fault::Alloc, nth, 2);
        let r = g.add(&g).and_then(|s| s.sum(&[1], false)).and_then(|s| s.to_vec::<f32>());
        c.inject(Fault::Alloc, 0, 0);
        if let Err(e) = &r {
            assert!(e.to_string().contains("out of memory"), "{e}");
        }
    }
    drop(g);
    leak_free_and_working();
}

pub fn failed_launches_are_errors_and_leak_nothing() {
    let c = control().unwrap();
    let a = Tensor::from_vec((0..6000).map(|i| i as f32 * 0.5).collect(), &[60, 100]).unwrap().to_device(DEV).unwrap();
    let before = allocated();
    c.inject(Fault::Launch, 1, 1);
    let e = a.add(&a).unwrap_err();
    assert!(e.to_string().contains("LAUNCH_OUT_OF_RESOURCES"), "{e}");
    assert_eq!(allocated(), before, "the failed op's output was not given back");
    // each launch of a split reduction (first pass, second pass) and of a fused chain
    let long = Tensor::from_vec(vec![1.0f32; 1 << 20], &[1 << 20]).unwrap().to_device(DEV).unwrap();
    for nth in 1..=2 {
        c.inject(Fault::Launch, nth, 1);
        assert!(long.sum_all().and_then(|s| s.to_vec::<f32>()).is_err(), "launch {nth} of the reduction");
        assert_eq!(allocated(), before + alloc::size_class(4 << 20), "workspace or output leaked");
    }
    c.inject(Fault::Launch, 1, 1);
    let x = Expr::input(&a);
    assert!((x.clone() * x.clone() + x).relu().eval().is_err());
    assert_eq!(long.sum_all().unwrap().to_vec::<f32>().unwrap(), vec![(1 << 20) as f32]);
    drop((a, long));
    leak_free_and_working();
}

pub fn failed_copies_are_errors_and_leak_nothing() {
    let c = control().unwrap();
    let host = Tensor::from_vec((0..300).map(|i| i as f64).collect(), &[3, 100]).unwrap();
    c.inject(Fault::Copy, 1, 1);
    let e = host.to_device(DEV).unwrap_err();
    assert!(e.to_string().contains("copying from the host"), "{e}");
    assert_eq!(allocated(), 0);
    let g = host.to_device(DEV).unwrap();
    c.inject(Fault::Copy, 1, 1);
    assert!(g.to_vec::<f64>().is_err());
    assert_eq!(g.to_vec::<f64>().unwrap(), host.to_vec::<f64>().unwrap());
    // a device-to-device copy inside copy_ (a dense copy is one memcpy)
    let dst = Tensor::zeros(&[3, 100], DType::F64, DEV).unwrap();
    c.inject(Fault::Copy, 1, 1);
    assert!(dst.copy_(&g).is_err());
    dst.copy_(&g).unwrap();
    assert_eq!(dst.to_vec::<f64>().unwrap(), host.to_vec::<f64>().unwrap());
    drop((g, dst));
    leak_free_and_working();
}
