// The CUDA C++ renderer: a lowered kernel's linear program as one self-contained CUDA C++
// translation unit (no headers: 16-bit floats are converted with PTX `cvt`, matrix ops are
// inline `mma.sync`, global-to-shared copies inline `cp.async`), for NVRTC. Needs no LLVM.
#pragma once

#include <string>
#include <string_view>

#include "weft/lowering/pipeline.h"

namespace weft::cuda {

// `sm`: the target's compute capability as a number, 80 or more (sm_80 Ampere, sm_90 Hopper).
// Throws weft::Error naming the node it has no CUDA form for.
std::string render_cuda(const lower::LoweredKernel& kernel, int sm);

// The architecture NVRTC compiles the kernel for on a device of compute capability `sm`:
// "sm_90a" where the kernel uses Hopper's arch-specific instructions (opsets::hopper: mbarrier
// transactions, wgmma), which only sm_90a has; "sm_XY" otherwise. Throws weft::Error naming the
// first such node when `sm` is not 90.
std::string nvrtc_arch(const lower::LoweredKernel& kernel, int sm);

// The compute capability an NVIDIA target names: "sm_90" -> 90. Throws weft::Error for a name that
// is not "sm_" and digits.
int sm_number(std::string_view arch);

// Whether the kernel rendered for compute capability `sm` waits at entry for the kernel before it
// (griddepcontrol.wait: KernelInfo::dependent_launch, on sm_90 and newer), and so is launched with
// programmatic stream serialization (rt::LaunchOrder::programmatic).
bool waits_for_predecessor(const lower::LoweredKernel& kernel, int sm);

// Shared memory above the 48 KiB a kernel may declare statically is dynamic (`extern
// __shared__`): the launch must opt in (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES) and pass
// this many bytes. 0 when the kernel's LOCAL buffers fit in static shared memory. The rendered
// kernel names the same number in a device global, `weft_dynamic_shared_<kernel>`, which the CUDA
// device reads from the loaded module.
int64_t dynamic_shared_bytes(const lower::LoweredKernel& kernel);
inline constexpr int64_t kStaticSharedLimit = 48 * 1024;

}  // namespace weft::cuda
