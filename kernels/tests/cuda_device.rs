//! Tests that need a real GPU: they print why they skipped and pass when there is none.

#[test]
fn init_reports_a_readable_reason_or_finds_devices() {
    match tensor_kernels::cuda::runtime::init() {
        Ok(info) => println!("CUDA: {} device(s), NVRTC {:?}", info.devices, info.nvrtc),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("cuda: "), "{msg}");
            println!("SKIPPED: {msg}");
        }
    }
}
