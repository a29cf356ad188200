// The stages of the MoE layer's host reference (layer.h), each a function from bounded inputs to
// bounded outputs: the values the device should compute, in double and rounded to bf16 where the
// device rounds, and a bound on how far the device's values may lie from them. Chained on exact
// inputs they make moe_layer_reference; fed the device's own input to one stage (bound 0) they
// check that stage alone, with a tight bound.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/moe/layer.h"

namespace weft::moe::detail {

// Rows of `cols` values, row-major, with a bound per value.
struct Bounded {
  int64_t cols = 0;
  std::vector<double> value, bound;
  int64_t rows() const { return cols ? static_cast<int64_t>(value.size()) / cols : 0; }
};

// Exact values (bound 0).
Bounded exact(std::vector<double> values, int64_t cols);

// out[i] = bf16(in[i] W[experts[i]]^T) with W [E, n, K] (K = in.cols): the grouped GEMM's rows.
Bounded project(const Bounded& in, const std::vector<double>& w, const std::vector<int32_t>& experts, int64_t n);
// out[i, c] = bf16(silu(in[i, c]) * in[i, F + c]), F = in.cols / 2: the activation's rows.
Bounded silu_mul(const Bounded& h);
// Y [T, D] = bf16(sum_j weights[t*k+j] * ys[index of dest_row[t*k+j]]): combine. `ys` holds
// the plan's real rows in order (real_rows below), so `slot_of_row[r]` is row r's index in it.
Bounded combine(const Bounded& ys, const std::vector<int64_t>& slot_of_row, const RoutingPlan& plan, int64_t top_k);

// The plan's rows that hold a token (row_token >= 0), in order, their experts, and for every
// row its index among them (-1 for padding rows).
struct RealRows {
  std::vector<int64_t> rows;
  std::vector<int32_t> experts;
  std::vector<int64_t> slot_of_row;
};
RealRows real_rows(const MoeShape& shape, const RoutingPlan& plan);

// The rows `rows` of a [R, cols] array (all `cols` of each).
std::vector<double> gather_rows(const std::vector<double>& all, const std::vector<int64_t>& rows, int64_t cols);

}  // namespace weft::moe::detail
