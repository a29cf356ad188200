// Effects keep their order and their identity: stores that may alias are not reordered by
// coalescing, two explicit barriers stay two barriers, a repeated or site-less statement is an
// error, and float comparisons built from < are false for NaN. Each case once gave a wrong
// answer without a word.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/verify.h"
#include "weft/emulator/listing.h"
#include "weft/lowering/passes.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

size_t count_effects(const lower::LoweredKernel& k, Op op) {
  return static_cast<size_t>(std::count_if(k.program.begin(), k.program.end(), [&](const lower::LinearOp& s) {
    return s.op.op() == op && s.kind == lower::LinearOp::Kind::Effect;
  }));
}

size_t count_in(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

WEFT_DEVICE_TEST_CASE("coalescing keeps program order across a store that may alias: out[0]=a, out[n]=b, out[1]=c") {
  UOp in = placeholder({4}, dtypes::float32, 1), out = placeholder({4}, dtypes::float32, 0);
  UOp n = variable("n", 0, 3);
  auto at = [](Wide i) { return constant(i); };
  UOp k = sink({"alias_order"}, {group({out[at(0)].store(in[at(0)].load()), out[n].store(in[at(1)].load()),
                                        out[at(1)].store(in[at(2)].load())})});
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    for (int64_t nv = 0; nv < 4; ++nv) {
      CAPTURE(nv);
      auto x = weft::testing::random_floats(4);
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 4), put(*dev, dtypes::float32, x)};
      compiled.launch(*dev, args, {{"n", nv}});
      auto y = get<float>(*dev, args[0]);
      std::vector<float> want(4, std::numeric_limits<float>::quiet_NaN());
      want[0] = x[0];
      want[static_cast<size_t>(nv)] = x[1];
      want[1] = x[2];
      for (size_t i = 0; i < 2; ++i) CHECK(y[i] == want[i]);
      if (nv >= 2) CHECK(y[static_cast<size_t>(nv)] == x[1]);
    }
  }
}

TEST_CASE("coalescing still merges consecutive stores when what lies between is provably disjoint") {
  UOp in = placeholder({8}, dtypes::float32, 1), out = placeholder({8}, dtypes::float32, 0);
  auto at = [](Wide i) { return constant(i); };
  // out[0], out[5], out[1]: 5 is neither 0 nor 1, so out[0] and out[1] may become one vector store.
  UOp g = sink({"disjoint"}, {group({out[at(0)].store(in[at(0)].load()), out[at(5)].store(in[at(1)].load()),
                                     out[at(1)].store(in[at(2)].load())})});
  UOp c = lower::coalesce_stores(g);
  size_t stores = 0, vectors = 0;
  for (const UOp& u : toposort(c))
    if (u.op() == Op::STORE) {
      ++stores;
      vectors += u.src(1).dtype().is_vector();
    }
  CHECK(stores == 2);
  CHECK(vectors == 1);
  // A barrier between them keeps them apart.
  UOp b = sink({"fenced"}, {group({out[at(0)].store(in[at(0)].load()), barrier(), out[at(1)].store(in[at(2)].load())})});
  for (const UOp& u : toposort(lower::coalesce_stores(b)))
    if (u.op() == Op::STORE) CHECK_FALSE(u.src(1).dtype().is_vector());
}

WEFT_DEVICE_TEST_CASE("two explicit barriers are two barriers") {
  // Two waves: LLVM drops barriers in one-wave workgroups.
  UOp in = placeholder({128}, dtypes::float32, 1), out = placeholder({128}, dtypes::float32, 0);
  UOp l = range(128, 0, AxisType::LOCAL);
  UOp first = barrier(), second = barrier();
  CHECK_FALSE(first.same(second));
  UOp k = sink({"two_barriers"}, {group({out[l].store(in[l].load()), first, out[l].store(in[l].load() * 2.0), second,
                                         out[l].store(in[l].load() * 3.0)})
                                      .end({l})});
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    CHECK(count_effects(compiled.lowered(), Op::BARRIER) == 2);
    if (target.starts_with("emu:")) {
      std::ostringstream listing;
      emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
      CHECK(count_in(listing.str(), "s_barrier") == 2);
    }
    auto x = weft::testing::random_floats(128);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 128);
    for (size_t q = 0; q < 128; ++q) REQUIRE(y[q] == x[q] * 3.0f);
  }
}

WEFT_DEVICE_TEST_CASE("a barrier that names values computes them before it, and their uses after it go through after()") {
  // A memory cluster issued ahead of its barrier (hk_gemm's ping-pong): the load is written
  // before the barrier although its only use follows it.
  UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  const UOp v = in[l].load();
  const UOp issued = barrier({v}, BarrierFence::None);
  const UOp k = sink({"issued_ahead"}, {group({issued, out[l].store(v.after({issued}) * 2.0f)}).end({l})});
  const lower::LoweredKernel lk = lower::lower(lower::canonical_allocations(k));
  std::optional<size_t> load_at, barrier_at, store_at;
  for (size_t i = 0; i < lk.program.size(); ++i) {
    const Op op = lk.program[i].op.op();
    if (op == Op::LOAD && !load_at) load_at = i;
    if (op == Op::BARRIER) barrier_at = i;
    if (op == Op::STORE) store_at = i;
  }
  REQUIRE((load_at && barrier_at && store_at));
  CHECK(*load_at < *barrier_at);
  CHECK(*barrier_at < *store_at);
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const auto x = weft::testing::random_floats(64);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 64), put(*dev, dtypes::float32, x)};
    rt::CompiledKernel::compile(*dev, k).launch(*dev, args);
    const auto y = get<float>(*dev, args[0]);
    for (size_t i = 0; i < 64; ++i) CHECK(y[i] == x[i] * 2.0f);
  }
  // A buffer is not a value: the statement names its load or the store that wrote it.
  CHECK_THROWS_WITH_AS(barrier({in}), doctest::Contains("BARRIER: comes after effects (stores, barriers, ends) and values computed before it, got PLACEHOLDER"), Error);
}

TEST_CASE("the same kernel built twice has the same canonical form despite fresh effect sites") {
  auto build = [] {
    UOp in = placeholder({64}, dtypes::float32, 1), out = placeholder({64}, dtypes::float32, 0);
    UOp l = range(64, 0, AxisType::LOCAL);
    UOp st = out[l].store(in[l].load());
    return sink({"sites"}, {group({wave_priority(1), st, barrier({st}), wave_priority(0)}).end({l})});
  };
  UOp a = build(), b = build();
  CHECK_FALSE(a.same(b));
  CHECK(lower::canonical_allocations(a).same(lower::canonical_allocations(b)));
}

TEST_CASE("the verifier rejects statements that hash-consing would merge") {
  UOp out = placeholder({4}, dtypes::float32, 0);
  UOp st = out[constant(Wide(0))].store(constant(1.0, dtypes::float32));
  // A barrier made by hand without a site.
  UOp bare = UOp::make(Op::BARRIER, dtypes::void_);
  CHECK_THROWS_WITH_AS(verify(sink({"bare"}, {st, bare})), doctest::Contains("has no site id"), Error);
  // The same effect twice in one group runs once, not twice.
  UOp twice = UOp::make(Op::GROUP, dtypes::void_, {st, st});
  CHECK_THROWS_WITH_AS(verify(sink({"twice"}, {twice})), doctest::Contains("twice (sources 0 and 1)"), Error);
}

WEFT_DEVICE_TEST_CASE("float <= and >= are false when either side is NaN") {
  UOp x = placeholder({64}, dtypes::float32, 1), y = placeholder({64}, dtypes::float32, 2);
  UOp out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp a = x[l].load(), b = y[l].load();
  UOp le = where(a <= b, constant(1.0, dtypes::float32), constant(0.0, dtypes::float32));
  UOp ge = where(a >= b, constant(2.0, dtypes::float32), constant(0.0, dtypes::float32));
  UOp k = sink({"nan_compare"}, {out[l].store(le + ge).end({l})});
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto xs = weft::testing::random_floats(64), ys = weft::testing::random_floats(64);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < 64; i += 4) xs[i] = nan;
    for (size_t i = 1; i < 64; i += 4) ys[i] = nan;
    for (size_t i = 2; i < 64; i += 8) ys[i] = xs[i];  // equal: both hold
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 64), put(*dev, dtypes::float32, xs),
                                    put(*dev, dtypes::float32, ys)};
    compiled.launch(*dev, args);
    auto r = get<float>(*dev, args[0]);
    for (size_t i = 0; i < 64; ++i) {
      CAPTURE(i);
      const float want = (xs[i] <= ys[i] ? 1.0f : 0.0f) + (xs[i] >= ys[i] ? 2.0f : 0.0f);
      REQUIRE(r[i] == want);
    }
  }
}
