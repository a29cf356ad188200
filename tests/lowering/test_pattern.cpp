#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/lowering/pattern.h"

using namespace weft;

TEST_CASE("patterns match on op, dtype, arg and sources") {
  UOp x = variable("x", 0, 9, dtypes::index), y = variable("y", 0, 9, dtypes::index);
  UOp sum = x + y;
  Match m;
  CHECK(matches(Pat::op(OpSet{Op::ADD}, {Pat::var("l"), Pat::var("r")}), sum, &m));
  CHECK(m["l"].same(x));
  CHECK(m["r"].same(y));
  CHECK_FALSE(matches(Pat::op(OpSet{Op::MUL}), sum));
  CHECK(matches(Pat::op(OpSet{Op::ADD}).dtype({dtypes::index}), sum));
  CHECK_FALSE(matches(Pat::op(OpSet{Op::ADD}).dtype({dtypes::int32}), sum));
  CHECK(matches(Pat::op(OpSet{Op::RANGE}).arg(RangeArg{3, AxisType::LOOP}), range(4, 3)));
  CHECK_FALSE(matches(Pat::op(OpSet{Op::RANGE}).arg(RangeArg{3, AxisType::LOOP}), range(4, 2)));
  CHECK_FALSE(matches(Pat::op(OpSet{Op::ADD}, {Pat::var()}), sum));  // wrong number of sources
  CHECK(matches(Pat::op(OpSet{Op::ADD}, {Pat::var()}).prefix(), sum));
}

TEST_CASE("a repeated capture name must bind the same node") {
  UOp x = variable("x", 0, 9, dtypes::index), y = variable("y", 0, 9, dtypes::index);
  Pat same = Pat::op(OpSet{Op::ADD}, {Pat::var("a"), Pat::var("a")});
  CHECK(matches(same, x + x));
  CHECK_FALSE(matches(same, x + y));
}

TEST_CASE("commutative patterns try both source orders, with backtracking") {
  UOp x = variable("x", 0, 9, dtypes::index);
  UOp c = constant(Wide(3));
  Match m;
  CHECK(matches(Pat::var("v") + Pat::cvar("k"), c + x, &m));
  CHECK(m["v"].same(x));
  CHECK(m["k"].same(c));
  CHECK_FALSE(matches(Pat::var("v") - Pat::cvar("k"), c - x));  // SUB is not commutative
  // The first order binds "a" to x, then fails on the nested pattern; the second order works.
  UOp y = variable("y", 0, 9, dtypes::index);
  Pat nested = Pat::var("a") + (Pat::var("a") * Pat::cvar());
  CHECK(matches(nested, (y * 2) + y));
  CHECK_FALSE(matches(nested, (y * 2) + x));
}

TEST_CASE("a pattern set tries its rules in order and skips rewrites that return nothing") {
  UOp x = variable("x", 0, 9, dtypes::index);
  std::vector<std::string> tried;
  PatternSet rules{
      {"declines", Pat::op(OpSet{Op::ADD}), [&](const Match&) -> std::optional<UOp> { tried.push_back("declines"); return std::nullopt; }},
      {"first", Pat::op(OpSet{Op::ADD}), [&](const Match& m) -> std::optional<UOp> { tried.push_back("first"); return m.root().src(0); }},
      {"second", Pat::op(OpSet{Op::ADD}), [&](const Match& m) -> std::optional<UOp> { tried.push_back("second"); return m.root().src(1); }},
  };
  auto r = rules.apply(x + 1);
  REQUIRE(r);
  CHECK(r->same(x));
  CHECK(tried == std::vector<std::string>{"declines", "first"});
  CHECK_FALSE(rules.apply(x * 2));
  CHECK((rules + rules).size() == 6);
}
