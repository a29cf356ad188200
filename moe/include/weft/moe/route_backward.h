// The backward of route's weights: from the gradient of the routing weights dW [T*k] (combine's
// backward) to the gradient of the router logits dlogits [T, E], as a DSL kernel and a host
// entry point. The top-k selection (and DeepSeek-V3's correction bias, which only selects) has
// no gradient; only the weights of the chosen experts do.
//
// For token t with chosen experts e_j (expert_ids[t*k+j]) and weights w_j (weights[t*k+j]):
//
//   Softmax (softmax over the k chosen logits, the seed's route; scale = routed_scaling_factor):
//     p_j = softmax_j(logits[t, e_j]),  w_j = scale * p_j
//     dlogits[t, e_j] = scale * p_j * (dW_j - sum_i p_i dW_i);  0 for experts not chosen
//   Sigmoid (DeepSeek-V3): s_e = sigmoid(logits[t, e])
//     normalize:  w_j = scale * s_j / S, S = sum_i s_i (over the chosen)
//                 dlogits[t, e_j] = scale / S * (dW_j - sum_i (s_i / S) dW_i) * s_j (1 - s_j)
//     otherwise:  w_j = scale * s_j,  dlogits[t, e_j] = scale * dW_j * s_j (1 - s_j)
//
// The three facts of route.h's RouteConfig the backward needs (backward_config picks them).
#pragma once

#include <cstdint>

#include "weft/gemm/matmul_relu.h"
#include "weft/moe/plan.h"
#include "weft/moe/route.h"

namespace weft::moe {

struct RouteBackwardConfig {
  Scoring scoring = Scoring::SoftmaxTopK;
  bool normalize = true;  // Sigmoid only: weights divided by the sum over the chosen experts
  float routed_scaling_factor = 1.0f;
};

// The backward of the weights route(`config`) computes (its softmax is not scaled).
inline RouteBackwardConfig backward_config(const RouteConfig& config) {
  const bool softmax = config.scoring == Scoring::SoftmaxTopK;
  return {config.scoring, config.normalize, softmax ? 1.0f : static_cast<float>(config.scaling)};
}

// slot 0 dlogits [T, E] float32, 1 logits [T, E] float32, 2 expert_ids [T*k] int32,
// 3 dW [T*k] float32; T bound at launch. One workgroup per token; every element written.
UOp route_backward_kernel(int64_t experts, int64_t top_k, const RouteBackwardConfig& config);

void launch_route_backward(rt::Device& device, const MoeShape& shape, const RouteBackwardConfig& config, const rt::DeviceArray& logits,
                           const rt::DeviceArray& expert_ids, const rt::DeviceArray& dw, const rt::DeviceArray& dlogits,
                           rt::CompileCache* cache = nullptr);

// Random logits (normal, sd 2) and dW, k distinct experts per token (`skew`: experts 0..k-1), a
// poisoned dlogits, a launch, and a check against the formulas above in double.
gemm::RunResult run_route_backward(rt::Device& device, const MoeShape& shape, const RouteBackwardConfig& config, uint64_t seed,
                                   rt::CompileCache* cache = nullptr, bool skew = false);

}  // namespace weft::moe
