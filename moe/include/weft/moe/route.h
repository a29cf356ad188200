// route: router logits [T, E] -> each token's k experts (expert_ids [T*k], int32, best first)
// and their weights (weights [T*k], float32), the first stage of the routing plan (plan.h).
//
// Scorings:
//   SoftmaxTopK (the seed's moe_routing.py): the k largest logits; weights = softmax over the k
//     chosen logits.
//   SigmoidGroupedTopK (DeepSeek-V3's noaux_tc gate): s = sigmoid(logit); the selection score is
//     s + correction_bias[e] (selection only). The experts form n_group groups of E / n_group
//     consecutive ids; a group scores the sum of its two best selection scores; the topk_group
//     best groups are kept, and the k best experts of the kept groups are chosen. Weights = s of
//     the chosen (without bias), divided by their sum when `normalize`, times `scaling`
//     (routed_scaling_factor).
//
// Order and ties: choice j of a token is its (j+1)-th best expert; equal scores (-0 and +0 are
// equal; and equal group scores) go to the lower id, so the result is deterministic.
//
// NaN logits: a NaN ranks below every number, -inf included (a token whose logits are all NaN
// still chooses experts 0..k-1), and it counts as -inf in the weights: softmax gives it weight 0
// and sigmoid s = 0. Weights are never NaN: softmax is taken as its limit (chosen values equal to
// the largest, +inf or -inf included, share its weight equally: all -inf/NaN -> 1/k each), and a
// normalized sigmoid whose chosen s sum to 0 gives 1/k each. The correction bias must be finite.
//
// Kernel schedule (docs/moe.md, "route"): a token's experts spread over W lanes of one wave, 4
// waves a workgroup: just enough lanes for at most 32 experts a lane (and at least k), lane l
// loading the token's vectors l, l + W, ... of up to 16 bytes where E allows. Ranked sigmoid
// groups fill whole rows of those vectors; groups narrower than W lanes take the whole wave (64
// lanes on CDNA, 32 on NVIDIA; lane l holds experts l, l + W, ...). A
// score's key is its order-preserving bits above ~expert id (64 bits; 32 for bf16 softmax logits,
// whose 16 order bits suffice), so ties go to the lower id. Each lane keeps its k best keys sorted
// (sorted runs merged by their best halves); each of the k rounds takes a wave max (xor
// butterfly) of the lanes' first keys, the winning lane shifts its list, and lane j keeps round
// j's winner and computes its weight (softmax: a wave sum for the denominator). Grouped scoring
// first folds each group's top-2 over its slots and with an xor butterfly over its lanes, and
// ranks the groups' scores in each lane; sigmoid's lane j reads its winner's logit again for the
// weight.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "weft/dsl/uop.h"
#include "weft/gemm/matmul_relu.h"

namespace weft::moe {

enum class Scoring { SoftmaxTopK, SigmoidGroupedTopK };

struct RouteConfig {
  int64_t tokens = 0, experts = 0, top_k = 0;
  Scoring scoring = Scoring::SoftmaxTopK;
  DType logits = dtypes::float32;  // float32 or bfloat16
  // SigmoidGroupedTopK only: n_group divides E into groups of a power of two >= 2 experts (or
  // n_group = 1: no group stage); 1 <= topk_group <= n_group; top_k <= topk_group * E / n_group.
  int64_t n_group = 1, topk_group = 1;
  bool normalize = true;
  double scaling = 1.0;
  // Throws weft::Error naming the bad field: 1 <= tokens, 1 <= experts <= 512, 1 <= top_k <=
  // min(8, experts), the group fields above, a logits dtype other than float32/bfloat16.
  void validate() const;
};

// The route kernel for a target ("gfx950", "gfx942", "sm_90": its wave width). Buffers: slot 0
// expert_ids [T*k] int32, 1 weights [T*k] float32, 2 logits [T*E], 3 correction_bias [E]
// float32 (SigmoidGroupedTopK only).
UOp route(const RouteConfig& config, std::string_view arch);
// route, and each choice also counted into align's workspace (the last slot: 3 for softmax, whose
// kernel has no bias, 4 for sigmoid; AlignWorkspace(T*k, E),
// as allocate_plan and align_place leave it): atomic adds of each choice into its span's count and
// its chunk's count of its expert in the histogram the fill parity names, so align_count need not run
// (router.h).
UOp route_counting(const RouteConfig& config, std::string_view arch);

// The host reference, in double precision, with the rules above.
struct RouteResult {
  std::vector<int32_t> expert_ids;
  std::vector<double> weights;
};
RouteResult route_reference(const RouteConfig& config, const std::vector<double>& logits, const std::vector<double>& bias);

// Compares a device result with the reference. Ids must match the reference's ranking exactly,
// except that a choice may differ where the two experts' scores differ by at most the device's
// rounding (sigmoid scoring only; softmax ranks the input values themselves, exactly), and for
// grouped scoring, where groups tie within rounding at the cut, any such selection of groups is
// accepted. Every id must be in range and distinct per token. Weights are checked against the
// weights the reference computes for the device's ids (relative 1e-5).
gemm::Check check_route(const RouteConfig& config, const std::vector<double>& logits, const std::vector<double>& bias,
                        const std::vector<int32_t>& expert_ids, const std::vector<float>& weights);

// What run_route feeds the kernel.
enum class RouteInputs {
  Random,     // logits uniform in [-4, 4], bias uniform in [-0.5, 0.5]
  Quantized,  // logits from 4 values and bias from 4: many exact ties
  WithNaN,    // random, a quarter of the logits NaN and every 7th token all NaN
  SignedZeros,  // logits -0, +0 (three in four: the top k are zeros) or -1: -0 and +0 are equal scores (the lower id wins)
  Extremes,     // half the logits +-inf, NaN of either sign, +-0, the dtype's smallest subnormal and largest finite, both signs; half random
};

// Random inputs from `seed`, poisoned outputs, a launch, and check_route.
gemm::RunResult run_route(rt::Device& device, const RouteConfig& config, uint64_t seed, rt::CompileCache* cache = nullptr,
                          RouteInputs inputs = RouteInputs::Random);

}  // namespace weft::moe
