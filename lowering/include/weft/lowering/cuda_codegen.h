// The CUDA C++ renderer: a lowered kernel's linear program as one self-contained CUDA C++
// translation unit (no headers: 16-bit floats are converted with PTX `cvt`, matrix ops are
// inline `mma.sync`, global-to-shared copies inline `cp.async`), for NVRTC. Needs no LLVM.
#pragma once

#include <string>

#include "weft/lowering/pipeline.h"

namespace weft::cuda {

// `sm`: the target's compute capability as a number, 80 or more (sm_80 Ampere, sm_90 Hopper).
// Throws weft::Error naming the node it has no CUDA form for.
std::string render_cuda(const lower::LoweredKernel& kernel, int sm);

}  // namespace weft::cuda
