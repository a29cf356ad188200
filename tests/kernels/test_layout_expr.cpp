// Index expressions from layouts (kernels/layout_expr.h), checked by enumeration: the DSL
// expression evaluated at every input equals Layout::apply, for the catalog's layouts and
// their compositions; vector widths and granules agree with the layouts.
#include <doctest/doctest.h>

#include "../lowering/expr_eval.h"
#include "weft/dsl/builder.h"
#include "weft/kernels/layout_expr.h"
#include "weft/kernels/layouts.h"

using namespace weft;
using namespace weft::tile;

namespace {

Wide eval(const UOp& u, const testing::Assignment& env) {
  std::unordered_map<const Node*, std::optional<Wide>> memo;
  return testing::evaluate(u, env, memo).value();
}

// Every input of `l` as ranges (ids by dimension order), each output compared with apply().
void check_all_inputs(const Layout& l) {
  LayoutInputs in;
  int64_t id = 0;
  for (const LayoutDim& d : l.in_dims()) in[d.name] = range(int64_t{1} << d.bits, id++);
  std::map<std::string, UOp> out;
  for (const LayoutDim& d : l.out_dims()) out[d.name] = layout_index(l, in, d.name);
  const int64_t total = int64_t{1} << l.in_bits();
  for (int64_t x = 0; x < total; ++x) {
    testing::Assignment env;
    Layout::Coords c;
    int at = 0;
    int64_t rid = 0;
    for (const LayoutDim& d : l.in_dims()) {
      const int64_t v = (x >> at) & ((int64_t{1} << d.bits) - 1);
      c[d.name] = v;
      env.ranges[rid++] = Wide(v);
      at += d.bits;
    }
    const Layout::Coords want = l.apply(c);
    for (const auto& [name, expr] : out) {
      CAPTURE(name);
      CAPTURE(x);
      REQUIRE(eval(expr, env) == Wide(want.at(name)));
    }
  }
}

}  // namespace

TEST_CASE("layout_index equals apply at every input: MFMA operands, swizzles and their compositions") {
  for (const char* arch : {"gfx950", "gfx942"})
    for (MatrixOperand op : {MatrixOperand::A, MatrixOperand::B, MatrixOperand::C}) {
      CAPTURE(arch);
      check_all_inputs(mfma_operand(arch, 16, 16, std::string(arch) == "gfx950" ? 32 : 16, dtypes::bfloat16, op));
    }
  const Layout st = shared_tile(SharedSwizzle::st_16x32, 64, 64, dtypes::bfloat16);
  check_all_inputs(st);
  check_all_inputs(st.invert());
  const Layout a = mfma_operand("gfx950", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A) * Layout::identity("sub_row", "row", 2) *
                   Layout::identity("sub_col", "col", 1);
  check_all_inputs(a.then(st));
}

TEST_CASE("layout_index folds constant inputs and checks its arguments") {
  const Layout st = shared_tile(SharedSwizzle::st_16x32, 32, 32, dtypes::bfloat16);
  const UOp off = layout_index(st, {{"row", constant(Wide(9))}, {"col", constant(Wide(3))}}, "offset");
  REQUIRE(off.is_const());
  CHECK(off.const_int() == st.apply({{"row", 9}, {"col", 3}}).at("offset"));
  CHECK_THROWS_WITH_AS(layout_index(st, {{"row", constant(Wide(1))}}, "offset"), doctest::Contains("no value given for input dimension 'col'"), Error);
  CHECK_THROWS_WITH_AS(layout_index(st, {{"row", constant(Wide(1))}, {"col", constant(Wide(1))}}, "bank"), doctest::Contains("no output dimension 'bank'"), Error);
  CHECK_THROWS_WITH_AS(layout_index(st, {{"row", constant(Wide(40))}, {"col", constant(Wide(1))}}, "offset"), doctest::Contains("40 is outside"), Error);
}

TEST_CASE("aligned vector widths and granules of a swizzled MFMA operand read") {
  const Layout st = shared_tile(SharedSwizzle::st_16x32, 32, 64, dtypes::bfloat16);
  const Layout a = mfma_operand("gfx950", 16, 16, 32, dtypes::bfloat16, MatrixOperand::A) * Layout::identity("sub_row", "row", 1) *
                   Layout::identity("sub_col", "col", 1);
  const Layout to_offset = a.then(st);
  CHECK(aligned_vector_width(to_offset, "register", "offset", 8) == 8);
  CHECK(aligned_vector_width(to_offset, "register", "offset", 4) == 4);
  // The granule times the width is the first element's offset, for every lane and sub-tile.
  const UOp lane = range(64, 0);
  for (int64_t sr = 0; sr < 2; ++sr)
    for (int64_t sc = 0; sc < 2; ++sc) {
      const UOp g = layout_granule(to_offset, {{"register", constant(Wide(0))}, {"lane", lane}, {"sub_row", constant(Wide(sr))}, {"sub_col", constant(Wide(sc))}},
                                   "register", "offset", 8);
      for (int64_t l = 0; l < 64; ++l) {
        testing::Assignment env;
        env.ranges[0] = Wide(l);
        CHECK(eval(g, env) * 8 == Wide(to_offset.apply({{"register", 0}, {"lane", l}, {"sub_row", sr}, {"sub_col", sc}}).at("offset")));
      }
    }
  // An unswizzled 16-column tile of the 16x16x16 A operand still moves 4 elements per lane.
  const Layout plain = shared_tile(SharedSwizzle::unswizzled, 16, 16, dtypes::bfloat16);
  CHECK(aligned_vector_width(mfma_operand("gfx942", 16, 16, 16, dtypes::bfloat16, MatrixOperand::A).then(plain), "register", "offset", 8) == 4);
  CHECK_THROWS_WITH_AS(layout_granule(to_offset, {}, "register", "offset", 16), doctest::Contains("at most 8 consecutive elements"), Error);
}
