#include "weft/kernels/layouts.h"

#include <bit>
#include <string>

#include "weft/dsl/error.h"

namespace weft::tile {
namespace {

int log2_exact(int64_t v) { return std::countr_zero(static_cast<uint64_t>(v)); }
bool power_of_two(int64_t v) { return v > 0 && std::has_single_bit(static_cast<uint64_t>(v)); }

std::string shape_name(int64_t m, int64_t n, int64_t k) { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

const char* operand_name(MatrixOperand which) { return which == MatrixOperand::A ? "A" : which == MatrixOperand::B ? "B" : "C"; }

// The operand's (rows, cols) as a matrix and the elements each of `lanes` lanes holds.
struct OperandShape {
  int64_t rows, cols, per_lane;
};

OperandShape operand_shape(int64_t m, int64_t n, int64_t k, MatrixOperand which, int64_t lanes) {
  const int64_t rows = which == MatrixOperand::B ? k : m, cols = which == MatrixOperand::A ? k : n;
  return {rows, cols, rows * cols / lanes};
}

// A ("register", "lane") -> ("row", "col") layout from the formula `at(lane, e)`.
template <typename F>
Layout operand_layout(const OperandShape& s, int lane_bits, F at) {
  return Layout::linear({{"register", log2_exact(s.per_lane)}, {"lane", lane_bits}}, {{"row", log2_exact(s.rows)}, {"col", log2_exact(s.cols)}},
                        [&](const Layout::Coords& x) {
                          const auto [row, col] = at(x.at("lane"), x.at("register"));
                          return Layout::Coords{{"row", row}, {"col", col}};
                        });
}

}  // namespace

const std::vector<MfmaShape>& mfma_shapes() {
  // Sources as for mfma_operand (layouts.h): f16 and bf16 16x16x16 and 32x32x8 on CDNA3 and
  // CDNA4, CDNA4's double-K 16x16x32 and 32x32x16, each target's own fp8 (CDNA3's fnuz e4m3,
  // CDNA4's OCP e4m3) 16x16x32 and 32x32x16, and CDNA4's f8f6f4 16x16x128 and 32x32x64 with fp8
  // e4m3 operands.
  static const std::vector<MfmaShape> shapes = [] {
    std::vector<MfmaShape> out;
    for (std::string_view arch : {"gfx942", "gfx950"}) {
      const bool gfx950 = arch == "gfx950";
      for (DType d : {dtypes::float16, dtypes::bfloat16}) {
        out.push_back({arch, 16, 16, 16, d});
        out.push_back({arch, 32, 32, 8, d});
        if (gfx950) {
          out.push_back({arch, 16, 16, 32, d});
          out.push_back({arch, 32, 32, 16, d});
        }
      }
      const DType fp8 = gfx950 ? dtypes::fp8e4m3 : dtypes::fp8e4m3fnuz;
      out.push_back({arch, 16, 16, 32, fp8});
      out.push_back({arch, 32, 32, 16, fp8});
      if (gfx950) {
        out.push_back({arch, 16, 16, 128, fp8});
        out.push_back({arch, 32, 32, 64, fp8});
      }
    }
    return out;
  }();
  return shapes;
}

Layout mfma_operand(std::string_view arch, int64_t m, int64_t n, int64_t k, DType input, MatrixOperand which) {
  const std::string where = shape_name(m, n, k) + " " + input.name() + " MFMA on " + std::string(arch);
  bool target = false, known = false;
  for (const MfmaShape& s : mfma_shapes()) {
    target |= s.arch == arch;
    known |= s.arch == arch && s.m == m && s.n == n && s.k == k && s.input == input;
  }
  if (!target) throw Error("mfma_operand: unknown target for a " + where + " (gfx942, gfx950)");
  if (!known) throw Error("mfma_operand: no " + where + " in the layout catalog");
  const OperandShape s = operand_shape(m, n, k, which, 64);
  // The k of element e in lane group g: consecutive, except in the f8f6f4 MFMAs' fp8 operands
  // (32 elements a lane), whose lanes hold two runs of 16, half of K apart.
  const bool two_runs = input.itemsize() == 1 && s.per_lane == 32;  // the f8f6f4 shapes (16x16x128, 32x32x64) with fp8
  const auto k_of = [&](int64_t group, int64_t e) { return two_runs ? (e / 16) * (k / 2) + 16 * group + e % 16 : group * s.per_lane + e; };
  switch (which) {
    case MatrixOperand::A: return operand_layout(s, 6, [&](int64_t lane, int64_t e) { return std::pair{lane % m, k_of(lane / m, e)}; });
    case MatrixOperand::B: return operand_layout(s, 6, [&](int64_t lane, int64_t e) { return std::pair{k_of(lane / n, e), lane % n}; });
    case MatrixOperand::C:
      if (m == 16) return operand_layout(s, 6, [&](int64_t lane, int64_t e) { return std::pair{4 * (lane / 16) + e, lane % 16}; });
      return operand_layout(s, 6, [&](int64_t lane, int64_t e) { return std::pair{8 * (e / 4) + 4 * (lane / 32) + e % 4, lane % 32}; });
  }
  throw Error("mfma_operand: unknown operand");
}

Layout mma_m16n8k16_operand(DType input, MatrixOperand which) {
  if (input != dtypes::float16 && input != dtypes::bfloat16)
    throw Error("mma_m16n8k16_operand: no m16n8k16 mma.sync with " + input.name() + " inputs in the layout catalog (float16, bfloat16)");
  const OperandShape s = operand_shape(16, 8, 16, which, 32);
  switch (which) {
    case MatrixOperand::A:
      return operand_layout(s, 5, [](int64_t lane, int64_t e) { return std::pair{lane / 4 + 8 * (e / 2 % 2), 2 * (lane % 4) + e % 2 + 8 * (e / 4)}; });
    case MatrixOperand::B:
      return operand_layout(s, 5, [](int64_t lane, int64_t e) { return std::pair{2 * (lane % 4) + e % 2 + 8 * (e / 2), lane / 4}; });
    case MatrixOperand::C:
      return operand_layout(s, 5, [](int64_t lane, int64_t e) { return std::pair{lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2}; });
  }
  throw Error("mma_m16n8k16_operand: unknown operand " + std::string(operand_name(which)));
}

Layout wgmma_m64nNk16_accumulator(int64_t n) {
  if (n < 8 || n > 256 || !power_of_two(n))
    throw Error("wgmma_m64nNk16_accumulator: n = " + std::to_string(n) + "; the layout catalog has n = 8, 16, ..., 256 (powers of two)");
  const OperandShape s = operand_shape(64, n, 16, MatrixOperand::C, 128);
  return operand_layout(s, 7, [](int64_t lane, int64_t e) {
    return std::pair{16 * (lane / 32) + (lane % 32) / 4 + 8 * (e / 2 % 2), 8 * (e / 4) + 2 * (lane % 4) + e % 2};
  });
}

std::string_view swizzle_name(SharedSwizzle kind) {
  switch (kind) {
    case SharedSwizzle::unswizzled: return "unswizzled";
    case SharedSwizzle::st_16x32: return "st_16x32";
    case SharedSwizzle::st_32x32: return "st_32x32";
    case SharedSwizzle::st_8x32: return "st_8x32";
    case SharedSwizzle::st_16x128: return "st_16x128";
    case SharedSwizzle::swizzle_64b: return "swizzle_64b";
    case SharedSwizzle::swizzle_128b: return "swizzle_128b";
  }
  return "?";
}

std::vector<SharedSwizzle> all_swizzles() {
  return {SharedSwizzle::unswizzled, SharedSwizzle::st_16x32, SharedSwizzle::st_32x32, SharedSwizzle::st_8x32, SharedSwizzle::st_16x128, SharedSwizzle::swizzle_64b,
          SharedSwizzle::swizzle_128b};
}

std::pair<int64_t, int64_t> subtile_shape(SharedSwizzle kind, int itemsize) {
  switch (kind) {
    case SharedSwizzle::unswizzled: return {1, 1};
    case SharedSwizzle::st_16x32: return {16, 32};
    case SharedSwizzle::st_32x32: return {32, 32};
    case SharedSwizzle::st_8x32: return {8, 32};
    case SharedSwizzle::st_16x128: return {16, 128};
    case SharedSwizzle::swizzle_64b: return {8, 64 / itemsize};
    case SharedSwizzle::swizzle_128b: return {8, 128 / itemsize};
  }
  return {1, 1};
}

bool swizzle_supports(SharedSwizzle kind, int itemsize) {
  switch (kind) {
    case SharedSwizzle::unswizzled: return itemsize >= 1;
    case SharedSwizzle::st_16x128: return itemsize == 1;
    case SharedSwizzle::swizzle_64b:
    case SharedSwizzle::swizzle_128b: return itemsize == 1 || itemsize == 2 || itemsize == 4;
    default: return itemsize == 2 || itemsize == 4;
  }
}

namespace {

// The swizzle of byte `b` within one subtile of `kind` with elements of `itemsize` (HipKittens';
// swizzle_64b and swizzle_128b: NVIDIA's).
int64_t swizzle_byte(SharedSwizzle kind, int itemsize, int64_t b) {
  switch (kind) {
    case SharedSwizzle::st_16x32: return itemsize == 2 ? b ^ (((b % 1024) >> 9) << 5) : b;
    case SharedSwizzle::st_32x32: return itemsize == 2 ? b ^ (((b % 1024) >> 9) << 5) ^ (((b % 2048) >> 10) << 4) : b;
    case SharedSwizzle::st_16x128: return b ^ (((b % 2048) >> 8) << 4);
    case SharedSwizzle::swizzle_64b: return b ^ (((b % 512) >> 7) << 4);
    case SharedSwizzle::swizzle_128b: return b ^ (((b % 1024) >> 7) << 4);
    case SharedSwizzle::unswizzled:
    case SharedSwizzle::st_8x32: return b;
  }
  return b;
}

}  // namespace

Layout shared_tile(SharedSwizzle kind, int64_t rows, int64_t cols, DType dtype) {
  const int itemsize = dtype.itemsize();
  const std::string what = std::string(swizzle_name(kind)) + " " + dtype.name() + " tile of " + std::to_string(rows) + " x " + std::to_string(cols);
  if (!swizzle_supports(kind, itemsize))
    throw Error("shared_tile: a " + what + ": " + (kind == SharedSwizzle::swizzle_64b || kind == SharedSwizzle::swizzle_128b ? "the catalog" : "HipKittens") +
                " defines " + std::string(swizzle_name(kind)) + " for " +
                (kind == SharedSwizzle::st_16x128     ? "1-byte"
                 : kind == SharedSwizzle::swizzle_64b || kind == SharedSwizzle::swizzle_128b ? "1-, 2- and 4-byte"
                                                       : "2- and 4-byte") +
                " elements, not " + std::to_string(itemsize) + "-byte");
  const auto [sub_rows, sub_cols] = subtile_shape(kind, itemsize);
  if (!power_of_two(rows) || !power_of_two(cols) || rows % sub_rows || cols % sub_cols)
    throw Error("shared_tile: a " + what + ": rows and columns must be powers of two and multiples of the " + std::to_string(sub_rows) + " x " +
                std::to_string(sub_cols) + " subtile");
  const int64_t subtiles_per_row = cols / sub_cols, sub_elements = sub_rows * sub_cols;
  return Layout::linear({{"row", log2_exact(rows)}, {"col", log2_exact(cols)}}, {{"offset", log2_exact(rows * cols)}}, [&](const Layout::Coords& x) {
    const int64_t r = x.at("row"), c = x.at("col");
    const int64_t subtile = (r / sub_rows) * subtiles_per_row + c / sub_cols;
    const int64_t byte = itemsize * ((r % sub_rows) * sub_cols + c % sub_cols);
    return Layout::Coords{{"offset", subtile * sub_elements + swizzle_byte(kind, itemsize, byte) / itemsize}};
  });
}

Layout lds_dma_destination(int bytes_per_lane) {
  if (bytes_per_lane != 1 && bytes_per_lane != 2 && bytes_per_lane != 4 && bytes_per_lane != 16)
    throw Error("lds_dma_destination: LDS DMA moves 1, 2 or 4 bytes per lane (and 16 on gfx950) as a linear layout, not " +
                std::to_string(bytes_per_lane));
  const int bits = log2_exact(bytes_per_lane);
  return Layout::linear({{"byte", bits}, {"lane", 6}}, {{"offset", bits + 6}},
                        [&](const Layout::Coords& x) { return Layout::Coords{{"offset", x.at("lane") * bytes_per_lane + x.at("byte")}}; });
}

Layout wave_grid(int64_t rows, int64_t cols) {
  if (!power_of_two(rows) || !power_of_two(cols))
    throw Error("wave_grid: a " + std::to_string(rows) + " x " + std::to_string(cols) + " grid of waves; both must be powers of two");
  return Layout::linear({{"wave", log2_exact(rows * cols)}}, {{"wave_row", log2_exact(rows)}, {"wave_col", log2_exact(cols)}},
                        [&](const Layout::Coords& x) { return Layout::Coords{{"wave_row", x.at("wave") / cols}, {"wave_col", x.at("wave") % cols}}; });
}

bool is_nvidia(std::string_view arch) { return arch.starts_with("sm_"); }

int lds_banks(std::string_view arch) {
  if (arch == "gfx950") return 64;
  if (arch == "gfx942" || is_nvidia(arch)) return 32;
  throw Error("lds_banks: unknown target '" + std::string(arch) + "' (gfx942, gfx950, sm_XY)");
}

std::vector<std::vector<int64_t>> lds_read_phases(std::string_view arch, int vector_bytes) {
  if (is_nvidia(arch)) {
    if (vector_bytes != 2 && vector_bytes != 4)
      throw Error("lds_read_phases: the catalog knows NVIDIA's 2- and 4-byte shared-memory reads, not " + std::to_string(vector_bytes) + "-byte reads on " +
                  std::string(arch));
    std::vector<int64_t> warp(32);
    for (int64_t l = 0; l < 32; ++l) warp[static_cast<size_t>(l)] = l;
    return {warp};
  }
  if (arch != "gfx950" || (vector_bytes != 8 && vector_bytes != 16))
    throw Error("lds_read_phases: the catalog knows gfx950's 8- and 16-byte LDS reads, not " + std::to_string(vector_bytes) + "-byte reads on " +
                std::string(arch));
  std::vector<std::vector<int64_t>> phases(vector_bytes == 8 ? 2 : 4);
  for (int64_t l = 0; l < 64; ++l) {
    if (vector_bytes == 8) phases[static_cast<size_t>(l / 32)].push_back(l);
    else phases[static_cast<size_t>(2 * (l / 32) + std::popcount(static_cast<uint64_t>((l >> 2) & 7)) % 2)].push_back(l);
  }
  return phases;
}

}  // namespace weft::tile
