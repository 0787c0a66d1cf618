// kernel.h, then the CUDA prelude every generated program starts with: the precompiled
// header of programs whose text begins with exactly prelude.cuh (the stand-in's NVRTC then
// compiles only the rest of the program). Test-only.
#pragma once
#include "kernel.h"
#include "prelude.cuh"
