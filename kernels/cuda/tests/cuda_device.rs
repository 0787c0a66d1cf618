//! The CUDA runtime on this machine. Without a driver, initialisation and allocation are
//! `Err` values with a readable reason (checked on every machine). The working path (a GPU,
//! or the CPU-backed stand-in of the driver) is tested end to end in
//! `tests/tests/cuda_device.rs`.

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
        // A driver is here: the working path is tested in tests/tests/cuda_device.rs.
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
