#include <doctest/doctest.h>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"

using namespace weft;

TEST_CASE("expressions print in infix form") {
  UOp a = variable("a", 0, 5, dtypes::index);
  UOp r = range(8, 2, AxisType::LOCAL);
  CHECK(expr_string(a * 4 < 13) == "((a*4)<13)");
  CHECK(expr_string(r * 8 + a) == "((r2*8)+a)");
  CHECK(expr_string(a / 3 % 2) == "((a//3)%2)");
  CHECK(expr_string(a >= 2) == "((a<2)!=True)");
  CHECK(expr_string(where(a < 1, a, r)) == "where((a<1), a, r2)");
  CHECK(expr_string(constant(0.5, dtypes::float32)) == "0.5");
  CHECK(expr_string(constant(2.0, dtypes::float32)) == "2.0");
  UOp buf = placeholder({8, 8}, dtypes::float32, 0);
  CHECK(expr_string(buf[{r, a}].load()) == "buf0[r2, a]");
}

TEST_CASE("long expressions are cut") {
  UOp a = variable("a", 0, 5, dtypes::index);
  UOp e = a;
  for (int i = 0; i < 500; ++i) e = e + a;
  std::string s = expr_string(e, 100);
  CHECK(s.size() < 2000);
  CHECK(s.find("...") != std::string::npos);
}

TEST_CASE("graph listings are stable and numbered in dependency order") {
  UOp in = placeholder({4}, dtypes::float32, 1), out = placeholder({4}, dtypes::float32, 0);
  UOp i = range(4, 0, AxisType::GLOBAL);
  UOp k = sink({"add_one"}, {out[i].store(in[i].load() + 1.0).end({i})});
  const std::string expected =
      "%0 = CONST index 4\n"
      "%1 = PLACEHOLDER float32 (%0) slot=0 GLOBAL\n"
      "%2 = RANGE index (%0) id=0 axis=GLOBAL\n"
      "%3 = INDEX float32 (%1, %2)\n"
      "%4 = PLACEHOLDER float32 (%0) slot=1 GLOBAL\n"
      "%5 = INDEX float32 (%4, %2)\n"
      "%6 = LOAD float32 (%5)\n"
      "%7 = CONST float32 1.0\n"
      "%8 = ADD float32 (%6, %7)\n"
      "%9 = STORE void (%3, %8)\n"
      "%10 = END void (%9, %2)\n"
      "%11 = SINK void (%10) name=add_one\n";
  CHECK(graph_string(k) == expected);
  CHECK(graph_string(k) == graph_string(k));
}

TEST_CASE("synchronization statements print their sites, counts and masks") {
  CHECK(arg_to_string(WaitArg{4, 3, 2}) == "site=4 vm=3 lgkm=2");
  CHECK(arg_to_string(WaitArg{4, -1, 0}) == "site=4 lgkm=0");
  CHECK(arg_to_string(SchedArg{5, SchedMask::MFMA, 1, 0}) == "site=5 mask=0x8 size=1 sync=0");
  CHECK(arg_to_string(SchedArg{6, SchedMask::VALU | SchedMask::DSRead, 0, 0}) == "site=6 mask=0x102");
  CHECK(arg_to_string(EffectArg{7, static_cast<Wide>(BarrierFence::None), {}}) == "site=7 value=1");
  // Sinked, the statements list in order with their args.
  UOp k = sink({"waits"}, {wait_counts({.vm = 0}), sched_barrier(SchedMask::None)});
  const std::string g = graph_string(k);
  CHECK(g.find("WAIT void site=") != std::string::npos);
  CHECK(g.find(" vm=0\n") != std::string::npos);
  CHECK(g.find("SCHED_BARRIER void site=") != std::string::npos);
}
