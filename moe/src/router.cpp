// route and align chained on device buffers (router.h).
#include "weft/moe/router.h"

#include <chrono>

#include "route_inputs.h"

namespace weft::moe {

Router compile_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, rt::CompileCache* cache) {
  config.validate();
  const MoeShape shape{config.tokens, config.experts, config.top_k, block_rows};
  shape.validate();
  return {config, shape, rt::CompiledKernel::compile(device, route(config, device.arch()), cache), compile_align(device, shape, cache)};
}

void launch_router(rt::Device& device, const Router& router, const rt::DeviceArray& logits, const rt::DeviceArray* bias, const PlanBuffers& plan) {
  std::vector<rt::DeviceArray> args{plan.expert_ids, plan.weights, logits};
  if (router.config.scoring == Scoring::SigmoidGroupedTopK) {
    if (!bias) throw Error("moe router: SigmoidGroupedTopK needs the correction bias");
    args.push_back(*bias);
  }
  router.route.launch(device, args);
  launch_align(device, router.align, plan);
}

gemm::RunResult run_router(rt::Device& device, const RouteConfig& config, int64_t block_rows, uint64_t seed, rt::CompileCache* cache,
                           RouteInputs inputs) {
  gemm::RunResult r;
  const Router router = compile_router(device, config, block_rows, cache);
  r.compile = router.route.times();
  const RouteData d = draw_route_inputs(config, inputs, seed);
  const rt::OwnedArray logits(device, rt::upload(device, config.logits, d.logits_bytes, "logits"));
  const rt::OwnedArray bias(device, rt::upload(device, dtypes::float32, d.bias_bytes, "correction_bias"));
  const PlanBuffers plan = allocate_plan(device, router.shape);
  auto t = std::chrono::steady_clock::now();
  launch_router(device, router, logits, &bias.get(), plan);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const RoutingPlan got = download_plan(device, router.shape, plan);
  t = std::chrono::steady_clock::now();
  r.check = check_route(config, d.logits, d.bias, got.expert_ids, got.weights);
  if (r.check.passed()) {  // the ids are valid: plan_reference takes them
    const gemm::Check plan_check = compare_plans(got, plan_reference(router.shape, got.expert_ids, got.weights));
    r.check.count += plan_check.count;
    r.check.bad += plan_check.bad;
    r.check.first_bad = plan_check.first_bad;
  }
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  return r;
}

}  // namespace weft::moe
