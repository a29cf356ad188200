// The routing plan: the contract every MoE kernel agrees on (route -> align -> dispatch ->
// grouped GEMM -> combine, and their backward), as the seed's extra/gemm/moe_routing.py defines
// it, and its host form, which the references compute and the tests compare with.
//
// T tokens each choose k of E experts: choice (t, j) is entry t*k + j of `expert_ids` and
// `weights`. Each expert's rows are padded to a multiple of `block_rows` (the grouped GEMM's
// row block), so a row block belongs to exactly one expert:
//
//   counts[e]       rows routed to expert e
//   offsets[e]      first row of expert e; offsets[0] = 0, offsets[e+1] = offsets[e] + round_up(counts[e])
//   dest_row[t*k+j] the row of choice (t, j): rows of one expert are in order of t*k + j (stable,
//                   so every device computes the same plan)
//   row_token[r]    the token whose copy row r holds, or -1 for a padding row
//   row_weight[r]   that choice's weight (0 for padding)
//   block_expert[b] the expert of row block b, or -1 for a block past offsets[E]
//
// Buffers are sized for the worst case, max_rows() rows, so no host synchronization is needed
// between align and the kernels after it.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace weft::moe {

struct MoeShape {
  int64_t tokens = 0, experts = 0, top_k = 0, block_rows = 256;

  int64_t choices() const { return tokens * top_k; }
  // The seed's m_max_for: every expert may waste at most block_rows - 1 rows on padding.
  int64_t max_rows() const { return ((choices() + block_rows - 1) / block_rows + experts) * block_rows; }
  int64_t max_blocks() const { return max_rows() / block_rows; }
  // Throws weft::Error naming the bad field (tokens >= 1, 1 <= top_k <= experts, block_rows a
  // power of two >= 16, the row count within int32).
  void validate() const;
};

struct RoutingPlan {
  std::vector<int32_t> expert_ids;    // [T*k]
  std::vector<float> weights;         // [T*k]
  std::vector<int32_t> counts;        // [E]
  std::vector<int32_t> offsets;       // [E+1]
  std::vector<int32_t> dest_row;      // [T*k]
  std::vector<int32_t> row_token;     // [max_rows]
  std::vector<float> row_weight;      // [max_rows]
  std::vector<int32_t> block_expert;  // [max_blocks]
};

// The plan for given choices (the definition above, computed sequentially on the host). Throws
// weft::Error for an expert id outside [0, E) or a repeated expert within one token.
RoutingPlan plan_reference(const MoeShape& shape, const std::vector<int32_t>& expert_ids, const std::vector<float>& weights);

// A random routing, for tests and benchmarks: k distinct experts per token drawn uniformly (or,
// `skew`, experts 0..k-1 for every token), weights uniform in [0, 1), and its plan_reference.
RoutingPlan random_plan(const MoeShape& shape, std::mt19937_64& gen, bool skew = false);

}  // namespace weft::moe
