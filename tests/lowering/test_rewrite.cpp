#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/rewrite.h"

using namespace weft;

namespace {

// x + c1 + c2 ... folds to x + (sum): needs re-rewriting of what a rule produces.
PatternSet fold_add_consts() {
  return PatternSet{{"(x+c1)+c2", (Pat::var("x") + Pat::cvar("c1")) + Pat::cvar("c2"), [](const Match& m) -> std::optional<UOp> {
                       return m["x"] + constant(m["c1"].const_int() + m["c2"].const_int());
                     }}};
}

}  // namespace

TEST_CASE("bottom-up rewriting reaches a fixed point") {
  UOp x = variable("x", 0, 9, dtypes::index);
  UOp e = x + 1 + 2 + 3 + 4;
  CHECK(expr_string(graph_rewrite(e, fold_add_consts())) == "(x+10)");
}

TEST_CASE("single-walk rewriting gives each input node one chance") {
  UOp x = variable("x", 0, 9, dtypes::index);
  // x+c -> (x+(c-1))+1 for c > 1: a fixed point peels every unit off, one walk peels one.
  PatternSet peel{{"x+c -> (x+(c-1))+1", Pat::var("x") + Pat::cvar("c"), [](const Match& m) -> std::optional<UOp> {
                     Wide c = m["c"].const_int();
                     if (c <= 1) return std::nullopt;
                     return UOp::make(Op::ADD, dtypes::index, {UOp::make(Op::ADD, dtypes::index, {m["x"], constant(c - 1)}), constant(Wide(1))});
                   }}};
  UOp e = x + 4;
  CHECK(expr_string(graph_rewrite(e, peel, {RewriteMode::SingleWalk})) == "((x+3)+1)");
  CHECK(expr_string(graph_rewrite(e, peel, {RewriteMode::BottomUp})) == "((((x+1)+1)+1)+1)");
}

TEST_CASE("top-down rewriting sees a node before its sources") {
  UOp x = variable("x", 0, 9, dtypes::index);
  // A rule on the outer node that would no longer match once the inner node was rewritten.
  PatternSet rules{
      {"(x+1)*2 -> outer", (Pat::var("x") + Pat::cvar("one")) * Pat::cvar("two"),
       [](const Match& m) -> std::optional<UOp> { return m["x"] * 100; }},
      {"x+1 -> x", Pat::var("x") + Pat::cvar("one"), [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
  };
  UOp e = (x + 1) * 2;
  CHECK(expr_string(graph_rewrite(e, rules, {RewriteMode::TopDown})) == "(x*100)");
  CHECK(expr_string(graph_rewrite(e, rules, {RewriteMode::BottomUp})) == "(x*2)");
}

TEST_CASE("rules that undo each other are reported, not run forever") {
  UOp x = variable("x", 0, 9, dtypes::index);
  PatternSet flip{{"a+b -> b+a", Pat::op(OpSet{Op::ADD}, {Pat::var("a"), Pat::var("b")}),
                   [](const Match& m) -> std::optional<UOp> { return UOp::make(Op::ADD, m.root().dtype(), {m["b"], m["a"]}); }}};
  CHECK_THROWS_WITH_AS(graph_rewrite(x + 1, flip), doctest::Contains("back to itself"), Error);
  PatternSet grow{{"x -> x+0", Pat::var("x").dtype({dtypes::index}), [](const Match& m) -> std::optional<UOp> {
                     return UOp::make(Op::ADD, dtypes::index, {m["x"], constant(Wide(0))}); }}};
  CHECK_THROWS_AS(graph_rewrite(x, grow), Error);
}

TEST_CASE("deep graphs do not exhaust the stack") {
  UOp x = variable("x", 0, 9, dtypes::index);
  UOp e = x;
  for (int i = 0; i < 200000; ++i) e = e + 1;
  UOp r = graph_rewrite(e, fold_add_consts());
  CHECK(expr_string(r) == "(x+200000)");
}

TEST_CASE("substitute replaces nodes everywhere below the root") {
  UOp x = variable("x", 0, 9, dtypes::index), y = variable("y", 0, 9, dtypes::index);
  UOp e = (x + 1) * x;
  CHECK(expr_string(substitute(e, {{x, y}})) == "((y+1)*y)");
}
