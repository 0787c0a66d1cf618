//! The caching CPU allocator: reuse, cap, disable, empty, stats, huge blocks, errors.

use tensor_core::{Allocator, DType, Device, Error, Tensor};
use tensor_kernels_cpu::alloc::{size_class, CachingAllocator};

#[test]
fn freed_blocks_are_reused_by_size_class() {
    let a = CachingAllocator::new(64 << 20);
    let b = a.allocate(10_000).unwrap();
    assert_eq!(b.len(), 10_000);
    assert_eq!(b.as_ptr() as usize % 64, 0);
    // SAFETY: the block is 10_000 bytes, exclusively ours.
    unsafe { std::ptr::write_bytes(b.as_ptr(), 0xCD, 10_000) };
    let addr = b.as_ptr();
    drop(b);
    let s = a.stats();
    assert_eq!((s.hits, s.misses, s.blocks_cached, s.bytes_cached), (0, 1, 1, size_class(10_000)));
    // Same class (10_100 rounds to the same 10_240): the same block, contents kept by
    // `allocate_uninit_on` (what new op outputs use)...
    let c = a.allocate_uninit_on(Device::Cpu, 10_100).unwrap();
    assert_eq!(c.as_ptr(), addr);
    // SAFETY: reading a byte of our block.
    assert_eq!(unsafe { *c.as_ptr() }, 0xCD, "uninit blocks are not zeroed");
    let s = a.stats();
    assert_eq!((s.hits, s.misses, s.blocks_cached, s.bytes_cached), (1, 1, 0, 0));
    // ...and zeroed by `allocate`, as the `Allocator` contract promises.
    drop(c);
    let z = a.allocate(10_100).unwrap();
    assert_eq!(z.as_ptr(), addr);
    // SAFETY: the block is 10_100 bytes long and ours.
    assert!(unsafe { std::slice::from_raw_parts(z.as_ptr(), 10_100) }.iter().all(|&x| x == 0));
    assert_eq!(a.stats().hits, 2);
    drop(z);
    let _keep = a.allocate(10_100).unwrap();
    // A different class misses.
    let d = a.allocate(100_000).unwrap();
    assert_ne!(d.as_ptr(), addr);
    assert_eq!(a.stats().misses, 2);
}

#[test]
fn fresh_blocks_are_zeroed_including_huge_ones() {
    let a = CachingAllocator::new(0);
    for bytes in [1usize, 100, 5000, 3 << 20, 9 << 20] {
        let b = a.allocate(bytes).unwrap();
        // SAFETY: the block is `bytes` long.
        let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), bytes) };
        assert!(s.iter().all(|&x| x == 0), "{bytes}");
        assert_eq!(b.as_ptr() as usize % 64, 0);
    }
    let z = a.allocate(0).unwrap();
    assert_eq!(z.len(), 0);
}

#[test]
fn the_cap_bounds_the_cache_and_evicts() {
    let a = CachingAllocator::new(1 << 20);
    // A block larger than the cap is freed, not cached.
    drop(a.allocate(2 << 20).unwrap());
    assert_eq!(a.stats().bytes_cached, 0);
    // Three 512 KiB blocks: only two fit under a 1 MiB cap.
    let blocks: Vec<_> = (0..3).map(|_| a.allocate(512 << 10).unwrap()).collect();
    drop(blocks);
    let s = a.stats();
    assert!(s.bytes_cached <= 1 << 20);
    assert_eq!(s.blocks_cached, 2);
    // Shrinking the cap empties what no longer fits.
    a.set_cap(1000);
    assert_eq!(a.stats().bytes_cached, 0);
}

#[test]
fn disable_and_empty() {
    let a = CachingAllocator::new(64 << 20);
    drop(a.allocate(4096).unwrap());
    assert_eq!(a.stats().blocks_cached, 1);
    a.empty();
    assert_eq!((a.stats().blocks_cached, a.stats().bytes_cached), (0, 0));
    drop(a.allocate(4096).unwrap());
    a.set_enabled(false);
    assert!(!a.is_enabled());
    assert_eq!(a.stats().blocks_cached, 0, "disabling empties");
    drop(a.allocate(4096).unwrap());
    assert_eq!(a.stats().blocks_cached, 0, "disabled caches nothing");
    a.set_enabled(true);
    drop(a.allocate(4096).unwrap());
    assert_eq!(a.stats().blocks_cached, 1);
}

#[test]
fn impossible_sizes_are_errors() {
    let a = CachingAllocator::new(64 << 20);
    assert!(matches!(a.allocate(usize::MAX), Err(Error::OutOfMemory { .. })));
    assert!(matches!(a.allocate(1 << 62), Err(Error::OutOfMemory { .. })));
}

#[test]
fn blocks_outlive_the_allocator_handle_and_work_across_threads() {
    let a = CachingAllocator::new(64 << 20);
    let b = a.allocate(1 << 16).unwrap();
    let a2 = a.clone();
    drop(a);
    std::thread::spawn(move || drop(b)).join().unwrap();
    assert_eq!(a2.stats().blocks_cached, 1);
}

#[test]
fn installed_allocator_serves_tensors_and_bool_storage_is_clean() {
    tensor_kernels_cpu::alloc::install();
    let before = tensor_kernels_cpu::alloc::stats();
    {
        let t = Tensor::full(&[1000], 255i64, DType::U8, Device::Cpu).unwrap();
        assert_eq!(t.to_vec::<u8>().unwrap()[0], 255);
    }
    let b = Tensor::empty(&[1000], DType::Bool, Device::Cpu).unwrap();
    assert!(b.to_vec::<bool>().unwrap().iter().all(|&x| !x));
    let after = tensor_kernels_cpu::alloc::stats();
    assert!(after.hits + after.misses > before.hits + before.misses);
    tensor_kernels_cpu::alloc::empty_cache();
    assert_eq!(tensor_kernels_cpu::alloc::stats().bytes_cached, 0);
}

#[test]
fn the_global_cache_parks_small_blocks_per_thread() {
    use tensor_kernels_cpu::alloc::global;
    // On a fresh thread, so no other test's blocks sit in its slots.
    std::thread::spawn(|| {
        let g = global();
        let b = g.allocate_uninit_on(Device::Cpu, 200).unwrap();
        // SAFETY: the block is 200 bytes, exclusively ours.
        unsafe { std::ptr::write_bytes(b.as_ptr(), 0xAB, 200) };
        let addr = b.as_ptr();
        let before = g.stats();
        drop(b);
        // Parked in this thread's slot, not in the shared cache's counts...
        assert_eq!(g.stats().bytes_cached, before.bytes_cached);
        // ...and handed back to this thread for the same class (a hit), contents kept...
        let c = g.allocate_uninit_on(Device::Cpu, 250).unwrap();
        assert_eq!(c.as_ptr(), addr);
        // SAFETY: reading a byte of our block.
        assert_eq!(unsafe { *c.as_ptr() }, 0xAB);
        assert!(g.stats().hits > before.hits);
        drop(c);
        // ...or zeroed for `allocate`.
        let z = g.allocate(256).unwrap();
        assert_eq!(z.as_ptr(), addr);
        // SAFETY: the block is 256 bytes long and ours.
        assert!(unsafe { std::slice::from_raw_parts(z.as_ptr(), 256) }.iter().all(|&x| x == 0));
        // A second block of the class finds the slot taken by the first and goes to the
        // shared cache; the slot's block comes back first.
        let w = g.allocate(256).unwrap();
        let first = z.as_ptr();
        drop(z);
        drop(w);
        let x = g.allocate(256).unwrap();
        assert_eq!(x.as_ptr(), first);
        // A block freed on a thread that then exits is freed with that thread's slots.
        let moved = g.allocate(64).unwrap();
        std::thread::spawn(move || drop(moved)).join().unwrap();
    })
    .join()
    .unwrap();
}
