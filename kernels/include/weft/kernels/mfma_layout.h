// Where each element of an MFMA's A, B and C/D fragments lives: for lane l and element e of
// the lane's vector, the (row, column) of the matrix. From AMD's matrix instruction calculator
// (../shared/reference/mfma-cdna3/) for CDNA3, and the CDNA4 double-K forms.
#pragma once

#include <string_view>
#include <utility>

#include "weft/dsl/uop.h"

namespace weft::tile {

struct MfmaLayout {
  WmmaArg shape;
  int64_t a_elements, b_elements, d_elements;  // per lane
  // (row, col) of A[m][k], B[k][n] and D[m][n] held by `lane` as element `e`.
  std::pair<UOp, UOp> a(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> b(const UOp& lane, const UOp& e) const;
  std::pair<UOp, UOp> d(const UOp& lane, const UOp& e) const;
};

// The layout of an m x n x k MFMA on `arch` (gfx942, gfx950) with an f32 accumulator: f16 and
// bf16 16x16x16 and 32x32x8 on both, 16x16x32 and 32x32x16 on gfx950; fp8 (fp8e4m3fnuz on
// gfx942, fp8e4m3 on gfx950) 16x16x32 and 32x32x16.
// Throws weft::Error naming the shape and target it does not know.
MfmaLayout mfma_layout(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input);

}  // namespace weft::tile
