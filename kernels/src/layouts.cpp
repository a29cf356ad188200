#include "weft/kernels/layouts.h"

#include <bit>

#include "weft/dsl/error.h"
#include "weft/kernels/mfma_layout.h"

namespace weft::tile {
namespace {

int log2_exact(int64_t v, const std::string& what) {
  if (v <= 0 || !std::has_single_bit(static_cast<uint64_t>(v))) throw Error(what + ": " + std::to_string(v) + " is not a power of two");
  return std::countr_zero(static_cast<uint64_t>(v));
}

}  // namespace

Layout mfma_operand(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input, MatrixOperand which) {
  const MfmaLayout f = mfma_layout(arch, m, n, k, input);
  if (m != 16 || n != 16) throw Error("mfma_operand: provisional catalog knows 16x16 shapes only");
  const int regs = log2_exact(which == MatrixOperand::A ? f.a_elements : which == MatrixOperand::B ? f.b_elements : f.d_elements, "mfma_operand");
  std::vector<Layout::Coords> images;
  // A: register -> k (col), lane%16 -> row, lane/16 -> k above the registers. B the transpose.
  // C: register -> row, lane%16 -> col, lane/16 -> row above the registers.
  const std::string along = which == MatrixOperand::A ? "col" : "row", across = which == MatrixOperand::A ? "row" : "col";
  const std::string c_along = "row", c_across = "col";
  const std::string& a = which == MatrixOperand::C ? c_along : along;
  const std::string& x = which == MatrixOperand::C ? c_across : across;
  for (int b = 0; b < regs; ++b) images.push_back({{a, int64_t{1} << b}});
  for (int b = 0; b < 4; ++b) images.push_back({{x, int64_t{1} << b}});
  for (int b = 0; b < 2; ++b) images.push_back({{a, int64_t{1} << (regs + b)}});
  const int rows = which == MatrixOperand::B ? log2_exact(k, "k") : 4, cols = which == MatrixOperand::A ? log2_exact(k, "k") : 4;
  return Layout({{"register", regs}, {"lane", 6}}, {{"row", rows}, {"col", cols}}, images);
}

Layout shared_tile(SharedSwizzle kind, int64_t rows, int64_t cols, DType dtype) {
  const int rb = log2_exact(rows, "shared_tile rows"), cb = log2_exact(cols, "shared_tile cols");
  std::vector<Layout::Coords> images;
  if (kind == SharedSwizzle::None) {
    for (int b = 0; b < rb; ++b) images.push_back({{"offset", int64_t{1} << (cb + b)}});
    for (int b = 0; b < cb; ++b) images.push_back({{"offset", int64_t{1} << b}});
    return Layout({{"row", rb}, {"col", cb}}, {{"offset", rb + cb}}, images);
  }
  if (dtype.itemsize() != 2 || rows % 16 || cols % 32) throw Error("shared_tile: st_16x32 holds 2-byte elements in 16x32 subtiles");
  // Subtiles of 16 x 32 row-major; inside one, offset = r*32 + c with bit 4 of the offset
  // flipped by bit 3 of the row (HipKittens' st_16x32: byte offset ^ ((offset % 1024) >> 9) << 5).
  const int sub_cols = cb - 5;
  for (int b = 0; b < rb; ++b) {
    if (b < 4) images.push_back({{"offset", (int64_t{1} << (5 + b)) ^ (b == 3 ? 16 : 0)}});
    else images.push_back({{"offset", int64_t{1} << (9 + sub_cols + (b - 4))}});
  }
  for (int b = 0; b < cb; ++b) images.push_back({{"offset", b < 5 ? int64_t{1} << b : int64_t{1} << (9 + (b - 5))}});
  return Layout({{"row", rb}, {"col", cb}}, {{"offset", rb + cb}}, images);
}

}  // namespace weft::tile
