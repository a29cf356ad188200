// Pieces the permute kernels share (permute.cpp, permute_backward.cpp).
#pragma once

#include <string>

#include "weft/dsl/builder.h"

namespace weft::moe::detail {

// weft::Error unless D >= 1 and the rows are bfloat16 or float32.
void check_row(const char* kernel, int64_t d, DType dtype);
void check_top_k(const char* kernel, int64_t top_k);

// row_token[row] as an index clamped into [0, T) (`tokens`: the variable T).
UOp token_of(const UOp& row_token, const UOp& row, const UOp& tokens);

// out[t] = sum_{j = 0..k-1} (weights[t*k+j] *) src[dest_row[t*k+j]], in fp32 in order of j:
// combine (weighted) and dispatch's backward (not). Slots: 0 out [T, D], 1 src [R, D],
// 2 dest_row [T*k], 3 weights [T*k] where weighted.
struct WeightedGather {
  std::string name;
  int64_t d, top_k;
  DType input, output;
  bool weighted;
};
UOp weighted_gather_sum(const WeightedGather& g);

}  // namespace weft::moe::detail
