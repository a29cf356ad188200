#include "weft/moe/plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "weft/dsl/error.h"

namespace weft::moe {

void MoeShape::validate() const {
  auto fail = [](const std::string& what) { throw Error("moe: " + what); };
  if (tokens < 1) fail("tokens must be >= 1, got " + std::to_string(tokens));
  if (experts < 1) fail("experts must be >= 1, got " + std::to_string(experts));
  if (top_k < 1 || top_k > experts)
    fail("top_k must lie in [1, experts = " + std::to_string(experts) + "], got " + std::to_string(top_k));
  if (block_rows < 16 || (block_rows & (block_rows - 1)) != 0)
    fail("block_rows must be a power of two >= 16, got " + std::to_string(block_rows));
  if (max_rows() > INT32_MAX) fail("tokens * top_k too large: " + std::to_string(max_rows()) + " rows do not fit int32 row ids");
}

RoutingPlan plan_reference(const MoeShape& shape, const std::vector<int32_t>& expert_ids, const std::vector<float>& weights) {
  shape.validate();
  const int64_t T = shape.tokens, E = shape.experts, k = shape.top_k, B = shape.block_rows;
  if (static_cast<int64_t>(expert_ids.size()) != T * k || static_cast<int64_t>(weights.size()) != T * k)
    throw Error("moe: plan_reference needs tokens * top_k = " + std::to_string(T * k) + " expert ids and weights");
  RoutingPlan p;
  p.expert_ids = expert_ids;
  p.weights = weights;
  p.counts.assign(static_cast<size_t>(E), 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = expert_ids[static_cast<size_t>(t * k + j)];
      if (e < 0 || e >= E) throw Error("moe: expert id " + std::to_string(e) + " of choice (" + std::to_string(t) + ", " + std::to_string(j) + ") is outside [0, " + std::to_string(E) + ")");
      for (int64_t i = 0; i < j; ++i)
        if (expert_ids[static_cast<size_t>(t * k + i)] == e)
          throw Error("moe: token " + std::to_string(t) + " chooses expert " + std::to_string(e) + " twice");
      p.counts[static_cast<size_t>(e)]++;
    }
  p.offsets.assign(static_cast<size_t>(E + 1), 0);
  for (int64_t e = 0; e < E; ++e)
    p.offsets[static_cast<size_t>(e + 1)] = p.offsets[static_cast<size_t>(e)] + static_cast<int32_t>((p.counts[static_cast<size_t>(e)] + B - 1) / B * B);
  p.row_token.assign(static_cast<size_t>(shape.max_rows()), -1);
  p.row_weight.assign(static_cast<size_t>(shape.max_rows()), 0.0f);
  p.dest_row.assign(static_cast<size_t>(T * k), -1);
  std::vector<int32_t> next(p.offsets.begin(), p.offsets.end() - 1);
  for (int64_t c = 0; c < T * k; ++c) {  // in order of t*k + j: the plan is stable
    const int32_t r = next[static_cast<size_t>(expert_ids[static_cast<size_t>(c)])]++;
    p.dest_row[static_cast<size_t>(c)] = r;
    p.row_token[static_cast<size_t>(r)] = static_cast<int32_t>(c / k);
    p.row_weight[static_cast<size_t>(r)] = weights[static_cast<size_t>(c)];
  }
  p.block_expert.assign(static_cast<size_t>(shape.max_blocks()), -1);
  for (int64_t e = 0; e < E; ++e)
    for (int32_t r = p.offsets[static_cast<size_t>(e)]; r < p.offsets[static_cast<size_t>(e + 1)]; r += static_cast<int32_t>(B))
      p.block_expert[static_cast<size_t>(r / B)] = static_cast<int32_t>(e);
  return p;
}

RoutingPlan random_plan(const MoeShape& shape, std::mt19937_64& gen, bool skew) {
  shape.validate();
  std::vector<int32_t> experts(static_cast<size_t>(shape.experts)), ids;
  std::iota(experts.begin(), experts.end(), 0);
  ids.reserve(static_cast<size_t>(shape.choices()));
  for (int64_t t = 0; t < shape.tokens; ++t) {
    if (!skew)  // a partial Fisher-Yates shuffle: the first k are k distinct experts
      for (int64_t j = 0; j < shape.top_k; ++j)
        std::swap(experts[static_cast<size_t>(j)], experts[static_cast<size_t>(std::uniform_int_distribution<int64_t>(j, shape.experts - 1)(gen))]);
    ids.insert(ids.end(), experts.begin(), experts.begin() + shape.top_k);
  }
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> w(ids.size());
  for (float& x : w) x = u(gen);
  return plan_reference(shape, ids, w);
}

}  // namespace weft::moe
