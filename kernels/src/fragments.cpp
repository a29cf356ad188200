#include "weft/kernels/fragments.h"

#include <bit>

#include "weft/kernels/layout_expr.h"

namespace weft::tile {
namespace {

int bits_of(int64_t v, const std::string& what) {
  if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v))) throw Error("load_kn: " + std::to_string(v) + " " + what + " is not a power of two");
  return std::countr_zero(static_cast<uint64_t>(v));
}

// (row, col) -> (col, row).
Layout transposed(const Layout& l) {
  const int rb = l.out_dims().at(0).bits, cb = l.out_dims().at(1).bits;
  std::vector<Layout::Coords> images;
  for (int b = 0; b < rb; ++b) images.push_back({{"col", int64_t{1} << b}});
  for (int b = 0; b < cb; ++b) images.push_back({{"row", int64_t{1} << b}});
  return l.then(Layout({{"row", rb}, {"col", cb}}, {{"row", cb}, {"col", rb}}, images));
}

}  // namespace

rt load_kn(const Workgroup& wg, const st& src, const UOp& stage, int64_t cols, const UOp& block) {
  const WmmaArg shape = mma_shape(wg, src.dtype);
  if (cols % 16 || src.cols % cols || src.rows % shape.k)
    throw Error("load_kn: " + std::to_string(cols) + " columns of a " + std::to_string(src.rows) + "x" + std::to_string(src.cols) +
                " K x N tile in " + std::to_string(shape.k) + " x 16 operand sub-tiles");
  // The operand as the hardware defines it: (register, lane) -> (row = k, col = n). Sub-tile
  // columns, k steps and the wave's block of columns sit above its bits.
  const Layout sub = mfma_operand(wg.arch(), 16, 16, shape.k, src.dtype, MatrixOperand::B);
  const Layout place = sub * Layout::identity("sub_row", "col", bits_of(cols / 16, "sub-tile columns")) *
                       Layout::identity("sub_col", "row", bits_of(src.rows / shape.k, "k steps")) *
                       Layout::identity("block", "col", bits_of(src.cols / cols, "column blocks"));
  const Layout to_offset = place.then(src.layout);
  const int64_t registers = int64_t{1} << sub.in_dims().at(0).bits;
  const int64_t width = aligned_vector_width(to_offset, "register", "offset", std::min<int64_t>(registers, 16 / src.dtype.itemsize()));
  // parts(i, j): n sub-tile i, k step j, as load(rt, st) orders an N x K tile.
  rt out{{}, cols, src.rows, 16, shape.k, transposed(sub)};
  for (int64_t i = 0; i < cols / 16; ++i)
    for (int64_t j = 0; j < src.rows / shape.k; ++j) {
      std::vector<UOp> reads, lanes;
      for (int64_t r = 0; r < registers; r += width) {
        const LayoutInputs at{{"register", constant(Wide(r))}, {"lane", wg.lane()}, {"sub_row", constant(Wide(i))},
                              {"sub_col", constant(Wide(j))}, {"block", block}};
        const UOp granule = layout_granule(to_offset, at, "register", "offset", width);
        reads.push_back(src.buffer[stage * src.size() + granule * width].vec(width).load());
        for (int64_t e = 0; e < width; ++e) lanes.push_back(width == 1 ? reads.back() : reads.back().gep(e));
      }
      out.parts.push_back(vectorize(lanes));
    }
  return out;
}

}  // namespace weft::tile
