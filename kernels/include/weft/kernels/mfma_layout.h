// An MFMA's fragments as index expressions: for lane l and element e of the lane's vector, the
// (row, column) of the matrix, for kernels that load or store fragments element by element
// (the one-tile mfma_tile kernel). The layouts themselves are the catalog's (mfma_operand in
// layouts.h, the one registry of MFMA shapes); this is their layout_index (layout_expr.h).
#pragma once

#include <string_view>
#include <utility>

#include "weft/dsl/uop.h"
#include "weft/kernels/layouts.h"

namespace weft::tile {

struct MfmaLayout {
  WmmaArg shape;
  int64_t a_elements, b_elements, d_elements;  // per lane
  Layout a_layout, b_layout, d_layout;         // mfma_operand(..., A | B | C)
  // (row, col) of A[m][k], B[k][n] and D[m][n] held by `lane` as element `e` (index values
  // in [0, 64) and [0, elements), constants or ranges).
  std::pair<UOp, UOp> a(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> b(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> d(const UOp& lane, const UOp& e) const;
};

// The layout of an m x n x k MFMA on `arch` with an f32 accumulator: one of mfma_shapes().
// Throws weft::Error naming the shape and target it does not know (mfma_operand's check).
MfmaLayout mfma_layout(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input);

}  // namespace weft::tile
