#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"

using namespace weft;

TEST_CASE("building the same node twice yields the same node") {
  UOp a = placeholder({4, 4}, dtypes::float32, 0);
  UOp b = placeholder({4, 4}, dtypes::float32, 0);
  CHECK(a.same(b));
  UOp r = range(4, 0, AxisType::GLOBAL);
  CHECK((r * 4 + 1).same(r * 4 + 1));
  CHECK_FALSE((r * 4 + 1).same(r * 4 + 2));
  CHECK_FALSE(placeholder({4, 4}, dtypes::float32, 1).same(a));
  CHECK_FALSE(placeholder({4, 4}, dtypes::float16, 0).same(a));
  // Float constants are compared by bits: -0.0 and 0.0 differ, NaN equals NaN.
  CHECK_FALSE(constant(0.0, dtypes::float32).same(constant(-0.0, dtypes::float32)));
  CHECK(constant(std::nan(""), dtypes::float32).same(constant(std::nan(""), dtypes::float32)));
}

TEST_CASE("content hashes do not depend on addresses") {
  // The hash is a function of content only: rebuilding gives the same hash, and the hash of
  // a graph built in another thread or process matches (checked by value below).
  UOp r = range(16, 3, AxisType::LOCAL);
  UOp e = r * 2 + 1;
  CHECK(e.hash() == (r * 2 + 1).hash());
  CHECK(e.hash() != (r * 2 + 2).hash());
  CHECK(constant(Wide(7)).hash() == 15060106127400707823ULL);
}

TEST_CASE("construction is thread-safe: concurrent builders agree on every node") {
  constexpr int kThreads = 8, kNodes = 2000;
  std::vector<std::vector<UOp>> built(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&built, t] {
      UOp x = variable("x", 0, 100, dtypes::index);
      for (int i = 0; i < kNodes; ++i) built[static_cast<size_t>(t)].push_back(x * i + (i % 7));
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t)
    for (int i = 0; i < kNodes; ++i) REQUIRE(built[static_cast<size_t>(t)][static_cast<size_t>(i)].same(built[0][static_cast<size_t>(i)]));
}

TEST_CASE("toposort puts every node after its sources, without recursion") {
  UOp x = variable("x", 0, 9, dtypes::index);
  UOp e = x;
  for (int i = 0; i < 100000; ++i) e = e + 1;
  auto order = toposort(e);
  CHECK(order.size() == 100002);  // x, the constant 1, and 100000 ADDs
  CHECK(order.back().same(e));
  CHECK(order.front().same(x));
}
