// The routing weights' backward (moe/route_backward.h) on every device at hand, against the
// analytic gradients computed on the host in double, for softmax-of-top-k and DeepSeek-V3's
// sigmoid scoring (normalized or not, with a routed scaling factor).
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/moe/route_backward.h"

using namespace weft;

WEFT_DEVICE_TEST_CASE("moe route backward: dlogits of softmax-of-top-k and sigmoid scoring match the analytic gradient") {
  const moe::RouteBackwardConfig configs[] = {{moe::Scoring::SoftmaxTopK, true, 1.0f},
                                              {moe::Scoring::SoftmaxTopK, true, 2.5f},
                                              {moe::Scoring::SigmoidGroupedTopK, true, 2.5f},
                                              {moe::Scoring::SigmoidGroupedTopK, false, 1.0f}};
  struct Case {
    int64_t tokens, experts, top_k;
    bool skew;
  };
  const Case cases[] = {{1, 8, 1, false}, {37, 8, 2, false}, {19, 64, 8, false}, {5, 512, 8, false}, {23, 300, 8, true}};
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (const auto& config : configs)
      for (const Case& c : cases) {
        const std::string name = std::string(config.scoring == moe::Scoring::SoftmaxTopK ? "softmax" : "sigmoid") +
                                 (config.normalize ? " normalized" : "") + " scale " + std::to_string(config.routed_scaling_factor) +
                                 " T=" + std::to_string(c.tokens) + " E=" + std::to_string(c.experts) + " k=" + std::to_string(c.top_k);
        CAPTURE(name);
        const gemm::RunResult r = moe::run_route_backward(*dev, {c.tokens, c.experts, c.top_k, 16}, config, weft::testing::rng()(), nullptr, c.skew);
        INFO(r.check.first_bad);
        CHECK(r.check.passed());
      }
  }
}

TEST_CASE("moe route backward: bad configurations and mismatched buffers are errors that name them") {
  CHECK_THROWS_WITH_AS(moe::route_backward_kernel(0, 1, {}), doctest::Contains("experts must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(moe::route_backward_kernel(8, 9, {}), doctest::Contains("top_k must lie in [1, min(experts, 64)]"), Error);
  CHECK_THROWS_WITH_AS(moe::route_backward_kernel(8, 2, {moe::Scoring::SigmoidGroupedTopK, true, INFINITY}), doctest::Contains("must be finite"), Error);
  if (weft::testing::emulators().empty()) return;
  auto dev = rt::open_device("emu:gfx950");
  const moe::MoeShape s{4, 8, 2, 16};
  const rt::OwnedArray logits(*dev, weft::testing::put(*dev, dtypes::float32, std::vector<float>(32))),
      ids(*dev, weft::testing::put(*dev, dtypes::int32, std::vector<int32_t>(8))), dw(*dev, weft::testing::put(*dev, dtypes::float32, std::vector<float>(7))),
      out(*dev, weft::testing::poisoned(*dev, dtypes::float32, 32));
  CHECK_THROWS_WITH_AS(moe::launch_route_backward(*dev, s, {}, logits, ids, dw, out), doctest::Contains("dW [T*k] must hold 8 float32 values, got 7 float32"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_route_backward(*dev, s, {}, logits, logits, ids, out), doctest::Contains("expert_ids [T*k] must hold 8 int32 values, got 32 float32"), Error);
}
