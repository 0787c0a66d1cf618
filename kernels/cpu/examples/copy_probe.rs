//! Throwaway measurement of the copy/fill engines against a same-run streaming memcpy and a
//! plain two-thread fill (not a test).
//! `cargo run --release -p tensor-kernels-cpu --example copy_probe [-- FILTER]`

use std::time::Instant;
use tensor_core::registry::RawTensor;
use tensor_core::{Allocator, DType, DataPtr, Device, Scalar};
use tensor_kernels_cpu::alloc::CachingAllocator;
use tensor_kernels_cpu::copy::copy_strided;
use tensor_kernels_cpu::copy::stream::copy_bytes;
use tensor_kernels_cpu::fill::fill_strided;
use tensor_kernels_cpu::parallel::for_each_chunk;

const BYTES: usize = 256 << 20;

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

fn raw<'a>(p: &DataPtr, dtype: DType, shape: &'a [usize], strides: &'a [isize]) -> RawTensor<'a> {
    RawTensor { ptr: p.as_ptr(), dtype, shape, strides, device: Device::Cpu }
}

/// Two-thread copy of `bytes` with streaming stores (the STREAM copy (nt) yardstick).
fn memcpy_nt(dst: &DataPtr, src: &DataPtr, bytes: usize) {
    let (d, s) = (dst.as_ptr() as usize, src.as_ptr() as usize);
    for_each_chunk(bytes, bytes / 2, |r| {
        // SAFETY: disjoint halves of two distinct blocks of `bytes` bytes.
        unsafe { copy_bytes((d + r.start) as *mut u8, (s + r.start) as *const u8, r.len(), true) }
    });
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let a = CachingAllocator::new(4 << 30);
    let (src, dst) = (block(&a, BYTES), block(&a, BYTES));
    let gb = |moved: usize, t: f64| moved as f64 / t / 1e9;
    let t_memcpy = best(5, || memcpy_nt(&dst, &src, BYTES));
    println!("threads {}", rayon::current_num_threads());
    println!("memcpy nt 256 MiB: {:.2} ms {:.1} GB/s", t_memcpy * 1e3, gb(2 * BYTES, t_memcpy));
    let report = |name: &str, moved: usize, t: f64, base: f64| {
        println!("{name:<44} {:8.3} ms {:6.1} GB/s  ratio {:.3}", t * 1e3, gb(moved, t), base / t);
    };
    let on = |name: &str| filter.is_empty() || name.contains(filter.as_str());
    let copy = |name: &str, dt: DType, sh: &[usize], ds: &[isize], ss: &[isize], base: f64| {
        if !on(name) {
            return;
        }
        let moved = 2 * sh.iter().product::<usize>() * dt.size();
        let t = best(5, || unsafe { copy_strided(&raw(&dst, dt, sh, ds), &raw(&src, dt, sh, ss)).unwrap() });
        report(name, moved, t, base * moved as f64 / (2 * BYTES) as f64);
    };
    copy("contiguous f32", DType::F32, &[BYTES / 4], &[1], &[1], t_memcpy);
    copy("transpose f32 8192^2", DType::F32, &[8192, 8192], &[8192, 1], &[1, 8192], t_memcpy);
    copy("transpose f16 8192x16384", DType::F16, &[16384, 8192], &[8192, 1], &[1, 16384], t_memcpy);
    copy("transpose i64 4096x8192", DType::I64, &[8192, 4096], &[4096, 1], &[1, 8192], t_memcpy);
    copy(
        "permute f32 [512,512,256] (2,0,1)",
        DType::F32,
        &[256, 512, 512],
        &[512 * 512, 512, 1],
        &[1, 512 * 256, 256],
        t_memcpy,
    );
    copy("slice f32 [4096,16384][:, ::2]", DType::F32, &[4096, 8192], &[8192, 1], &[16384, 2], t_memcpy);
    // Cache-resident sizes, against a cache-resident memcpy of the same bytes.
    let small = 4 << 20;
    let t_small = best(50, || memcpy_nt(&dst, &src, small));
    let t_small_plain = best(50, || {
        let (d, s) = (dst.as_ptr() as usize, src.as_ptr() as usize);
        for_each_chunk(small, small / 2, |r| {
            // SAFETY: disjoint halves of two distinct blocks.
            unsafe { std::ptr::copy_nonoverlapping((s + r.start) as *const u8, (d + r.start) as *mut u8, r.len()) }
        })
    });
    let base = t_small.min(t_small_plain) * (2 * BYTES) as f64 / (2 * small) as f64;
    copy("transpose f32 1024^2", DType::F32, &[1024, 1024], &[1024, 1], &[1, 1024], base);
    copy("transpose f16 1024x2048", DType::F16, &[2048, 1024], &[1024, 1], &[1, 2048], base);
    if on("fill") {
        let n = small / 4;
        let (sh, st) = ([n], [1isize]);
        let t_plain = best(200, || {
            let d = dst.as_ptr() as usize;
            for_each_chunk(n, n / 2, |r| {
                // SAFETY: disjoint halves of dst.
                let s = unsafe { std::slice::from_raw_parts_mut((d as *mut f32).add(r.start), r.len()) };
                s.fill(1.5);
            })
        });
        report("plain fill 4 MiB (2 chunks)", small, t_plain, t_plain);
        let t = best(200, || unsafe { fill_strided(&raw(&dst, DType::F32, &sh, &st), Scalar::Float(1.5)).unwrap() });
        report("fill_strided 4 MiB (ratio vs plain)", small, t, t_plain);
        let n = BYTES / 4;
        let sh = [n];
        let t = best(5, || unsafe { fill_strided(&raw(&dst, DType::F32, &sh, &st), Scalar::Float(1.5)).unwrap() });
        report("fill_strided 256 MiB (ratio vs memcpy)", BYTES, t, t_memcpy / 2.0);
    }
}
