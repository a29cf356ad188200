// Conditional execution: masked loads (with a fill value) and masked stores, `when` regions over
// effects, and ragged edges handled by them. Outputs are poisoned, so a store that should not
// happen shows; inputs are allocated at their exact size, so a load that should not happen is an
// out-of-bounds error on the emulator.
#include <doctest/doctest.h>

#include <cmath>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

bool poison(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits == 0xCDCDCDCDu;
}

}  // namespace

WEFT_DEVICE_TEST_CASE("masked loads read the fill value and masked stores skip, where the mask is false") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    UOp in = placeholder({256}, dtypes::float32, 1), out = placeholder({256}, dtypes::float32, 0);
    UOp g = range(4, 0, AxisType::GLOBAL), l = range(64, 1, AxisType::LOCAL);
    UOp i = g * 64 + l;
    UOp odd = (l % 2).eq(1.0);
    UOp third = (l % 3).eq(0.0);
    UOp v = in[i].load(odd, constant(-7.5, dtypes::float32));
    UOp k = sink({"masked"}, {out[i].store(v * 2.0, !third).end({g, l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(256);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 256);
    for (size_t q = 0; q < 256; ++q) {
      CAPTURE(q);
      const size_t lane = q % 64;
      if (lane % 3 == 0) CHECK(poison(y[q]));
      else CHECK(y[q] == (lane % 2 == 1 ? x[q] : -7.5f) * 2.0f);
    }
  }
}

WEFT_DEVICE_TEST_CASE("when(): a ragged edge with a run-time size touches nothing past the end") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (int64_t n : {1, 63, 64, 200, 255}) {
      CAPTURE(n);
      UOp size = variable("n", 1, 256);
      UOp in = placeholder(std::vector<UOp>{size}, dtypes::float32, 1), out = placeholder(std::vector<UOp>{size}, dtypes::float32, 0);
      UOp g = range(4, 0, AxisType::GLOBAL), l = range(64, 1, AxisType::LOCAL);
      UOp i = g * 64 + l;
      // The load sits inside the region: where i >= n it must not be made (the input holds
      // exactly n floats, and the emulator checks every access).
      UOp k = sink({"ragged"}, {when(i < size.cast(dtypes::index), {out[i].store(sqrt(in[i].load() * in[i].load()) + 1.0)}).end({g, l})});
      auto compiled = rt::CompiledKernel::compile(*dev, k);
      auto x = weft::testing::random_floats(static_cast<size_t>(n));
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, static_cast<size_t>(n)), put(*dev, dtypes::float32, x)};
      compiled.launch(*dev, args, {{"n", n}});
      auto y = get<float>(*dev, args[0]);
      for (size_t q = 0; q < static_cast<size_t>(n); ++q) REQUIRE(y[q] == std::sqrt(x[q] * x[q]) + 1.0f);
    }
  }
}

WEFT_DEVICE_TEST_CASE("when(): nested regions, a loop inside, and a gather whose index load is guarded too") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    // out[l][j] = table[idx[l]] * (j + 1) for l < 40 and even l, j < 4.
    UOp idx = placeholder({40}, dtypes::int32, 1), table = placeholder({16}, dtypes::float32, 2);
    UOp out = placeholder({64, 4}, dtypes::float32, 0);
    UOp l = range(64, 0, AxisType::LOCAL), j = range(4, 1, AxisType::LOOP);
    UOp picked = table[idx[l].load()].load();
    UOp body = out[{l, j}].store(picked * (j + 1).cast(dtypes::float32)).end({j});
    UOp k = sink({"nested"}, {when(l < 40, {when((l % 2).eq(0.0), {body})}).end({l})});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto ix = weft::testing::random_ints(40, 0, 15);
    auto tab = weft::testing::random_floats(16);
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 256), put(*dev, dtypes::int32, ix),
                                    put(*dev, dtypes::float32, tab)};
    compiled.launch(*dev, args);
    auto y = get<float>(*dev, args[0]);
    for (size_t q = 0; q < 64; ++q)
      for (size_t c = 0; c < 4; ++c) {
        CAPTURE(q);
        CAPTURE(c);
        if (q < 40 && q % 2 == 0) CHECK(y[q * 4 + c] == tab[static_cast<size_t>(ix[q])] * static_cast<float>(c + 1));
        else CHECK(poison(y[q * 4 + c]));
      }
  }
}

TEST_CASE("when(): effects not every thread would reach are an error naming them") {
  UOp out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  UOp st = out[l].store(constant(1.0, dtypes::float32));
  UOp k = sink({"bad_when"}, {when(l < 32, {st, barrier({st})}).end({l})});
  CHECK_THROWS_WITH_AS(lower::lower(k), doctest::Contains("BARRIER"), Error);
  CHECK_THROWS_WITH_AS(lower::lower(k), doctest::Contains("not every thread would reach it"), Error);
  CHECK_THROWS_WITH_AS(when(l, {st}), doctest::Contains("the condition is a bool"), Error);
  UOp in = placeholder({64}, dtypes::float32, 1);
  UOp shuffled = sink({"when_shuffle"}, {when(l < 32, {out[l].store(shuffle_xor(in[l].load(), 1, 64))}).end({l})});
  CHECK_THROWS_WITH_AS(lower::lower(shuffled), doctest::Contains("a lane operation needs every lane of the wave"), Error);
  UOp m = range(64, 1, AxisType::LOCAL);
  UOp summed = sink({"when_sum"}, {when(l < 32, {out[l].store(in[m].load().reduce(Op::ADD, {m}))}).end({l})});
  CHECK_THROWS_WITH_AS(lower::lower(summed), doctest::Contains("a reduction across threads needs every thread"), Error);
  CHECK_THROWS_WITH_AS(out[l].load(l < 3, constant(1.0, dtypes::float16)), doctest::Contains("fill value of dtype float16"), Error);
}

WEFT_DEVICE_TEST_CASE("pad_to: a ragged tensor of run-time size seen as whole tiles reads zeros past its end") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (int64_t m : {1, 50, 128}) {
      CAPTURE(m);
      UOp rows = variable("m", 1, 128);
      // a: m x 16, allocated at its exact size; out: 128 x 16, every element written.
      UOp a = placeholder(std::vector<UOp>{rows, constant(Wide(16))}, dtypes::float32, 1);
      UOp out = placeholder({128, 16}, dtypes::float32, 0);
      UOp tile = a.pad_to({constant(Wide(128)), constant(Wide(16))});
      CHECK(tile.static_shape() == std::vector<int64_t>{128, 16});
      UOp r = range(128, 0, AxisType::LOCAL), c = range(16, 1, AxisType::LOOP);
      UOp k = sink({"pad_to"}, {out[{r, c}].store(tile[{r, c}].load() + 1.0).end({r, c})});
      auto compiled = rt::CompiledKernel::compile(*dev, k);
      auto x = weft::testing::random_floats(static_cast<size_t>(m * 16));
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::float32, 128 * 16), put(*dev, dtypes::float32, x)};
      compiled.launch(*dev, args, {{"m", m}});
      auto y = get<float>(*dev, args[0]);
      for (size_t q = 0; q < 128 * 16; ++q) {
        CAPTURE(q);
        REQUIRE(y[q] == (q < static_cast<size_t>(m * 16) ? x[q] + 1.0f : 1.0f));
      }
    }
  }
  UOp a = placeholder({4, 4}, dtypes::float32, 0);
  CHECK_THROWS_WITH_AS(a.pad_to({constant(Wide(8))}), doctest::Contains("1 sizes for the 2 axes"), Error);
}
