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
#include "weft/runtime/mesh.h"

namespace weft::cli {

bool is_moe_kernel(const std::string& name);

// Prints what runs (kernel, sizes, dtype, device, seed) and returns the run's result. `size` is
// the kernel's --size (empty: its default), `dtype` its --dtype (none: bfloat16); throws
// UsageError for a size of the wrong form or a --dtype given to a kernel that takes none.
gemm::RunResult run_moe(const std::string& kernel, rt::Device& device, const std::vector<int64_t>& size, std::optional<DType> dtype,
                        uint64_t seed, rt::CompileCache& cache);

// `weft run moe_layer --device "emu:gfx950 x 4"`: the layer on the mesh's first device, checked
// against its reference, and expert-parallel over the mesh, checked against it bit for bit
// (MoeLayerRunOptions::expert_parallel). Throws UsageError for another kernel or a --dtype.
gemm::RunResult run_moe_on_mesh(const std::string& kernel, rt::Mesh& mesh, const std::vector<int64_t>& size, bool dtype_given, uint64_t seed,
                                rt::CompileCache& cache);

}  // namespace weft::cli
