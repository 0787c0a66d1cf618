//! The CUDA runtime on this machine. Without a driver, initialisation and allocation are
//! `Err` values with a readable reason (checked on every machine). The tests that need a
//! GPU are `#[ignore = "needs a CUDA device"]`: on a machine with one, run
//! `cargo test --workspace -- --ignored`.

use tensor_core::{Device, DeviceRuntime};
use tensor_kernels_cuda::alloc::CudaAllocator;
use tensor_kernels_cuda::transfer::CudaRuntime;

#[test]
fn init_reports_a_readable_reason_or_finds_devices() {
    match tensor_kernels_cuda::runtime::init() {
        Ok(info) => {
            assert!(info.devices > 0);
            println!("CUDA: {} device(s), NVRTC {:?}", info.devices, info.nvrtc)
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("cuda: "), "{msg}");
            println!("no driver: init returned the error value {msg:?}");
        }
    }
}

#[test]
fn without_a_driver_allocation_and_transfers_are_errors() {
    if tensor_kernels_cuda::runtime::init().is_ok() {
        // A GPU is here: the working path is `gpu_allocator_round_trip` (run with --ignored).
        assert!(CudaAllocator::allocate_on(0, 16).is_ok());
        return;
    }
    let msg = CudaAllocator::allocate_on(0, 1000).unwrap_err().to_string();
    assert!(msg.starts_with("cuda: "), "{msg}");
    assert!(CudaRuntime.synchronize(Device::Cuda(0)).is_err());
    let mut back = [0u8; 4];
    // SAFETY: without a driver no device memory is touched; the call must fail first.
    let err = unsafe { CudaRuntime.copy_to_host(Device::Cuda(0), std::ptr::null(), &mut back) };
    assert!(err.is_err());
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_allocator_round_trip() {
    let block = CudaAllocator::allocate_on(0, 1000).expect("this test needs a CUDA device");
    assert_eq!(block.len(), 1000);
    let src: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    let mut back = vec![0u8; 1000];
    // SAFETY: the block holds 1000 bytes on cuda:0 and nothing else uses it.
    unsafe {
        CudaRuntime.copy_from_host(Device::Cuda(0), &src, block.as_ptr()).unwrap();
        CudaRuntime.copy_to_host(Device::Cuda(0), block.as_ptr(), &mut back).unwrap();
    }
    assert_eq!(src, back);
    let addr = block.as_ptr() as usize;
    drop(block);
    // a freed block is reused by the next request of its size class (stream order)
    let again = CudaAllocator::allocate_on(0, 900).unwrap();
    assert_eq!(again.as_ptr() as usize, addr);
}
