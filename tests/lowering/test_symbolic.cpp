// The simplifier's rules, case by case. Expected texts are what an expert would write by hand
// for each simplified expression; the brute-force fuzz test checks soundness in general.
#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/symbolic.h"

using namespace weft;

namespace {

UOp var(const char* name, Wide lo, Wide hi) {
  return variable(name, static_cast<int64_t>(lo), static_cast<int64_t>(hi), dtypes::index);
}

// Simplifies `e` and checks its text and value range.
void check(const UOp& e, Wide vmin, Wide vmax, const std::string& text) {
  UOp s = simplify(e);
  CAPTURE(expr_string(e));
  CHECK(expr_string(s) == text);
  CHECK(wide_to_string(s.vmin()) == wide_to_string(vmin));
  CHECK(wide_to_string(s.vmax()) == wide_to_string(vmax));
}

constexpr Wide p2(int k) { return Wide(1) << k; }

}  // namespace

TEST_CASE("seed test_mul_lt: c0*x < c1 for every sign of c0 and c1") {
  check(var("a", 0, 5) * 4 < 13, 0, 1, "(a<4)");
  check(var("a", 0, 5) * 4 < 16, 0, 1, "(a<4)");
  check(var("a", -5, 5) * 4 < -13, 0, 1, "(a<-3)");
  check(var("a", -5, 5) * -4 < 13, 0, 1, "((a*-1)<4)");
  {
    Wide c0 = 2, c1 = p2(54) + 1;
    check(var("a", 0, c1) * constant(c0) < constant(c1), 0, 1, "(a<" + wide_to_string(p2(53) + 1) + ")");
  }
  {
    Wide c0 = -2, c1 = -(p2(54) - 1);
    check(var("a", 0, -c1) * constant(c0) < constant(c1), 0, 1, "((a*-1)<" + wide_to_string(-(p2(53) - 1)) + ")");
  }
  check(var("a", 0, 5) * -2 < 0, 0, 1, "((a*-1)<0)");
  check(var("a", 0, 5) * 4 >= 12, 0, 1, "((a<3)!=True)");
  check(var("a", 0, 5) * 4 >= 13, 0, 1, "((a<4)!=True)");
}

TEST_CASE("c0*x < c1 at magnitudes up to 2^62") {
  check(var("a", 0, p2(61) + 5) * 2 < constant(p2(62) + 1), 0, 1, "(a<" + wide_to_string(p2(61) + 1) + ")");
  // ceil(-(2^62)/3) = -1537228672809129301
  check(var("a", 0, p2(61)) * -3 < constant(-p2(62)), 0, 1, "((a*-1)<-1537228672809129301)");
  check(var("a", -p2(60), p2(60)) * 4 < constant(p2(62) + 1), 1, 1, "True");
  // a*3 may exceed int64 here, so the product can wrap and the rule must not fire.
  UOp wraps = var("a", 0, p2(62)) * 3 < constant(p2(62));
  CHECK(expr_string(simplify(wraps)) == "((a*3)<" + wide_to_string(p2(62)) + ")");
}

TEST_CASE("constant folding follows C semantics") {
  check(constant(7) / constant(-2), -3, -3, "-3");
  check(constant(-7) % constant(2), -1, -1, "-1");
  check(constant(-7) / constant(2), -3, -3, "-3");
  check(constant(Wide(2147483647), dtypes::int32) + constant(Wide(1), dtypes::int32), -2147483648, -2147483648, "-2147483648");
  check(max(constant(3), constant(-4)), 3, 3, "3");
  CHECK(expr_string(simplify(constant(1.5, dtypes::float32) * constant(2.0, dtypes::float32))) == "3.0");
  CHECK(expr_string(simplify(constant(1.0, dtypes::float16) / constant(3.0, dtypes::float16))) == "0.333251953");
  // Division by zero is undefined: it stays for the device to decide.
  CHECK(expr_string(simplify(constant(1) / constant(0))) == "(1//0)");
}

TEST_CASE("algebraic identities") {
  UOp x = var("x", -3, 9), y = var("y", 0, 4);
  check(x + 0, -3, 9, "x");
  check(0 + x, -3, 9, "x");
  check(x * 1, -3, 9, "x");
  check(x * 0, 0, 0, "0");
  check(x - x, 0, 0, "0");
  check(x / 1, -3, 9, "x");
  check(x % 1, 0, 0, "0");
  check(x / -1, -9, 3, "(x*-1)");
  check(max(x, x), -3, 9, "x");
  check(where(x < y, x, x), -3, 9, "x");
  check(x.ne(x), 0, 0, "False");
  check(x < x, 0, 0, "False");
  UOp b = x < y;
  check(!!b, 0, 1, "(x<y)");
  check(b & constant(Wide(1), dtypes::bool_), 0, 1, "(x<y)");
  check(b | constant(Wide(1), dtypes::bool_), 1, 1, "True");
}

TEST_CASE("canonical sums and products") {
  UOp a = var("a", 0, 7), b = var("b", 0, 7);
  check(b + a, 0, 14, "(a+b)");
  check(a + 3 + b + 2, 5, 19, "((a+b)+5)");
  check(a * 2 + a * 3, 0, 35, "(a*5)");
  check(a + b - a, 0, 7, "b");
  check((a + 1) * 4, 4, 32, "((a*4)+4)");
  check(-(-a), 0, 7, "a");
  check(3 * (a * 2), 0, 42, "(a*6)");
  check(b * a, 0, 49, "(a*b)");
}

TEST_CASE("division and modulo folding with value ranges") {
  UOp g = range(64, 0, AxisType::GLOBAL), l = range(64, 1, AxisType::LOCAL);
  check((g * 64 + l) / 64, 0, 63, "r0");
  check((g * 64 + l) % 64, 0, 63, "r1");
  check((g * 64 + l + 3) % 64 < 100, 1, 1, "True");
  UOp x = var("x", 0, 100);
  check((x * 6 + 4) / 2, 2, 302, "((x*3)+2)");
  check((x * 6 + 4) % 4, 0, 2, "((x%2)*2)");
  check((x / 4) / 8, 0, 3, "(x//32)");
  check((x % 12) % 4, 0, 3, "(x%4)");
  check(x % 128, 0, 100, "x");
  check((x * 8 + 5) / 4, 1, 201, "((x*2)+1)");
  check((x * 8 + 5) % 4, 1, 1, "1");
  check(x / -4, -25, 0, "((x//4)*-1)");
  check(var("n", -3, 0) % 4, -3, 0, "n");
}

TEST_CASE("no folding where int32 arithmetic may wrap") {
  // w*4 wraps for these w, so (w*4)//4 is not w and (w*-2)%6 is not ((w*-1)%3)*2.
  UOp w = variable("w", -2147483648LL, -2147483000LL, dtypes::int32);
  CHECK(expr_string(simplify((w * 4) / 4)) == "((w*4)//4)");
  CHECK(expr_string(simplify((w * -2) % 6)) == "((w*-2)%6)");
  UOp v = variable("v", 0, 1000, dtypes::int32);
  check((v * 4) / 4, 0, 1000, "v");  // no wrap possible: folds
}

TEST_CASE("x//d < c, (x//c1)//c2 and negative numerators") {
  UOp x = var("x", -20, 20);
  check(x / 4 < 3, 0, 1, "(x<12)");
  check(x / 4 < 0, 0, 1, "(x<-3)");
  check(x / 4 < -1, 0, 1, "(x<-7)");
  check((x / 3) / 2, -3, 3, "(x//6)");
  // x may be negative: (x + 8) // 4 is not x//4 + 2.
  CHECK(expr_string(simplify((x + 8) / 4)) == "((x+8)//4)");
}

TEST_CASE("sums compared with constants") {
  UOp a = var("a", 0, 9), b = var("b", 0, 9);
  check(a * 4 + b * 8 < 13, 0, 1, "((a+(b*2))<4)");
  check(a * 2 + 1 < 9, 0, 1, "(a<4)");
  check(constant(3) < a * 2 + 1, 0, 1, "(1<a)");
  check((a * 4 + 2).eq(constant(5)), 0, 0, "False");
  check((a * 4 + 2).ne(constant(10)), 0, 1, "(a!=2)");
}

TEST_CASE("range simplification: ranges of one iteration vanish") {
  UOp buf = placeholder({8, 1}, dtypes::float32, 0);
  UOp i = range(8, 0, AxisType::GLOBAL), j = range(1, 1, AxisType::LOOP);
  UOp k = sink({"k"}, {buf[{i, j}].store(constant(1.0, dtypes::float32)).end({i, j})});
  UOp s = simplify(k);
  UOp end = s.src(0);
  REQUIRE(end.op() == Op::END);
  CHECK(end.src().size() == 2);
  CHECK(end.src(1).same(i));
  UOp r = range(1, 2, AxisType::REDUCE);
  CHECK(expr_string(simplify((var("x", 0, 3) + r).reduce(Op::ADD, {r}))) == "x");
}

// A bound that may be 0 (hopper_gemm's grouped form: a trip count of 0 or 1 loaded from the
// routing plan) is a loop that may run no iteration: folding its range (or an expression of it,
// trip * steps) to 0 moved its body out of the loop, running it for blocks of no expert (the
// H100's illegal shared-memory reads, session 18).
TEST_CASE("range simplification: a range whose bound may be 0 stays a loop") {
  UOp buf = placeholder({8}, dtypes::float32, 0);
  const UOp trips = var("t", 0, 1);
  UOp j = range(trips, 1, AxisType::LOOP);
  UOp s = simplify(sink({"k"}, {buf[j].store(constant(1.0, dtypes::float32)).end({j})}));
  REQUIRE(s.src(0).op() == Op::END);
  CHECK(s.src(0).src().size() == 2);
  CHECK(s.src(0).src(1).op() == Op::RANGE);
  CHECK(j.vmin() == 0);
  CHECK(j.vmax() == 1);
  // An expression of it keeps the dependence: the store at j * 4 stays inside the loop.
  UOp s4 = simplify(sink({"k"}, {buf[j * 4].store(constant(1.0, dtypes::float32)).end({j})}));
  REQUIRE(s4.src(0).op() == Op::END);
  const std::string address = expr_string(s4.src(0).src(0).src(0), 200);  // the store's index
  INFO(address);
  CHECK(address.find("*4") != std::string::npos);
  // A bound of exactly 1 (1 <= t <= 1) still folds.
  UOp one = range(var("u", 1, 1), 2, AxisType::LOOP);
  CHECK(simplify(sink({"k"}, {buf[one].store(constant(1.0, dtypes::float32)).end({one})})).src(0).op() == Op::STORE);
}
