// NVIDIA's mma.sync.m16n8k16 fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"),
// f16/bf16 inputs and f32 accumulators, for a warp of 32 lanes: lane l is in group g = l / 4
// with thread-in-group t = l % 4.
//   A (16x16, row-major), 8 elements: row g + 8*((e/2) % 2), column 2t + e%2 + 8*(e/4)
//   B (16x8, column-major), 4 elements: row (k) 2t + e%2 + 8*(e/2), column g
//   C/D (16x8), 4 elements: row g + 8*(e/2), column 2t + e%2
#pragma once

#include <utility>

#include "weft/dsl/uop.h"

namespace weft::tile {

struct MmaLayout {
  WmmaArg shape;
  int64_t a_elements = 8, b_elements = 4, d_elements = 4;
  std::pair<UOp, UOp> a(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> b(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> d(const UOp& lane, const UOp& e) const;
};

// Throws weft::Error for inputs other than float16 and bfloat16.
MmaLayout mma_m16n8k16(DType input);

}  // namespace weft::tile
