// The layout catalog (kernels/include/weft/kernels/layouts.h), each layout compared element by
// element with an independent statement of its source: the MFMA formulas restated in this file
// (and the MFMA registry against the shapes listed here), AMD's matrix instruction calculator
// tables (../shared/reference/mfma-cdna3/), the PTX ISA's fragment formulas, and HipKittens'
// swizzles (and NVIDIA's 64-byte swizzle) written as bit flips; MfmaLayout's index expressions
// (mfma_layout.h) and operand_index over the mma.sync operands are evaluated against the same
// statements. Also Layout::linear, table(rows,
// cols), bank_conflicts over given phases, the name catalog and the SVG pictures.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <set>

#include "lowering/expr_eval.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/error.h"
#include "weft/kernels/layout_catalog.h"
#include "weft/kernels/layout_svg.h"
#include "weft/kernels/layouts.h"
#include "weft/kernels/mfma_layout.h"
#include "weft/kernels/layout_expr.h"

using weft::tile::Layout;
using weft::tile::LayoutDim;
using weft::tile::MatrixOperand;
using weft::tile::SharedSwizzle;
namespace dtypes = weft::dtypes;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 gen = [] {
    uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::cerr << "layouts tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
    return std::mt19937_64(seed);
  }();
  return gen;
}

// (row, col) of a weft index formula pair at `lane`, element `e`.
std::pair<int64_t, int64_t> evaluate(const std::pair<weft::UOp, weft::UOp>& rc, int64_t lane, int64_t e) {
  weft::testing::Assignment env;
  env.vars["lane"] = lane;
  env.vars["e"] = e;
  return {static_cast<int64_t>(*weft::testing::evaluate(rc.first, env)), static_cast<int64_t>(*weft::testing::evaluate(rc.second, env))};
}

std::pair<int64_t, int64_t> at(const Layout& l, int64_t lane, int64_t e) {
  const Layout::Coords c = l.apply({{"lane", lane}, {"register", e}});
  return {c.at("row"), c.at("col")};
}

int64_t size(const Layout& l, const std::string& dim) {
  for (const LayoutDim& d : l.in_dims())
    if (d.name == dim) return int64_t{1} << d.bits;
  for (const LayoutDim& d : l.out_dims())
    if (d.name == dim) return int64_t{1} << d.bits;
  return 0;
}

struct MfmaCase {
  const char* arch;
  int64_t m, n, k;
  weft::DType input;
};

std::vector<MfmaCase> mfma_cases() {
  std::vector<MfmaCase> cases;
  for (const char* arch : {"gfx942", "gfx950"}) {
    const bool gfx950 = std::string(arch) == "gfx950";
    for (weft::DType d : {dtypes::float16, dtypes::bfloat16}) {
      cases.push_back({arch, 16, 16, 16, d});
      cases.push_back({arch, 32, 32, 8, d});
      if (gfx950) {
        cases.push_back({arch, 16, 16, 32, d});
        cases.push_back({arch, 32, 32, 16, d});
      }
    }
    const weft::DType fp8 = gfx950 ? dtypes::fp8e4m3 : dtypes::fp8e4m3fnuz;
    cases.push_back({arch, 16, 16, 32, fp8});
    cases.push_back({arch, 32, 32, 16, fp8});
    if (gfx950) {  // the f8f6f4 MFMAs with fp8 operands
      cases.push_back({arch, 16, 16, 128, fp8});
      cases.push_back({arch, 32, 32, 64, fp8});
    }
  }
  return cases;
}

}  // namespace

TEST_CASE("layouts: Layout::linear keeps a linear function and names where a function is not linear") {
  const std::vector<LayoutDim> in{{"register", 2}, {"lane", 3}}, out{{"row", 3}, {"col", 2}};
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<Layout::Coords> images;
    for (int i = 0; i < 5; ++i) images.push_back({{"row", static_cast<int64_t>(rng()() % 8)}, {"col", static_cast<int64_t>(rng()() % 4)}});
    const Layout want(in, out, images);
    const Layout got = Layout::linear(in, out, [&](const Layout::Coords& x) { return want.apply(x); });
    CHECK(got == want);
  }
  // row = lane + register is not linear over GF(2): lane 1 + register 1 = 2, not 1 ^ 1 = 0.
  CHECK_THROWS_WITH_AS(Layout::linear({{"register", 1}, {"lane", 1}}, {{"row", 2}},
                                      [](const Layout::Coords& x) { return Layout::Coords{{"row", x.at("lane") + x.at("register")}}; }),
                       doctest::Contains("not linear over GF(2) at (lane 1, register 1)"), weft::Error);
  CHECK_THROWS_WITH_AS(Layout::linear({{"offset", 21}}, {{"offset", 21}}, [](const Layout::Coords& x) { return x; }),
                       doctest::Contains("too many to check"), weft::Error);
}

TEST_CASE("layouts: table(rows, cols) puts the named input down and the other across") {
  const Layout l = weft::tile::mma_m16n8k16_operand(dtypes::float16, MatrixOperand::C);
  const std::string t = l.table("lane", "register");
  // Line for lane 5, from the PTX formula: g = 1, t = 1: (1, 2) (1, 3) (9, 2) (9, 3).
  CHECK(t.find("lane 5: (1, 2) (1, 3) (9, 2) (9, 3)\n") != std::string::npos);
  CHECK(std::count(t.begin(), t.end(), '\n') == 32);
  CHECK_THROWS_WITH_AS(l.table("wave", "register"), doctest::Contains("no input dimension wave"), weft::Error);
}

namespace {

// The MFMA formulas of the CDNA3 matrix calculator and the CDNA4 ISA guide, restated here as
// plain integer arithmetic (independent of the catalog's code): (row, col) of element e of lane l.
std::pair<int64_t, int64_t> mfma_formula(const MfmaCase& c, MatrixOperand which, int64_t l, int64_t e) {
  if (c.k * c.m / 64 == 32 && which != MatrixOperand::C) {  // f8f6f4 fp8: two runs of 16 bytes, K/2 apart (docs/mfma-f8f6f4.md 2.1)
    const int64_t outer = l % c.m, k = (e / 16) * (c.k / 2) + 16 * (l / c.m) + e % 16;
    return which == MatrixOperand::A ? std::pair{outer, k} : std::pair{k, outer};
  }
  switch (which) {
    case MatrixOperand::A: return {l % c.m, (l / c.m) * (c.m * c.k / 64) + e};
    case MatrixOperand::B: return {(l / c.n) * (c.k * c.n / 64) + e, l % c.n};
    case MatrixOperand::C:
      if (c.m == 16) return {4 * (l / 16) + e, l % 16};
      return {8 * (e / 4) + 4 * (l / 32) + e % 4, l % 32};
  }
  return {-1, -1};
}

}  // namespace

TEST_CASE("layouts: the MFMA registry is exactly the shapes the CDNA3 and CDNA4 guides list") {
  std::set<std::string> want, got;
  auto key = [](std::string_view arch, int64_t m, int64_t n, int64_t k, weft::DType d) {
    return std::string(arch) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + d.name();
  };
  for (const MfmaCase& c : mfma_cases()) want.insert(key(c.arch, c.m, c.n, c.k, c.input));
  for (const weft::tile::MfmaShape& s : weft::tile::mfma_shapes()) CHECK(got.insert(key(s.arch, s.m, s.n, s.k, s.input)).second);
  CHECK(got == want);
}

TEST_CASE("layouts: MFMA operands and MfmaLayout's index expressions follow the MFMA formulas at every lane and element") {
  for (const MfmaCase& c : mfma_cases()) {
    CAPTURE(c.arch);
    CAPTURE(c.m);
    CAPTURE(c.k);
    CAPTURE(c.input.name());
    const weft::tile::MfmaLayout formulas = weft::tile::mfma_layout(c.arch, c.m, c.n, c.k, c.input);
    CHECK(formulas.shape == weft::WmmaArg{c.m, c.n, c.k, c.input, dtypes::float32, 64});
    const weft::UOp lane = weft::variable("lane", 0, 63, dtypes::index), e = weft::variable("e", 0, 31, dtypes::index);
    struct Operand {
      MatrixOperand which;
      int64_t elements;
      std::pair<weft::UOp, weft::UOp> rc;
    };
    for (const Operand& op : {Operand{MatrixOperand::A, c.m * c.k / 64, formulas.a(lane, e)}, Operand{MatrixOperand::B, c.k * c.n / 64, formulas.b(lane, e)},
                              Operand{MatrixOperand::C, c.m * c.n / 64, formulas.d(lane, e)}}) {
      const Layout l = weft::tile::mfma_operand(c.arch, c.m, c.n, c.k, c.input, op.which);
      REQUIRE(size(l, "register") == op.elements);
      REQUIRE(size(l, "lane") == 64);
      REQUIRE(l.bijective());
      for (int64_t ln = 0; ln < 64; ++ln)
        for (int64_t el = 0; el < op.elements; ++el) {
          const auto want = mfma_formula(c, op.which, ln, el);
          REQUIRE(at(l, ln, el) == want);
          REQUIRE(evaluate(op.rc, ln, el) == want);
        }
    }
    CHECK(formulas.a_elements == c.m * c.k / 64);
    CHECK(formulas.b_elements == c.k * c.n / 64);
    CHECK(formulas.d_elements == c.m * c.n / 64);
  }
  // mfma_layout validates through the catalog: the same errors.
  CHECK_THROWS_WITH_AS(weft::tile::mfma_layout("gfx942", 16, 16, 32, dtypes::bfloat16), doctest::Contains("no 16x16x32 bfloat16 MFMA on gfx942"),
                       weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::mfma_layout("gfx1100", 16, 16, 16, dtypes::float16), doctest::Contains("unknown target"), weft::Error);
}

TEST_CASE("layouts: MFMA operands agree with AMD's matrix instruction calculator tables (CDNA3)") {
  // The tables' "register to matrix element" formulas, per lane, GPR number and bit offset of
  // the element within its GPR (element e of `bits` bits is at GPR e*bits/32, bit e*bits%32).
  struct Table {
    int64_t m, n, k;
    weft::DType input;
    int bits;
  };
  for (const Table& t : {Table{16, 16, 16, dtypes::float16, 16}, Table{16, 16, 16, dtypes::bfloat16, 16}, Table{32, 32, 8, dtypes::bfloat16, 16},
                         Table{16, 16, 32, dtypes::fp8e4m3fnuz, 8}}) {
    CAPTURE(t.m);
    CAPTURE(t.k);
    const Layout a = weft::tile::mfma_operand("gfx942", t.m, t.n, t.k, t.input, MatrixOperand::A);
    const Layout b = weft::tile::mfma_operand("gfx942", t.m, t.n, t.k, t.input, MatrixOperand::B);
    const Layout c = weft::tile::mfma_operand("gfx942", t.m, t.n, t.k, t.input, MatrixOperand::C);
    const int per_gpr = 32 / t.bits;
    for (int64_t lane = 0; lane < 64; ++lane) {
      for (int64_t e = 0; e < t.m * t.k / 64; ++e) {
        const int64_t gpr = e / per_gpr, gpr_bits = (e % per_gpr) * t.bits;
        int64_t k_index = 0;
        if (t.m == 16 && t.bits == 16) k_index = 4 * (lane / 16) + 2 * gpr + gpr_bits / 16;  // v_mfma_f32_16x16x16_{f16,bf16}
        if (t.m == 32) k_index = 4 * (lane / 32) + 2 * gpr + gpr_bits / 16;                  // v_mfma_f32_32x32x8_bf16
        if (t.bits == 8) k_index = 8 * (lane / 16) + 4 * gpr + gpr_bits / 8;                 // v_mfma_f32_16x16x32_fp8_fp8
        CHECK(at(a, lane, e) == std::pair{lane % t.m, k_index});
        CHECK(at(b, lane, e) == std::pair{k_index, lane % t.n});
      }
      for (int64_t gpr = 0; gpr < t.m * t.n / 64; ++gpr) {
        const int64_t i = t.m == 16 ? 4 * (lane / 16) + gpr % 4 : (8 * (gpr / 4)) % 32 + 4 * (lane / 32) + gpr % 4;
        CHECK(at(c, lane, gpr) == std::pair{i, lane % t.n});
      }
    }
  }
  // The ISA's lane 16, element 0 of gfx950's 16x16x32 bf16 A: row 0, k 8 (the second k octet).
  CHECK(at(weft::tile::mfma_operand("gfx950", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A), 16, 0) == std::pair<int64_t, int64_t>{0, 8});
  // CK's table for 16x16x128 fp8 (docs/mfma-f8f6f4.md 2.1): lane 0 holds K 0-15 in bytes 0-15 and
  // K 64-79 in bytes 16-31; lane 16 (group 1) starts at K 16.
  const Layout f8 = weft::tile::mfma_operand("gfx950", 16, 16, 128, dtypes::fp8e4m3, MatrixOperand::A);
  CHECK(at(f8, 0, 15) == std::pair<int64_t, int64_t>{0, 15});
  CHECK(at(f8, 0, 16) == std::pair<int64_t, int64_t>{0, 64});
  CHECK(at(f8, 16, 0) == std::pair<int64_t, int64_t>{0, 16});
  CHECK(at(f8, 63, 31) == std::pair<int64_t, int64_t>{15, 127});
}

TEST_CASE("layouts: unknown MFMA shapes and targets are errors naming them") {
  CHECK_THROWS_WITH_AS(weft::tile::mfma_operand("gfx942", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A),
                       doctest::Contains("no 16x16x32 bfloat16 MFMA on gfx942"), weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::mfma_operand("gfx1100", 16, 16, 16, dtypes::float16, MatrixOperand::C),
                       doctest::Contains("unknown target for a 16x16x16 float16 MFMA on gfx1100"), weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::mfma_operand("gfx950", 16, 16, 32, dtypes::fp8e4m3fnuz, MatrixOperand::B),
                       doctest::Contains("no 16x16x32 float8_e4m3fnuz MFMA on gfx950"), weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::mfma_operand("gfx950", 16, 16, 16, dtypes::float32, MatrixOperand::A), doctest::Contains("float32"), weft::Error);
}

TEST_CASE("layouts: mma.m16n8k16 operands and their index expressions follow the PTX ISA's fragments") {
  for (weft::DType input : {dtypes::float16, dtypes::bfloat16}) {
    const weft::UOp lane = weft::variable("lane", 0, 31, dtypes::index), e = weft::variable("e", 0, 7, dtypes::index);
    const Layout a = weft::tile::mma_m16n8k16_operand(input, MatrixOperand::A);
    const Layout b = weft::tile::mma_m16n8k16_operand(input, MatrixOperand::B);
    const Layout c = weft::tile::mma_m16n8k16_operand(input, MatrixOperand::C);
    for (const Layout* l : {&a, &b, &c}) REQUIRE(l->bijective());
    REQUIRE(size(a, "register") == 8);
    REQUIRE(size(b, "register") == 4);
    REQUIRE(size(c, "register") == 4);
    for (int64_t ln = 0; ln < 32; ++ln) {
      // PTX: groupID = lane >> 2, threadID_in_group = lane % 4; element i of the fragment.
      const int64_t g = ln >> 2, t = ln % 4;
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        const int64_t col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
        REQUIRE(at(a, ln, i) == std::pair{row, col});
        REQUIRE(evaluate(weft::tile::operand_index(a, lane, e), ln, i) == std::pair{row, col});
      }
      for (int64_t i = 0; i < 4; ++i) {
        const std::pair<int64_t, int64_t> b_want{t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g}, c_want{i < 2 ? g : g + 8, t * 2 + (i & 1)};
        REQUIRE(at(b, ln, i) == b_want);
        REQUIRE(evaluate(weft::tile::operand_index(b, lane, e), ln, i) == b_want);
        REQUIRE(at(c, ln, i) == c_want);
        REQUIRE(evaluate(weft::tile::operand_index(c, lane, e), ln, i) == c_want);
      }
    }
  }
  CHECK_THROWS_WITH_AS(weft::tile::mma_m16n8k16_operand(dtypes::float32, MatrixOperand::A), doctest::Contains("float32"), weft::Error);
}

TEST_CASE("layouts: the wgmma m64nNk16 accumulator matches the PTX ISA's figure, stated from the element") {
  for (int64_t n : {8, 16, 64, 256}) {
    CAPTURE(n);
    const Layout d = weft::tile::wgmma_m64nNk16_accumulator(n);
    REQUIRE(d.bijective());
    REQUIRE(size(d, "register") == n / 2);
    REQUIRE(size(d, "lane") == 128);
    // Inverted: element (row, col) of D is held by warp row / 16, lane 4 * (row % 8) + (col % 8) / 2
    // of it, in register 4 * (col / 8) + 2 * (row % 16 / 8) + col % 2.
    for (int64_t row = 0; row < 64; ++row)
      for (int64_t col = 0; col < n; ++col) {
        const int64_t thread = 32 * (row / 16) + 4 * (row % 8) + (col % 8) / 2, reg = 4 * (col / 8) + 2 * (row % 16 / 8) + col % 2;
        REQUIRE(at(d, thread, reg) == std::pair{row, col});
      }
  }
  CHECK_THROWS_WITH_AS(weft::tile::wgmma_m64nNk16_accumulator(24), doctest::Contains("powers of two"), weft::Error);
}

namespace {

// HipKittens' swizzles restated as bit flips within a subtile: which column bits the row flips.
// NVIDIA's 64-byte swizzle: 16-byte chunk c of a 64-byte row r sits at chunk c ^ ((r / 2) % 4)
// (TMA SWIZZLE_64B, CUTLASS Swizzle<2,4,3>), a chunk being 16 / itemsize columns; the 128-byte
// swizzle: chunk c of a 128-byte row r at chunk c ^ (r % 8) (TMA SWIZZLE_128B, Swizzle<3,4,3>).
int64_t column_flip(SharedSwizzle kind, int itemsize, int64_t r) {
  if (kind == SharedSwizzle::swizzle_64b) return ((r >> 1) & 3) * (16 / itemsize);  // chunk c of row r at c ^ ((r / 2) % 4)
  if (kind == SharedSwizzle::swizzle_128b) return (r & 7) * (16 / itemsize);  // chunk c of row r at c ^ (r % 8)
  if (kind == SharedSwizzle::st_16x32 && itemsize == 2) return ((r >> 3) & 1) << 4;
  if (kind == SharedSwizzle::st_32x32 && itemsize == 2) return (((r >> 3) & 1) << 4) | (((r >> 4) & 1) << 3);
  if (kind == SharedSwizzle::st_16x128) return ((r >> 1) & 7) << 4;
  return 0;
}

}  // namespace

TEST_CASE("layouts: shared tiles are bijective and place every element as HipKittens does") {
  for (SharedSwizzle kind : weft::tile::all_swizzles())
    for (weft::DType dtype : {dtypes::float32, dtypes::bfloat16, dtypes::float16, dtypes::fp8e4m3}) {
      if (!weft::tile::swizzle_supports(kind, dtype.itemsize())) {
        CHECK_THROWS_WITH_AS(weft::tile::shared_tile(kind, 32, 128, dtype), doctest::Contains(" defines "), weft::Error);
        continue;
      }
      const auto [sr, sc] = weft::tile::subtile_shape(kind, dtype.itemsize());
      for (int64_t rows : {sr, sr * 2, sr * 4})
        for (int64_t cols : {sc, sc * 2, sc * 4}) {
          if (rows * cols > 16384) continue;  // keeps the enumeration short under the sanitizers
          CAPTURE(weft::tile::swizzle_name(kind));
          CAPTURE(dtype.name());
          CAPTURE(rows);
          CAPTURE(cols);
          const Layout l = weft::tile::shared_tile(kind, rows, cols, dtype);
          REQUIRE(l.bijective());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              const int64_t subtile = (r / sr) * (cols / sc) + c / sc;
              const int64_t want = subtile * sr * sc + (r % sr) * sc + ((c % sc) ^ column_flip(kind, dtype.itemsize(), r % sr));
              REQUIRE(l.apply({{"row", r}, {"col", c}}).at("offset") == want);
            }
        }
    }
  // HipKittens' byte formula for st_16x32 at one point: row 9, col 3 of bf16 is byte 2*(9*32+3)
  // = 582, XOR ((582 % 1024) >> 9) << 5 = 32, so byte 614, element 307.
  CHECK(weft::tile::shared_tile(SharedSwizzle::st_16x32, 16, 32, dtypes::bfloat16).apply({{"row", 9}, {"col", 3}}).at("offset") == 307);
  // The 128-byte swizzle as TMA's SWIZZLE_128B box and wgmma's descriptors place a bf16 element
  // (docs/nvidia.md): (m, k) of a 64-column tile at m * 64 + ((k / 8) ^ (m % 8)) * 8 + k % 8. Row
  // 9, column 3: 576 + (0 ^ 1) * 8 + 3 = 587; fp8 row 10, column 17: 1280 + (1 ^ 2) * 16 + 1.
  CHECK(weft::tile::shared_tile(SharedSwizzle::swizzle_128b, 16, 64, dtypes::bfloat16).apply({{"row", 9}, {"col", 3}}).at("offset") == 587);
  CHECK(weft::tile::shared_tile(SharedSwizzle::swizzle_128b, 16, 128, dtypes::fp8e4m3).apply({{"row", 10}, {"col", 17}}).at("offset") == 1329);
  CHECK_THROWS_WITH_AS(weft::tile::shared_tile(SharedSwizzle::swizzle_128b, 8, 16, dtypes::float64),
                       doctest::Contains("the catalog defines swizzle_128b for 1-, 2- and 4-byte elements, not 8-byte"), weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::shared_tile(SharedSwizzle::st_16x32, 24, 32, dtypes::bfloat16), doctest::Contains("powers of two and multiples of the 16 x 32"),
                       weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::shared_tile(SharedSwizzle::st_32x32, 32, 16, dtypes::bfloat16), doctest::Contains("multiples of the 32 x 32"), weft::Error);
}

TEST_CASE("layouts: gfx950's LDS read phases cover every lane once, and phase 0 of ds_read_b128 is HipKittens' measured set") {
  for (int bytes : {8, 16}) {
    const auto phases = weft::tile::lds_read_phases("gfx950", bytes);
    std::multiset<int64_t> lanes;
    for (const auto& p : phases) lanes.insert(p.begin(), p.end());
    CHECK(lanes.size() == 64);
    CHECK(std::set<int64_t>(lanes.begin(), lanes.end()).size() == 64);
  }
  CHECK(weft::tile::lds_read_phases("gfx950", 16)[0] == std::vector<int64_t>{0, 1, 2, 3, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 26, 27});
  CHECK(weft::tile::lds_read_phases("gfx950", 16)[3] == std::vector<int64_t>{36, 37, 38, 39, 40, 41, 42, 43, 48, 49, 50, 51, 60, 61, 62, 63});
  CHECK_THROWS_WITH_AS(weft::tile::lds_read_phases("gfx942", 16), doctest::Contains("16-byte reads on gfx942"), weft::Error);
}

TEST_CASE("layouts: bank_conflicts over contiguous phases equals the lanes_per_phase form") {
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Layout::Coords> images;
    for (int i = 0; i < 6; ++i) images.push_back({{"offset", static_cast<int64_t>(rng()() % 1024)}});
    const Layout l({{"lane", 6}}, {{"offset", 10}}, images);
    for (int per : {8, 16, 32}) {
      std::vector<std::vector<int64_t>> phases(static_cast<size_t>(64 / per));
      for (int64_t ln = 0; ln < 64; ++ln) phases[static_cast<size_t>(ln / per)].push_back(ln);
      CHECK(weft::tile::bank_conflicts(l, 2, 16, 64, phases) == weft::tile::bank_conflicts(l, 2, 16, 64, per));
    }
  }
  CHECK_THROWS_WITH_AS(weft::tile::bank_conflicts(Layout::identity("lane", "offset", 6), 2, 16, 64, std::vector<std::vector<int64_t>>{{64}}),
                       doctest::Contains("names lane 64"), weft::Error);
}

TEST_CASE("layouts: the 16x16x32 bf16 A read from a st_16x32 tile is conflict-free on gfx950, 8 elements a lane") {
  // Lane l reads 16 bytes: row l % 16, k 8 * (l / 16) .. + 7 of a 16 x 32 bf16 tile.
  const Layout rt = weft::tile::mfma_operand("gfx950", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A);
  const Layout swizzled = rt.then(weft::tile::shared_tile(SharedSwizzle::st_16x32, 16, 32, dtypes::bfloat16));
  const Layout plain = rt.then(weft::tile::shared_tile(SharedSwizzle::unswizzled, 16, 32, dtypes::bfloat16));
  CHECK(swizzled.contiguous("register", "offset") == 8);
  CHECK(plain.contiguous("register", "offset") == 8);
  const int banks = weft::tile::lds_banks("gfx950");
  const auto phases = weft::tile::lds_read_phases("gfx950", 16);
  // A phase is 16 lanes x 16 bytes = 64 dwords on 64 banks: 1 is the least possible. Phase 0
  // (lanes 0-3, 12-15, 20-23, 24-27) reads rows 0-3 and 12-15 at k 0 and rows 4-11 at k 8.
  // Row-major rows are 64 bytes = 16 banks apart, so rows r and r + 4 share banks at the same
  // k: rows 0-3 collide with 12-15, and rows 4-7 with 8-11: 2 dwords on one bank.
  CHECK(weft::tile::bank_conflicts(plain, 2, 16, banks, phases) == 2);
  // st_16x32 moves rows 8-15 by 16 columns (32 bytes, 8 banks), so rows 12-15 land on banks
  // 8-11 + 16j and rows 8-11 at k 8 on banks 12-15 + 16j: every bank once.
  CHECK(weft::tile::bank_conflicts(swizzled, 2, 16, banks, phases) == 1);
}

TEST_CASE("layouts: mma_gemm's mma.sync operand reads from swizzle_64b tiles are conflict-free on NVIDIA") {
  // The reads as the PTX ISA's m16n8k16 fragments make them, for a lane's first register (the
  // other registers add a constant, an XOR, which moves every lane's dword to the same new bank
  // pattern): group g = lane / 4, t = lane % 4.
  // A (M x K tile, 32 columns = 64-byte rows): 4 bytes at row g, k 2t.
  const Layout a = Layout::linear({{"lane", 5}}, {{"row", 4}, {"col", 5}},
                                  [](const Layout::Coords& x) { return Layout::Coords{{"row", x.at("lane") / 4}, {"col", 2 * (x.at("lane") % 4)}}; });
  // B (K x N tile, 128 columns, as mma_gemm keeps B): 2 bytes at row (k) 2t, column g.
  const Layout b = Layout::linear({{"lane", 5}}, {{"row", 5}, {"col", 7}},
                                  [](const Layout::Coords& x) { return Layout::Coords{{"row", 2 * (x.at("lane") % 4)}, {"col", x.at("lane") / 4}}; });
  const int banks = weft::tile::lds_banks("sm_90");
  CHECK(banks == 32);
  auto conflicts = [&](const Layout& read, int rows, int cols, SharedSwizzle kind, int bytes) {
    return weft::tile::bank_conflicts(read.then(weft::tile::shared_tile(kind, rows, cols, dtypes::bfloat16)), 2, bytes, banks,
                                      weft::tile::lds_read_phases("sm_90", bytes));
  };
  // Row-major, A's rows are 16 banks apart: rows g and g + 2 meet, 4 dwords on a bank. B's rows
  // are 256 bytes apart, so rows 0, 2, 4, 6 all start at bank 0: 4 dwords on each of banks 0-3.
  CHECK(conflicts(a, 16, 32, SharedSwizzle::unswizzled, 4) == 4);
  CHECK(conflicts(b, 32, 128, SharedSwizzle::unswizzled, 2) == 4);
  // The 64-byte swizzle moves row r's chunk by (r / 2) % 4 chunks of 4 banks: A's 8 rows land on
  // 8 different 4-bank groups, B's 4 rows on 4.
  CHECK(conflicts(a, 16, 32, SharedSwizzle::swizzle_64b, 4) == 1);
  CHECK(conflicts(b, 32, 128, SharedSwizzle::swizzle_64b, 2) == 1);
  // HipKittens' st_16x32 only flips on row bit 3: no help to 8 rows of 64 bytes.
  CHECK(conflicts(a, 16, 32, SharedSwizzle::st_16x32, 4) == 4);
  CHECK(weft::tile::lds_read_phases("sm_90", 4).size() == 1);
  CHECK_THROWS_WITH_AS(weft::tile::lds_read_phases("sm_90", 16), doctest::Contains("NVIDIA's 2- and 4-byte"), weft::Error);
  CHECK_THROWS_WITH_AS(weft::tile::shared_tile(SharedSwizzle::swizzle_64b, 8, 32, dtypes::float64), doctest::Contains("the catalog defines swizzle_64b for 1-, 2- and 4-byte"),
                       weft::Error);
}

TEST_CASE("layouts: LDS DMA writes lane-linearly, and wave grids are row-major") {
  for (int bytes : {1, 2, 4, 16}) {
    const Layout l = weft::tile::lds_dma_destination(bytes);
    REQUIRE(l.bijective());
    for (int64_t lane = 0; lane < 64; ++lane)
      for (int64_t b = 0; b < bytes; ++b) REQUIRE(l.apply({{"lane", lane}, {"byte", b}}).at("offset") == lane * bytes + b);
    CHECK(l.contiguous("byte", "offset") == bytes);
  }
  for (int bytes : {3, 8, 12}) CHECK_THROWS_WITH_AS(weft::tile::lds_dma_destination(bytes), doctest::Contains(("not " + std::to_string(bytes)).c_str()), weft::Error);
  const Layout g = weft::tile::wave_grid(2, 4);
  for (int64_t w = 0; w < 8; ++w) CHECK(g.apply({{"wave", w}}) == Layout::Coords{{"wave_row", w / 4}, {"wave_col", w % 4}});
  CHECK_THROWS_WITH_AS(weft::tile::wave_grid(3, 2), doctest::Contains("3 x 2"), weft::Error);
}

TEST_CASE("layouts: every catalog name resolves to its layout, and bad names say what is wrong") {
  int fixed = 0;
  for (const std::string& line : weft::tile::layout_catalog()) {
    const std::string name = line.substr(0, line.find('\t'));
    if (name.find("ROWSxCOLS") != std::string::npos) continue;
    CAPTURE(name);
    const auto found = weft::tile::find_layout(name);
    CHECK(found.name == name);
    CHECK(found.layout.bijective());
    ++fixed;
  }
  CHECK(fixed == 54 + 6 + 4);  // MFMA: 18 shape/dtype pairs x 3 operands; mma: 2 x 3; LDS DMA: 4
  CHECK(weft::tile::find_layout("mfma.gfx950.16x16x128.fp8.A").layout ==
        weft::tile::mfma_operand("gfx950", 16, 16, 128, dtypes::fp8e4m3, MatrixOperand::A));
  CHECK(weft::tile::find_layout("mfma.gfx950.16x16x32.bf16.A").layout == weft::tile::mfma_operand("gfx950", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A));
  CHECK(weft::tile::find_layout("mfma.gfx942.16x16x32.fp8.B").layout == weft::tile::mfma_operand("gfx942", 16, 16, 32, dtypes::fp8e4m3fnuz, MatrixOperand::B));
  CHECK(weft::tile::find_layout("mfma.gfx950.32x32x16.fp8.C").element_bytes == 4);
  CHECK(weft::tile::find_layout("st_16x32.bf16.32x64").layout == weft::tile::shared_tile(SharedSwizzle::st_16x32, 32, 64, dtypes::bfloat16));
  CHECK(weft::tile::find_layout("st_16x128.fp8.16x128").element_bytes == 1);
  CHECK(weft::tile::find_layout("waves.2x4").layout == weft::tile::wave_grid(2, 4));
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{{"nope", "the families are mfma"},
                                                                                  {"mfma.gfx950.16x16x32.bf16", "mfma.ARCH.MxNxK.DTYPE.A|B|C"},
                                                                                  {"mfma.gfx950.16x16.bf16.A", "'16x16' is not MxNxK"},
                                                                                  {"mfma.gfx950.16x16x32.f64.A", "'f64' is not f16, bf16 or fp8"},
                                                                                  {"mfma.gfx950.16x16x32.bf16.D", "'D' is not A, B or C"},
                                                                                  {"mfma.gfx942.16x16x32.bf16.A", "no 16x16x32 bfloat16 MFMA on gfx942"},
                                                                                  {"mma.m16n8k8.f16.A", "mma.m16n8k16"},
                                                                                  {"st_16x32.bf16.16", "'16' is not ROWSxCOLS"},
                                                                                  {"st_16x128.bf16.16x128", "HipKittens defines st_16x128 for 1-byte"},
                                                                                  {"lds_dma.x", "lds_dma.BYTES"},
                                                                                  {"lds_dma.12", "not 12"},
                                                                                  {"waves.2", "waves.ROWSxCOLS"}}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(weft::tile::find_layout(name), doctest::Contains(why.c_str()), weft::Error);
  }
}

TEST_CASE("layouts: SVG pictures have one rect per cell and label each cell with its owner or offset") {
  const Layout a = weft::tile::mma_m16n8k16_operand(dtypes::float16, MatrixOperand::A);
  const std::string svg = weft::tile::layout_svg(a, {"mma A", 2, 64});
  auto count = [](const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(svg.starts_with("<svg "));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK(count(svg, "<rect") == 16 * 16);
  // Every (lane, register) labels exactly one cell.
  for (int64_t lane = 0; lane < 32; ++lane)
    for (int64_t e = 0; e < 8; ++e) REQUIRE(count(svg, ">" + std::to_string(lane) + "/" + std::to_string(e) + "</text>") == 1);
  const Layout st = weft::tile::shared_tile(SharedSwizzle::st_16x32, 16, 32, dtypes::bfloat16);
  const std::string pic = weft::tile::layout_svg(st, {"st", 2, 64});
  CHECK(count(pic, "<rect") == 16 * 32);
  for (int64_t off = 0; off < 512; ++off) REQUIRE(count(pic, ">" + std::to_string(off) + "</text>") >= 1);
  const std::string waves = weft::tile::layout_svg(weft::tile::wave_grid(2, 4), {"w", 1, 64});
  CHECK(count(waves, "<rect") == 8);
  for (int w = 0; w < 8; ++w) CHECK(count(waves, ">wave " + std::to_string(w) + "</text>") == 1);
  const Layout other = Layout::identity("lane", "row", 2) * Layout::identity("lane", "wave_col", 1);
  CHECK_THROWS_WITH_AS(weft::tile::layout_svg(other, {"x", 1, 64}), doctest::Contains("no picture"), weft::Error);
}
