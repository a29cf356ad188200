// route and align chained on device buffers (router.h).
#include "weft/moe/router.h"

#include <chrono>

#include "route_inputs.h"

namespace weft::moe {

Router compile_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, rt::CompileCache* cache) {
  config.validate();
  const MoeShape shape{config.tokens, config.experts, config.top_k, block_rows};
  shape.validate();
  return {config, shape, rt::CompiledKernel::compile(device, route_counting(config, device.arch()), cache), compile_align(device, shape, cache)};
}

void launch_router(rt::Device& device, const Router& router, const rt::DeviceArray& logits, const rt::DeviceArray* bias, const PlanBuffers& plan) {
  const bool grouped = router.config.scoring == Scoring::SigmoidGroupedTopK;
  if (grouped && !bias) throw Error("moe router: SigmoidGroupedTopK needs the correction bias");
  // Softmax's kernel has no bias parameter: the workspace follows the logits (route_counting).
  std::vector<rt::DeviceArray> args{plan.expert_ids, plan.weights, logits};
  if (grouped) args.push_back(*bias);
  args.push_back(plan.workspace);
  router.route.launch(device, args);
  launch_align_place(device, router.align, plan);
}

gemm::RunResult run_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, uint64_t seed, rt::CompileCache* cache,
                           RouteInputs inputs) {
  gemm::RunResult r;
  const Router router = compile_router(device, config, block_rows, cache);
  r.compile = router.route.times();
  RouteData d = draw_route_inputs(config, inputs, seed);
  const rt::OwnedArray logits(device, rt::upload(device, config.logits, d.logits_bytes, "logits"));
  const rt::OwnedArray bias(device, rt::upload(device, dtypes::float32, d.bias_bytes, "correction_bias"));
  const PlanBuffers plan = allocate_plan(device, router.shape);
  // Twice on the same buffers, the second time on other logits: its counts go to the workspace's
  // other histogram, which the first run's align_place zeroed, and align_place must read that
  // one (a stale count, or the first run's histogram, would show in the plan).
  for (int run = 0; run < 2; ++run) {
    if (run == 1) {
      d = draw_route_inputs(config, inputs, seed + 1);
      device.copy_to_device(logits.get().buffer, d.logits_bytes);
      device.copy_to_device(bias.get().buffer, d.bias_bytes);
    }
    const auto t = std::chrono::steady_clock::now();
    launch_router(device, router, logits, &bias.get(), plan);
    device.synchronize();
    if (run == 0) r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const RoutingPlan got = download_plan(device, router.shape, plan);
    const std::string context = "run " + std::to_string(run + 1) + ": ";
    const auto reference_start = std::chrono::steady_clock::now();
    const gemm::Check route_check = check_route(config, d.logits, d.bias, got.expert_ids, got.weights);
    r.check.merge(route_check, context);
    if (route_check.passed()) r.check.merge(compare_plans(got, plan_reference(router.shape, got.expert_ids, got.weights)), context);  // valid ids
    if (run == 0) r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - reference_start).count();
    r.check.merge(check_workspace_ready(device, router.shape, plan), context);
  }
  return r;
}

}  // namespace weft::moe
