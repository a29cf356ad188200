// The catalog of concrete layouts (provisional: the MFMA operands and the st_16x32 swizzle the
// HipKittens GEMM needs).
#pragma once

#include <string_view>

#include "weft/dsl/dtype.h"
#include "weft/kernels/layout.h"

namespace weft::tile {

enum class MatrixOperand { A, B, C };

// ("register", "lane") -> ("row", "col") of the operand as a matrix: A is m x k, B k x n, C m x n.
Layout mfma_operand(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input, MatrixOperand which);

enum class SharedSwizzle { None, St16x32 };

// ("row", "col") -> ("offset", in elements) of a rows x cols shared tile.
Layout shared_tile(SharedSwizzle kind, int64_t rows, int64_t cols, DType dtype);

}  // namespace weft::tile
