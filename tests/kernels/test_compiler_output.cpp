// Ordinary kernels whose compiled code the emulator once ran wrongly or not at all: three-input
// bit logic (gfx950's v_bitop3_b32), byte compares (SDWA compares into an SGPR pair), scalar
// loads with a register and an immediate offset, 16-bit compares. Each against the host, on
// every device; where it matters, the listing shows the instruction is really there.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

#include "kernel_harness.h"
#include "listing_text.h"
#include "weft/dsl/alu.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/float_formats.h"
#include "weft/emulator/listing.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

using weft::testing::has_line;
using weft::testing::listing_of;

WEFT_DEVICE_TEST_CASE("three-input bit functions (v_bitop3 on gfx950) match the host") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({3, 256}, dtypes::int32, 1), out = placeholder({5, 256}, dtypes::int32, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp a = in[{constant(Wide(0)), l}].load(), b = in[{constant(Wide(1)), l}].load(), c = in[{constant(Wide(2)), l}].load();
    std::vector<UOp> f{(a & b) | (~a & c), a ^ b ^ c, (a | b) & c, (a & b) | (a & c) | (b & c), ~(a | (b ^ c))};
    std::vector<UOp> stores;
    for (size_t i = 0; i < f.size(); ++i) stores.push_back(out[{constant(Wide(static_cast<int64_t>(i))), l}].store(f[i]));
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"bit_logic"}, {group(stores).end({l})}));
    if (target == "emu:gfx950") {
      std::ostringstream listing;
      emu::write_listing(emu::CodeObject::load(compiled.code_object()), listing);
      CHECK(listing.str().find("v_bitop3_b32") != std::string::npos);
    }
    auto x = weft::testing::random_ints(3 * 256, INT32_MIN, INT32_MAX);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 5 * 256), put(*dev, dtypes::int32, x)};
    compiled.launch(*dev, args);
    auto y = get<int32_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      const int32_t A = x[q], B = x[256 + q], C = x[512 + q];
      const int32_t want[] = {(A & B) | (~A & C), A ^ B ^ C, (A | B) & C, (A & B) | (A & C) | (B & C), ~(A | (B ^ C))};
      for (size_t i = 0; i < 5; ++i) {
        CAPTURE(q);
        CAPTURE(i);
        REQUIRE(y[i * 256 + q] == want[i]);
      }
    }
  }
}


WEFT_DEVICE_TEST_CASE("byte compares (SDWA compares with an SGPR-pair destination) give every lane its own answer") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp a = placeholder({256}, dtypes::uint8, 1), b = placeholder({256}, dtypes::uint8, 2), out = placeholder({256}, dtypes::uint8, 0);
    // Four bytes per thread, loaded as one dword: the compares select bytes (SDWA).
    UOp l = range(64, 0, AxisType::LOCAL), j = range(4, 1, AxisType::UPCAST);
    UOp at = l * 4 + j;
    UOp x = a[at].load(), y = b[at].load();
    UOp r = where(x < y, x, y + x) ^ where(x.eq(y), constant(Wide(7), dtypes::uint8), constant(Wide(0), dtypes::uint8));
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"byte_compare"}, {out[at].store(r).end({l, j})}));
    if (target.starts_with("emu:")) CHECK(has_line(listing_of(compiled), {"v_cmp_", "_sdwa s["}));
    auto xs = weft::testing::random_ints(512, 0, 255);
    std::vector<uint8_t> av(256), bv(256);
    for (size_t q = 0; q < 256; ++q) av[q] = static_cast<uint8_t>(xs[q]), bv[q] = static_cast<uint8_t>(q % 5 == 0 ? xs[q] : xs[256 + q]);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::uint8, 256), put(*dev, dtypes::uint8, av), put(*dev, dtypes::uint8, bv)};
    compiled.launch(*dev, args);
    auto out_v = get<uint8_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      const uint8_t X = av[q], Y = bv[q];
      const uint8_t want = static_cast<uint8_t>((X < Y ? X : static_cast<uint8_t>(Y + X)) ^ (X == Y ? 7 : 0));
      CAPTURE(q);
      REQUIRE(out_v[q] == want);
    }
  }
}

WEFT_DEVICE_TEST_CASE("scalar loads with a register and an immediate offset: in[r % 2] summed over a run-time trip count") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp n = variable("n", 1, 1000);
    UOp in = placeholder({2}, dtypes::int32, 1), out = placeholder({1}, dtypes::int32, 0);
    UOp r = range(n, 0, AxisType::REDUCE);
    UOp k = sink({"uniform_loads"}, {out[constant(Wide(0))].store(in[r % 2].load().reduce(Op::ADD, {r}))});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    for (int64_t trips : {1, 4, 7, 1000}) {
      CAPTURE(trips);
      auto v = weft::testing::random_ints(2, -100, 100);
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 1), put(*dev, dtypes::int32, v)};
      compiled.launch(*dev, args, {{"n", trips}});
      CHECK(get<int32_t>(*dev, args[0])[0] == v[0] * ((trips + 1) / 2) + v[1] * (trips / 2));
    }
    // The form that once lost its register offset: s_load_dword sN, s[a:b], sM offset:...
    if (target.starts_with("emu:")) CHECK(has_line(listing_of(compiled), {"s_load_dword s", "], s"}));
  }
}

WEFT_DEVICE_TEST_CASE("loop-invariant values hoisted before inner loops: reused by two of them, run where they run no iteration") {
  // out[i * 64 + l] = sum_j (q + j) + sum_k q * k with q = (i * 1000 + l) / d, j and k < inner:
  // the linearizer writes q (a division by d >= 1) in i's loop, before both inner loops, which
  // may run no iteration.
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp outer = variable("outer", 1, 8), inner = variable("inner", 0, 16), d = variable("d", 1, 1000);
    UOp out = placeholder({8 * 64}, dtypes::int32, 0);
    UOp l = range(64, 0, AxisType::LOCAL), i = range(outer, 1, AxisType::LOOP), j = range(inner, 2, AxisType::REDUCE),
        k = range(inner, 3, AxisType::REDUCE);
    UOp q = ((i * 1000 + l) / d.cast(dtypes::index)).cast(dtypes::int32);
    UOp sums = (q + j.cast(dtypes::int32)).reduce(Op::ADD, {j}) + (q * k.cast(dtypes::int32)).reduce(Op::ADD, {k});
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"hoisted"}, {out[i * 64 + l].store(sums).end({i, l})}));
    const auto divisors = weft::testing::random_ints(4, 1, 1000);
    for (int64_t trips : {0, 1, 5, 16}) {
      for (int32_t divisor : divisors) {
        CAPTURE(trips);
        CAPTURE(divisor);
        const int64_t rows = 1 + trips % 8;
        const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::int32, 8 * 64)};
        compiled.launch(*dev, args, {{"outer", rows}, {"inner", trips}, {"d", int64_t{divisor}}});
        const auto got = get<int32_t>(*dev, args[0]);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t lane = 0; lane < 64; ++lane) {
            const int64_t qv = (r * 1000 + lane) / divisor, pairs = trips * (trips - 1) / 2;
            REQUIRE(got[r * 64 + lane] == qv * trips + pairs + qv * pairs);
          }
      }
    }
  }
}

WEFT_DEVICE_TEST_CASE("16-bit compares (v_cmp_*_u16/i16/f16) in a float16 where()") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp a = placeholder({256}, dtypes::float16, 1), b = placeholder({256}, dtypes::int16, 2), out = placeholder({256}, dtypes::float16, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp x = a[l].load(), i = b[l].load();
    UOp zero = constant(0.0, dtypes::float16);
    UOp r = where(x < zero, -x, x) + where(i > constant(Wide(3), dtypes::int16), constant(1.0, dtypes::float16), zero);
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"half_where"}, {out[l].store(r).end({l})}));
    auto fs = weft::testing::random_floats(256, -4.0f, 4.0f);
    auto is = weft::testing::random_ints(256, -8, 8);
    std::vector<uint16_t> av(256);
    std::vector<int16_t> bv(256);
    for (size_t q = 0; q < 256; ++q) av[q] = float_to_half(fs[q]), bv[q] = static_cast<int16_t>(is[q]);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float16, 256), put(*dev, dtypes::float16, av), put(*dev, dtypes::int16, bv)};
    compiled.launch(*dev, args);
    auto y = get<uint16_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      const float X = half_to_float(av[q]);
      const uint16_t want = float_to_half(std::fabs(X) + (bv[q] > 3 ? 1.0f : 0.0f));
      CAPTURE(q);
      REQUIRE(y[q] == want);
    }
  }
}

WEFT_DEVICE_TEST_CASE("24-bit multiplies: the high half of a 48-bit product (v_mul_hi_u32_u24)") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp a = placeholder({256}, dtypes::uint32, 1), b = placeholder({256}, dtypes::uint32, 2), out = placeholder({512}, dtypes::uint32, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp mask = constant(Wide(0xffffff), dtypes::uint32);
    UOp x = (a[l].load() & mask).cast(dtypes::uint64), y = (b[l].load() & mask).cast(dtypes::uint64);
    UOp p = x * y;
    UOp k = sink({"mul24"}, {group({out[l].store((p >> 32).cast(dtypes::uint32)), out[l + 256].store(p.cast(dtypes::uint32))}).end({l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    if (target.starts_with("emu:")) CHECK(has_line(listing_of(compiled), {"v_mul_hi_u32_u24"}));
    auto xs = weft::testing::random_ints(512, INT32_MIN, INT32_MAX);
    std::vector<uint32_t> av(256), bv(256);
    for (size_t q = 0; q < 256; ++q) av[q] = static_cast<uint32_t>(xs[q]), bv[q] = static_cast<uint32_t>(xs[256 + q]);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::uint32, 512), put(*dev, dtypes::uint32, av), put(*dev, dtypes::uint32, bv)};
    compiled.launch(*dev, args);
    auto r = get<uint32_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      const uint64_t prod = uint64_t{av[q] & 0xffffff} * (bv[q] & 0xffffff);
      CAPTURE(q);
      REQUIRE(r[q] == static_cast<uint32_t>(prod >> 32));
      REQUIRE(r[q + 256] == static_cast<uint32_t>(prod));
    }
  }
}

WEFT_DEVICE_TEST_CASE("float32 to bfloat16 stores round to nearest even, masked or not") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp n = variable("n", 1, 256);
    UOp in = placeholder({256}, dtypes::float32, 1), out = placeholder({256}, dtypes::bfloat16, 0);
    UOp l = range(256, 0, AxisType::LOCAL);
    UOp v = in[l].load().cast(dtypes::bfloat16);
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"to_bf16"}, {out[l].store(v, l < n.cast(dtypes::index)).end({l})}));
    auto x = weft::testing::random_floats(256, -4.0f, 4.0f);
    const int64_t count = 200;
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::bfloat16, 256), put(*dev, dtypes::float32, x)};
    compiled.launch(*dev, args, {{"n", count}});
    auto y = get<uint16_t>(*dev, args[0]);
    for (size_t q = 0; q < 256; ++q) {
      CAPTURE(q);
      CAPTURE(x[q]);
      const uint16_t want = q < static_cast<size_t>(count) ? encode_float(*dtypes::bfloat16.float_format(), x[q]) : 0xCDCD;
      REQUIRE(y[q] == want);
    }
  }
}

WEFT_DEVICE_TEST_CASE("popcount of uint8, uint16, uint32 and uint64 values is the host's: v_bcnt per lane, s_bcnt1 for a uniform value on CDNA") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    constexpr int64_t n = 256;
    const DType types[] = {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64};
    UOp l = range(n, 0, AxisType::LOCAL), three = constant(Wide(3));
    std::vector<UOp> stores, in;
    for (int64_t t = 0; t < 4; ++t) {
      in.push_back(placeholder({n}, types[t], 5 + t));
      stores.push_back(placeholder({n}, types[t], t)[l].store(popcount(in.back()[l].load())));
    }
    // Element 3 (random) of the uint32 and uint64 inputs, the same in every lane: a scalar count.
    const UOp uniform = popcount(in[2][three].load()) + popcount(in[3][three].load()).cast(dtypes::uint32);
    stores.push_back(placeholder({n}, dtypes::uint32, 4)[l].store(uniform));
    auto compiled = rt::CompiledKernel::compile(*dev, sink({"popcounts"}, {group(stores).end({l})}));
    if (target.starts_with("emu:")) {
      const std::string listing = listing_of(compiled);
      CHECK(listing.find("v_bcnt_u32_b32") != std::string::npos);
      CHECK(listing.find("s_bcnt1_i32_b64") != std::string::npos);
    }
    // Random values, and the edge values (no bit, every bit, only the high bit) in the first lanes.
    const auto words = weft::testing::random_ints(5 * n, INT32_MIN, INT32_MAX);
    std::vector<std::vector<uint64_t>> x(4, std::vector<uint64_t>(n));
    for (size_t t = 0; t < 4; ++t) {
      const int bits = types[t].bits();
      const uint64_t all = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      for (size_t i = 0; i < static_cast<size_t>(n); ++i)
        x[t][i] = (uint64_t{static_cast<uint32_t>(words[t * n + i])} << 32 | static_cast<uint32_t>(words[4 * n + i])) & all;
      x[t][0] = 0;
      x[t][1] = all;
      x[t][2] = uint64_t{1} << (bits - 1);
    }
    std::vector<rt::DeviceArray> args;
    for (size_t t = 0; t < 4; ++t) args.push_back(weft::testing::poisoned(*dev, types[t], n));
    args.push_back(weft::testing::poisoned(*dev, dtypes::uint32, n));
    const auto narrow = [&](size_t t) {  // x[t] at its width, as bytes
      std::vector<uint8_t> bytes(static_cast<size_t>(n * types[t].itemsize()));
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) std::memcpy(&bytes[i * types[t].itemsize()], &x[t][i], types[t].itemsize());
      return bytes;
    };
    for (size_t t = 0; t < 4; ++t) args.push_back(rt::upload(*dev, types[t], narrow(t), "input"));
    compiled.launch(*dev, args);
    for (size_t t = 0; t < 4; ++t) {
      const std::vector<uint8_t> y = rt::download(*dev, args[t]);
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        uint64_t got = 0;
        std::memcpy(&got, &y[i * types[t].itemsize()], types[t].itemsize());
        CAPTURE(t);
        CAPTURE(i);
        REQUIRE(got == static_cast<uint64_t>(std::popcount(x[t][i])));
      }
    }
    const auto u = get<uint32_t>(*dev, args[4]);
    const uint32_t want = static_cast<uint32_t>(std::popcount(x[2][3]) + std::popcount(x[3][3]));
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) REQUIRE(u[i] == want);
  }
}

TEST_CASE("popcount: a signed or float operand is an error naming POPCOUNT, and constants fold") {
  CHECK_THROWS_WITH_AS(popcount(constant(Wide(3), dtypes::int32)), doctest::Contains("POPCOUNT"), Error);
  CHECK_THROWS_WITH_AS(popcount(constant(1.0, dtypes::float32)), doctest::Contains("POPCOUNT"), Error);
  CHECK(*exec_int(Op::POPCOUNT, dtypes::uint64, std::vector<Wide>{Wide(~uint64_t{0})}) == 64);
  CHECK(*exec_int(Op::POPCOUNT, dtypes::uint8, std::vector<Wide>{Wide(0x1ff)}) == 8);  // wraps to the width first
  CHECK_FALSE(exec_int(Op::POPCOUNT, dtypes::int32, std::vector<Wide>{Wide(-1)}));
  const UOp x = popcount(placeholder({4}, dtypes::uint32, 0)[constant(Wide(0))].load());
  CHECK(x.vmin() == 0);
  CHECK(x.vmax() == 32);
}
