//! Zero-copy, counted: adopting an ndarray, a DLPack round trip, a borrowed ndarray view and
//! a safetensors load of 4 MiB of data allocate only bookkeeping (a few hundred bytes on
//! the calling thread), never a buffer the size of the data.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tensor_ops::prelude::*;

struct Counting;

thread_local! {
    static BYTES: Cell<usize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; the counters are thread-local cells.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = BYTES.try_with(|b| b.set(b.get() + layout.size()));
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
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

/// (bytes allocated, largest allocation) on this thread while `f` runs, and its result.
fn counted<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    BYTES.with(|b| b.set(0));
    LARGEST.with(|l| l.set(0));
    let r = f();
    (BYTES.with(Cell::get), LARGEST.with(Cell::get), r)
}

const N: usize = 1 << 20; // f32 elements: 4 MiB

#[test]
fn interop_paths_allocate_no_data_buffer() {
    let arr =
        tensor_ops::tensor_core::ndarray::Array::from_shape_vec((1024, 1024), vec![1.5f32; N]).unwrap().into_dyn();
    let (bytes, largest, t) = counted(|| Tensor::from_ndarray(arr).unwrap());
    assert!(bytes < 4096 && largest < 1024, "from_ndarray: {bytes} bytes, largest {largest}");

    let (bytes, largest, back) = counted(|| Tensor::from_dlpack(t.t().unwrap().to_dlpack().unwrap()).unwrap());
    assert!(bytes < 4096 && largest < 1024, "DLPack round trip: {bytes} bytes, largest {largest}");
    assert_eq!(back.shape(), &[1024, 1024]);

    let (bytes, largest, s) = counted(|| back.with_ndarray_view::<f32, _>(|v| v[[3, 5]]).unwrap());
    assert!(bytes < 4096 && largest < 1024, "with_ndarray_view: {bytes} bytes, largest {largest}");
    assert_eq!(s, 1.5);

    let path = std::env::temp_dir().join(format!("zero-copy-{}.safetensors", std::process::id()));
    tensor_ops::safetensors_io::save(&path, &[("w", &t)]).unwrap();
    let (bytes, largest, loaded) = counted(|| tensor_ops::safetensors_io::load(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    assert!(bytes < 16 * 1024 && largest < 8 * 1024, "safetensors load: {bytes} bytes, largest {largest}");
    assert_eq!(loaded[0].1.shape(), &[1024, 1024]);
    assert_eq!(loaded[0].1.sum_all().unwrap().to_vec::<f32>().unwrap(), vec![1.5 * N as f32]);
}
