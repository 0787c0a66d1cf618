//! CUDA runtime, NVRTC compilation and kernel templates.
