// NVIDIA's mma.sync.m16n8k16 fragments (f16/bf16 inputs, f32 accumulators, a warp of 32 lanes)
// as index expressions: for lane l and element e, the (row, column) of the matrix. The layouts
// are the catalog's (mma_m16n8k16_operand in layouts.h, from the PTX ISA); this is their
// layout_index (layout_expr.h).
//   A (16x16, row-major), 8 elements: row g + 8*((e/2) % 2), column 2t + e%2 + 8*(e/4)
//   B (16x8, column-major), 4 elements: row (k) 2t + e%2 + 8*(e/2), column g
//   C/D (16x8), 4 elements: row g + 8*(e/2), column 2t + e%2
// with group g = l / 4 and thread-in-group t = l % 4.
#pragma once

#include <utility>

#include "weft/dsl/uop.h"
#include "weft/kernels/layouts.h"

namespace weft::tile {

struct MmaLayout {
  WmmaArg shape;
  int64_t a_elements, b_elements, d_elements;  // 8, 4, 4
  Layout a_layout, b_layout, d_layout;         // mma_m16n8k16_operand(..., A | B | C)
  std::pair<UOp, UOp> a(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> b(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> d(const UOp& lane, const UOp& e) const;
};

// Throws weft::Error for inputs other than float16 and bfloat16 (mma_m16n8k16_operand's check).
MmaLayout mma_m16n8k16(DType input);

}  // namespace weft::tile
