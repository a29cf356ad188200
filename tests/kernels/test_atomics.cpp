// Atomics on global and shared memory (add, min, max, exchange, compare-and-swap; 32 and 64
// bits, float32, packed float16/bfloat16), and inline assembly statements and expressions. Each
// kernel has many threads hit few addresses, so lost updates would show.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/float_formats.h"
#include "weft/emulator/listing.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

template <class T>
rt::DeviceArray filled(rt::Device& dev, DType dt, size_t n, T value) {
  return put(dev, dt, std::vector<T>(n, value));
}

}  // namespace

WEFT_DEVICE_TEST_CASE("integer atomics: a histogram, per-bin min and max, 64-bit sums, on global memory") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t N = 4096, bins = 16;
    UOp in = placeholder({N}, dtypes::int32, 0);
    UOp count = placeholder({bins}, dtypes::int32, 1), lo = placeholder({bins}, dtypes::int32, 2), hi = placeholder({bins}, dtypes::uint32, 3);
    UOp sum = placeholder({bins}, dtypes::int64, 4);
    UOp g = range(N / 256, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL);
    UOp x = in[g * 256 + l].load();
    UOp bin = (x & (bins - 1)).cast(dtypes::index);
    UOp k = sink({"histogram"}, {group({atomic(AtomicOp::Add, count[bin], constant(Wide(1), dtypes::int32)),
                                         atomic(AtomicOp::Min, lo[bin], x),
                                         atomic(AtomicOp::Max, hi[bin], x.cast(dtypes::uint32)),
                                         atomic(AtomicOp::Add, sum[bin], x.cast(dtypes::int64) * 1000003)})
                                       .end({g, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto xs = weft::testing::random_ints(N, -2000000, 2000000);
    const rt::DeviceArray args[] = {put(*dev, dtypes::int32, xs), filled<int32_t>(*dev, dtypes::int32, bins, 0),
                                    filled<int32_t>(*dev, dtypes::int32, bins, INT32_MAX), filled<uint32_t>(*dev, dtypes::uint32, bins, 0),
                                    filled<int64_t>(*dev, dtypes::int64, bins, 0)};
    compiled.launch(*dev, args);
    auto c = get<int32_t>(*dev, args[1]);
    auto mn = get<int32_t>(*dev, args[2]);
    auto mx = get<uint32_t>(*dev, args[3]);
    auto s = get<int64_t>(*dev, args[4]);
    std::vector<int32_t> wc(bins, 0), wmn(bins, INT32_MAX);
    std::vector<uint32_t> wmx(bins, 0);
    std::vector<int64_t> ws(bins, 0);
    for (int32_t v : xs) {
      const size_t b = static_cast<size_t>(v & (bins - 1));
      wc[b]++;
      wmn[b] = std::min(wmn[b], v);
      wmx[b] = std::max(wmx[b], static_cast<uint32_t>(v));
      ws[b] += int64_t{v} * 1000003;
    }
    CHECK(c == wc);
    CHECK(mn == wmn);
    CHECK(mx == wmx);
    CHECK(s == ws);
  }
}

WEFT_DEVICE_TEST_CASE("float atomics: float32 sums and packed float16/bfloat16 adds") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t N = 1024;
    UOp in = placeholder({N}, dtypes::float32, 0), total = placeholder({4}, dtypes::float32, 1);
    UOp halves = placeholder({2}, dtypes::float16, 2), brains = placeholder({2}, dtypes::bfloat16, 3);
    UOp g = range(N / 256, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL);
    UOp x = in[g * 256 + l].load();
    // Small integers: every partial sum is exact in every format, so the order does not matter.
    UOp h = vectorize({x.cast(dtypes::float16), (x * 2.0).cast(dtypes::float16)});
    UOp b = vectorize({x.cast(dtypes::bfloat16), (-x).cast(dtypes::bfloat16)});
    UOp k = sink({"float_atomics"}, {group({atomic(AtomicOp::Add, total[l % 4], x), atomic(AtomicOp::Add, halves[constant(Wide(0))], h),
                                            atomic(AtomicOp::Add, brains[constant(Wide(0))], b)})
                                         .end({g, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    std::vector<float> xs(N);
    for (auto& v : xs) v = static_cast<float>(weft::testing::random_ints(1, -1, 1)[0]);
    const rt::DeviceArray args[] = {put(*dev, dtypes::float32, xs), filled<float>(*dev, dtypes::float32, 4, 0.0f),
                                    filled<uint16_t>(*dev, dtypes::float16, 2, 0), filled<uint16_t>(*dev, dtypes::bfloat16, 2, 0)};
    compiled.launch(*dev, args);
    auto t = get<float>(*dev, args[1]);
    auto hv = get<uint16_t>(*dev, args[2]);
    auto bv = get<uint16_t>(*dev, args[3]);
    double want[4] = {0, 0, 0, 0}, all = 0;
    for (size_t i = 0; i < xs.size(); ++i) want[i % 256 % 4] += xs[i], all += xs[i];
    for (int q = 0; q < 4; ++q) CHECK(t[static_cast<size_t>(q)] == static_cast<float>(want[q]));
    CHECK(half_to_float(hv[0]) == static_cast<float>(all));
    CHECK(half_to_float(hv[1]) == static_cast<float>(2 * all));
    CHECK(bf16_to_float(bv[0]) == static_cast<float>(all));
    CHECK(bf16_to_float(bv[1]) == static_cast<float>(-all));
  }
}

WEFT_DEVICE_TEST_CASE("exchange and compare-and-swap: exactly one thread wins a slot, and it sees the old value") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp owner = placeholder({8}, dtypes::int32, 0), seen = placeholder({512}, dtypes::int32, 1), last = placeholder({1}, dtypes::int32, 2);
    UOp g = range(2, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL);
    UOp id = (g * 256 + l).cast(dtypes::int32);
    UOp old = atomic_compare_swap(owner[l % 8], constant(Wide(-1), dtypes::int32), id);
    UOp swapped = atomic(AtomicOp::Exchange, last[constant(Wide(0))], id);
    UOp k = sink({"claim"}, {group({seen[g * 256 + l].store(old), swapped}).end({g, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    const rt::DeviceArray args[] = {filled<int32_t>(*dev, dtypes::int32, 8, -1), weft::testing::poisoned(*dev, dtypes::int32, 512),
                                    filled<int32_t>(*dev, dtypes::int32, 1, -5)};
    compiled.launch(*dev, args);
    auto own = get<int32_t>(*dev, args[0]);
    auto saw = get<int32_t>(*dev, args[1]);
    auto fin = get<int32_t>(*dev, args[2]);
    for (int slot = 0; slot < 8; ++slot) {
      CAPTURE(slot);
      REQUIRE(own[static_cast<size_t>(slot)] >= 0);
      int winners = 0;
      for (int t = 0; t < 512; ++t) {
        if (t % 8 != slot) continue;
        const int32_t s = saw[static_cast<size_t>(t)];
        if (s == -1) {
          ++winners;
          CHECK(own[static_cast<size_t>(slot)] == t);
        } else {
          CHECK(s == own[static_cast<size_t>(slot)]);  // the losers saw the winner
        }
      }
      CHECK(winners == 1);
    }
    CHECK(fin[0] >= 0);
    CHECK(fin[0] < 512);
  }
}

WEFT_DEVICE_TEST_CASE("shared-memory atomics: per-workgroup counters, then one write per workgroup") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({4, 256}, dtypes::int32, 0), out = placeholder({4, 2}, dtypes::int32, 1);
    UOp g = range(4, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL);
    UOp counters = alloc_shared({2}, dtypes::int32);
    UOp zero = constant(Wide(0)), one = constant(Wide(1));
    // One work-item initializes the counters (every one storing the same values would be a
    // write-write race between waves, which the emulator's hazard mode reports).
    UOp init = when(l < 1, {counters[zero].store(constant(Wide(0), dtypes::int32)), counters[one].store(constant(Wide(INT32_MIN), dtypes::int32))});
    UOp x = in[{g, l}].load();
    UOp ready = counters.after({init});
    UOp bump = group({atomic(AtomicOp::Add, ready[zero], (x > 0).cast(dtypes::int32), Scope::Workgroup),
                      atomic(AtomicOp::Max, ready[one], x, Scope::Workgroup)});
    UOp done = counters.after({bump});
    UOp k = sink({"lds_atomics"}, {when(l < 2, {out[{g, l}].store(done[l].load())}).end({g, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto xs = weft::testing::random_ints(1024, -100000, 100000);
    const rt::DeviceArray args[] = {put(*dev, dtypes::int32, xs), weft::testing::poisoned(*dev, dtypes::int32, 8)};
    compiled.launch(*dev, args);
    auto y = get<int32_t>(*dev, args[1]);
    for (size_t w = 0; w < 4; ++w) {
      int positive = 0, biggest = INT32_MIN;
      for (size_t q = 0; q < 256; ++q) positive += xs[w * 256 + q] > 0, biggest = std::max(biggest, xs[w * 256 + q]);
      CHECK(y[w * 2] == positive);
      CHECK(y[w * 2 + 1] == biggest);
    }
  }
}

TEST_CASE("atomics check their operands") {
  UOp buf = placeholder({4}, dtypes::float32, 0);
  UOp i = constant(Wide(0));
  CHECK_THROWS_WITH_AS(atomic(AtomicOp::Min, buf[i], constant(1.0, dtypes::float32)), doctest::Contains("is not defined for float32"), Error);
  CHECK_THROWS_WITH_AS(atomic(AtomicOp::CompareSwap, buf[i], constant(1.0, dtypes::float32)), doctest::Contains("takes a comparand"), Error);
  UOp ints = placeholder({4}, dtypes::int32, 1);
  CHECK_THROWS_WITH_AS(atomic(AtomicOp::Add, ints[i], constant(Wide(1), dtypes::int64)), doctest::Contains("of int64 into a buffer of int32"), Error);
  UOp reg = placeholder({4}, dtypes::int32, 7, AddrSpace::REG);
  UOp k = sink({"reg_atomic"}, {atomic(AtomicOp::Add, reg[i], constant(Wide(1), dtypes::int32))});
  CHECK_THROWS_WITH_AS(lower::lower(k), doctest::Contains("works on a GLOBAL or LOCAL buffer"), Error);
}

WEFT_DEVICE_TEST_CASE("inline assembly: a statement and an expression with typed operands") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const bool nvidia = target.starts_with("cuda");
    UOp a = placeholder({64}, dtypes::int32, 1), out = placeholder({64}, dtypes::int32, 0);
    UOp l = range(64, 0, AxisType::LOCAL);
    UOp x = a[l].load();
    // x * 3 + 7, computed by the target's own instruction.
    UOp three = constant(Wide(3), dtypes::int32), seven = constant(Wide(7), dtypes::int32);
    UOp mad = customi(nvidia ? "mad.lo.s32 {out}, {0}, {1}, {2};" : "v_mad_u32_u24 {out}, {0}, {1}, {2}", dtypes::int32, {x, three, seven});
    UOp st = out[l].store(mad);
    UOp k = sink({"inline_asm"}, {group({custom(nvidia ? "// a statement" : "s_nop 3"), st}).end({l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    if (!nvidia) {
      std::ostringstream listing;
      emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
      CHECK(listing.str().find("s_nop 3") != std::string::npos);
      CHECK(listing.str().find("v_mad_u32_u24") != std::string::npos);
    }
    auto xs = weft::testing::random_ints(64, 0, 1000);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 64), put(*dev, dtypes::int32, xs)};
    compiled.launch(*dev, args);
    auto y = get<int32_t>(*dev, args[0]);
    for (size_t q = 0; q < 64; ++q) CHECK(y[q] == xs[q] * 3 + 7);
  }
  UOp v = constant(Wide(1), dtypes::int32);
  UOp bad = customi("v_mov_b32 {out}, {3}", dtypes::int32, {v});
  UOp out = placeholder({1}, dtypes::int32, 0);
  auto targets = weft::testing::emulators();
  if (!targets.empty()) {
    auto dev = rt::open_device(targets[0]);
    CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*dev, sink({"bad_asm"}, {out[constant(Wide(0))].store(bad)})),
                         doctest::Contains("names an operand it does not have"), Error);
    // Text LLVM cannot assemble is an error, not an abort.
    UOp bogus = customi("v_no_such_instruction {out}, {0}", dtypes::int32, {v});
    CHECK_THROWS_WITH_AS(rt::CompiledKernel::compile(*dev, sink({"bogus_asm"}, {out[constant(Wide(0))].store(bogus)})),
                         doctest::Contains("LLVM could not compile kernel bogus_asm"), Error);
  }
}
