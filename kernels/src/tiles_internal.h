// Helpers shared by the tile layer's sources (tiles.cpp, tiles_mma.cpp, tiles_vectors.cpp);
// not part of the public interface.
#pragma once

#include <bit>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "weft/kernels/layout_expr.h"
#include "weft/kernels/tiles.h"

namespace weft::tile::detail {

inline int log2_exact(int64_t v, const std::string& what) {
  if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v))) throw Error(what + ": " + std::to_string(v) + " is not a power of two");
  return std::countr_zero(static_cast<uint64_t>(v));
}

inline std::string shape_text(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Register e of sub-tile (i, j) of an accumulator's REG buffer.
inline UOp element(const UOp& buffer, int64_t i, int64_t j, int64_t e) {
  return buffer[{constant(Wide(i)), constant(Wide(j)), constant(Wide(e))}];
}

// Where register e of sub-tile (i, j) of the calling lane's accumulator sits, as (row0 + row,
// col0 + col).
inline std::pair<UOp, UOp> acc_position(const Workgroup& wg, const acc& c, int64_t i, int64_t j, int64_t e, const UOp& row0, const UOp& col0) {
  const LayoutInputs at{{"register", constant(Wide(e))}, {"lane", wg.lane()}};
  return {row0 + i * 16 + layout_index(c.layout, at, "row"), col0 + j * 16 + layout_index(c.layout, at, "col")};
}

// store(st, acc) by stmatrix.x4, one a 16 x 16 sub-tile, where it fits (tiles.h); nullopt where
// it does not. `value(i, j, e)` is register e of sub-tile (i, j) as stored.
std::optional<UOp> store_matrix_rows(const Workgroup& wg, const st& dst, const UOp& stage, const acc& c, const UOp& row0, const UOp& col0,
                                     const std::function<UOp(int64_t, int64_t, int64_t)>& value);

}  // namespace weft::tile::detail
