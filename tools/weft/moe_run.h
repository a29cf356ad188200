// `weft run moe_*`: the MoE routing kernels' host entry points (moe/), each drawing random
// inputs from the seed, launching on the device and checking against its host reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/gemm/matmul_relu.h"
#include "weft/runtime/compile_cache.h"
#include "weft/runtime/device.h"

namespace weft::cli {

bool is_moe_kernel(const std::string& name);

// Prints what runs (kernel, sizes, dtype, device, seed) and returns the run's result. `size` is
// the kernel's --size (empty: its default), `dtype` its --dtype (none: bfloat16); throws
// UsageError for a size of the wrong form or a --dtype given to a kernel that takes none.
gemm::RunResult run_moe(const std::string& kernel, rt::Device& device, const std::vector<int64_t>& size, std::optional<DType> dtype,
                        uint64_t seed, rt::CompileCache& cache);

}  // namespace weft::cli
