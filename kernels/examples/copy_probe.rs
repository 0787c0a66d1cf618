//! Throwaway measurement of the copy/fill engines against a same-run memcpy (not a test).
//! `cargo run --release -p tensor-kernels --example copy_probe`

use std::time::Instant;
use tensor_core::registry::RawTensor;
use tensor_core::{Allocator, DType, DataPtr, Device, Scalar};
use tensor_kernels::cpu::alloc::CachingAllocator;
use tensor_kernels::cpu::copy::copy_strided;
use tensor_kernels::cpu::fill::fill_strided;
use tensor_kernels::cpu::parallel::for_each_chunk;

const N: usize = 64 << 20; // elements of f32 (256 MiB)

fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn block(a: &CachingAllocator, bytes: usize) -> DataPtr {
    let b = a.allocate(bytes).unwrap();
    // SAFETY: b is bytes long; touching it faults the pages in before timing.
    unsafe { std::ptr::write_bytes(b.as_ptr(), 1, bytes) };
    b
}

fn raw<'a>(p: &DataPtr, shape: &'a [usize], strides: &'a [isize]) -> RawTensor<'a> {
    RawTensor { ptr: p.as_ptr(), dtype: DType::F32, shape, strides, device: Device::Cpu }
}

fn memcpy2(dst: &DataPtr, src: &DataPtr, bytes: usize) {
    let (d, s) = (dst.as_ptr() as usize, src.as_ptr() as usize);
    for_each_chunk(bytes, bytes / 2, |r| {
        // SAFETY: disjoint halves of two distinct blocks of `bytes` bytes.
        unsafe { std::ptr::copy_nonoverlapping((s + r.start) as *const u8, (d + r.start) as *mut u8, r.len()) }
    });
}

fn main() {
    let a = CachingAllocator::new(4 << 30);
    let bytes = N * 4;
    let (src, dst) = (block(&a, bytes), block(&a, bytes));
    let gb = |moved: usize, t: f64| moved as f64 / t / 1e9;
    let t_memcpy = best(5, || memcpy2(&dst, &src, bytes));
    println!("threads {}", rayon::current_num_threads());
    println!("memcpy (glibc, 2 threads) 256 MiB: {:.2} ms {:.1} GB/s", t_memcpy * 1e3, gb(2 * bytes, t_memcpy));
    let report = |name: &str, moved: usize, t: f64, base: f64| {
        println!("{name:<44} {:8.2} ms {:6.1} GB/s  time/memcpy-of-same-bytes {:.2}", t * 1e3, gb(moved, t), t / base);
    };
    let sh = [N];
    let st = [1isize];
    let t = best(5, || unsafe { copy_strided(&raw(&dst, &sh, &st), &raw(&src, &sh, &st)).unwrap() });
    report("contiguous copy (engine)", 2 * bytes, t, t_memcpy);

    let sh = [8192usize, 8192];
    let (ds, ss) = ([8192isize, 1], [1isize, 8192]);
    let t = best(5, || unsafe { copy_strided(&raw(&dst, &sh, &ds), &raw(&src, &sh, &ss)).unwrap() });
    report("transpose 8192^2 f32 -> contiguous", 2 * bytes, t, t_memcpy);

    let sh = [256usize, 512, 512];
    let (ds, ss) = ([512 * 512isize, 512, 1], [1isize, 512 * 256, 256]);
    let t = best(5, || unsafe { copy_strided(&raw(&dst, &sh, &ds), &raw(&src, &sh, &ss)).unwrap() });
    report("permute [512,512,256] (2,0,1) -> contiguous", 2 * bytes, t, t_memcpy);

    let m = 1usize << 24; // 256^3
    let t_memcpy_small = best(5, || memcpy2(&dst, &src, m * 4));
    let sh = [256usize, 256, 256];
    let (ds, ss) = ([65536isize, 256, 1], [1isize, 65536, 256]);
    let t = best(5, || unsafe { copy_strided(&raw(&dst, &sh, &ds), &raw(&src, &sh, &ss)).unwrap() });
    report("permute 256^3 (2,0,1) -> contiguous (64 MiB)", 2 * m * 4, t, t_memcpy_small);

    let half = N / 2;
    let t_memcpy_half = best(5, || memcpy2(&dst, &src, half * 4));
    let sh = [8192usize, 4096];
    let (ds, ss) = ([4096isize, 1], [8192isize, 2]);
    let t = best(5, || unsafe { copy_strided(&raw(&dst, &sh, &ds), &raw(&src, &sh, &ss)).unwrap() });
    report("every-other-column [8192,8192][:, ::2]", 2 * half * 4, t, t_memcpy_half);

    let sh = [N];
    let st = [1isize];
    let t = best(5, || unsafe { fill_strided(&raw(&dst, &sh, &st), Scalar::Float(1.5)).unwrap() });
    report("fill 64M f32 (vs memcpy of 256 MiB)", bytes, t, t_memcpy);
    let t_plain = best(5, || {
        let d = dst.as_ptr() as usize;
        for_each_chunk(N, N / 2, |r| {
            // SAFETY: disjoint halves of dst.
            let s = unsafe { std::slice::from_raw_parts_mut((d as *mut f32).add(r.start), r.len()) };
            s.fill(1.5);
        })
    });
    report("plain fill loop (2 threads, regular stores)", bytes, t_plain, t_memcpy);

    // New outputs: a fresh 256 MiB buffer per call (uncached) vs recycled (cached).
    let sh = [N];
    let st = [1isize];
    let nocache = CachingAllocator::new(0);
    let t = best(5, || {
        let out = nocache.allocate(bytes).unwrap();
        unsafe { copy_strided(&raw(&out, &sh, &st), &raw(&src, &sh, &st)).unwrap() };
    });
    report("copy into fresh 256 MiB (huge pages, no cache)", 2 * bytes, t, t_memcpy);
    let t = best(5, || {
        let out = a.allocate(bytes).unwrap();
        unsafe { copy_strided(&raw(&out, &sh, &st), &raw(&src, &sh, &st)).unwrap() };
    });
    report("copy into cached 256 MiB", 2 * bytes, t, t_memcpy);
    let t = best(5, || {
        let mut v: Vec<f32> = Vec::with_capacity(N);
        // SAFETY: capacity N; the copy below writes all N before the Vec is read (never).
        let out = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr(), N) };
        memcpy2_slice(out, &src);
        drop(v);
    });
    report("memcpy into fresh Vec (4K pages)", 2 * bytes, t, t_memcpy);
}

fn memcpy2_slice(out: &mut [f32], src: &DataPtr) {
    let (d, s) = (out.as_mut_ptr() as usize, src.as_ptr() as usize);
    let bytes = out.len() * 4;
    for_each_chunk(bytes, bytes / 2, |r| {
        // SAFETY: disjoint halves of two distinct buffers of `bytes` bytes.
        unsafe { std::ptr::copy_nonoverlapping((s + r.start) as *const u8, (d + r.start) as *mut u8, r.len()) }
    });
}
