// route and align chained on device buffers: the first stages of an MoE layer. The route
// kernel writes the plan's expert_ids and weights; align reads them and writes the rest; the
// launches follow each other on the device with no host synchronization between them.
#pragma once

#include "weft/moe/align.h"
#include "weft/moe/route.h"

namespace weft::moe {

struct Router {
  RouteConfig config;
  MoeShape shape;
  rt::CompiledKernel route;
  AlignKernels align;
};
// Throws weft::Error for a bad config or block_rows (RouteConfig::validate, MoeShape::validate).
Router compile_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, rt::CompileCache* cache = nullptr);
// `logits` [T*E] of config.logits; `bias` [E] float32 for SigmoidGroupedTopK (ignored
// otherwise); `plan` from allocate_plan(device, router.shape).
void launch_router(rt::Device& device, const Router& router, const rt::DeviceArray& logits, const rt::DeviceArray* bias, const PlanBuffers& plan);

// Random logits (as run_route draws them), both stages launched back to back, then route's
// check on the ids and weights and align's bit-exact comparison of the plan with plan_reference
// of those ids and weights.
gemm::RunResult run_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, uint64_t seed, rt::CompileCache* cache = nullptr,
                           RouteInputs inputs = RouteInputs::Random);

}  // namespace weft::moe
