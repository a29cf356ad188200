// IndexProgram: an index expression prepared once and evaluated at every launch, against the
// reference interpreter (expr_eval.h) on random variable values (the seed printed).
#include <doctest/doctest.h>

#include <random>

#include "expr_eval.h"
#include "weft/dsl/builder.h"
#include "weft/lowering/index_program.h"

using namespace weft;

namespace {

UOp index_constant(int64_t v) { return constant(Wide(v), dtypes::index); }

int64_t reference(const UOp& e, const std::map<std::string, int64_t>& values) {
  testing::Assignment a;
  for (const auto& [name, v] : values) a.vars[name] = v;
  const auto r = testing::evaluate(e, a);
  REQUIRE(r.has_value());
  return static_cast<int64_t>(*r);
}

}  // namespace

TEST_CASE("index program: a constant expression is one value") {
  const UOp e = (index_constant(1000) + 127) / 128 * 4;
  const lower::IndexProgram p(e);
  CHECK(p.is_constant());
  CHECK(p.evaluate({}) == reference(e, {}));
  CHECK(lower::IndexProgram().evaluate({}) == 0);
}

TEST_CASE("index program: expressions of variables agree with the reference interpreter") {
  const uint64_t seed = std::random_device{}();
  MESSAGE("index program seed " << seed);
  std::mt19937_64 rng(seed);
  const UOp T = variable("T", 1, 1 << 20, dtypes::index), R = variable("R", 1, 1 << 20, dtypes::index);
  const std::vector<UOp> exprs = {
      (T + 127) / 128 * 128,
      T * 8 + R % 256,
      where(T < R, T, R) * 3 - 1,
      max(T / 16, index_constant(1)),
      (T * 7 / 3 + R * (T % 5)) % 1000003,
  };
  const std::vector<std::string> order{"R", "T"};  // a launch's: the kernel's integer scalars
  for (const UOp& e : exprs) {
    const lower::IndexProgram p(e), bound(e, order);
    CHECK_FALSE(p.is_constant());
    for (int i = 0; i < 50; ++i) {
      const std::map<std::string, int64_t> values{{"T", 1 + static_cast<int64_t>(rng() % (1 << 20))},
                                                  {"R", 1 + static_cast<int64_t>(rng() % (1 << 20))}};
      const int64_t want = reference(e, values);
      CHECK(p.evaluate(values) == want);
      CHECK(bound.evaluate(values) == want);
      const std::vector<int64_t> in_order{values.at("R"), values.at("T")};
      CHECK(bound.evaluate_in_order(in_order) == want);
    }
  }
}

TEST_CASE("index program: more steps than kept on the stack") {
  const UOp T = variable("T", 0, 1000, dtypes::index);
  UOp e = T;
  for (int64_t i = 1; i <= 2 * static_cast<int64_t>(lower::IndexProgram::kInlineSteps); ++i) e = e * 3 % 1009 + i;
  const lower::IndexProgram p(e);
  for (int64_t t : {0, 1, 17, 999}) CHECK(p.evaluate({{"T", t}}) == reference(e, {{"T", t}}));
}

TEST_CASE("index program: errors show at evaluation, naming what failed") {
  const UOp T = variable("T", 0, 100, dtypes::index);
  const lower::IndexProgram by_t(index_constant(64) / T);
  CHECK_THROWS_WITH_AS(by_t.evaluate({}), doctest::Contains("variable T is not bound"), Error);
  CHECK_THROWS_WITH_AS(by_t.evaluate({{"T", 0}}), doctest::Contains("division by zero"), Error);
  CHECK(by_t.evaluate({{"T", 16}}) == 4);
  // In order: a variable the program was not prepared with, or a value missing, is not bound.
  const std::vector<int64_t> sixteen{16};
  CHECK_THROWS_WITH_AS(by_t.evaluate_in_order(sixteen), doctest::Contains("variable T is not bound"), Error);
  const std::vector<std::string> t_only{"T"}, r_then_t{"R", "T"};
  CHECK(lower::IndexProgram(index_constant(64) / T, t_only).evaluate_in_order(sixteen) == 4);
  CHECK_THROWS_WITH_AS(lower::IndexProgram(index_constant(64) / T, r_then_t).evaluate_in_order(sixteen), doctest::Contains("variable T is not bound"),
                       Error);
  const UOp r = range(8, 0, AxisType::LOOP);
  const lower::IndexProgram ranged(r * 2);  // prepared without error
  CHECK_THROWS_WITH_AS(ranged.evaluate({}), doctest::Contains("cannot evaluate RANGE"), Error);
  const lower::IndexProgram floating(constant(1.5, dtypes::float32));  // prepared without error
  CHECK_THROWS_WITH_AS(floating.evaluate({}), doctest::Contains("cannot evaluate CONST"), Error);
}
