// Shared by the two halves of the CPU-backed CUDA stand-in (driver.cpp → libcuda.so,
// nvrtc.cpp → libnvrtc.so.13): the image format NVRTC hands the driver. Test-only.
#pragma once

/// A "compiled" image is this line, then the absolute path of the host shared library
/// holding the program's kernels (built by the stand-in's nvrtcCompileProgram), NUL-ended.
#define TOPS_STANDIN_IMAGE_MAGIC "TOPS-STANDIN-IMAGE v1\n"

/// Symbols every kernel `K` of an image exports (see nvrtc.cpp's wrapper):
///   void tops_standin_launch__K(unsigned gx, unsigned gy, unsigned gz,
///                               unsigned bx, unsigned by, unsigned bz, const void* args);
///   unsigned long long tops_standin_argsize__K(void);   // sizeof the kernel's parameter
///   int tops_standin_pointers__K(const void* args, unsigned long long* out, int cap);
///       // the device pointers in the argument block (-1: layout unknown)
#define TOPS_STANDIN_LAUNCH "tops_standin_launch__"
#define TOPS_STANDIN_ARGSIZE "tops_standin_argsize__"
#define TOPS_STANDIN_POINTERS "tops_standin_pointers__"
