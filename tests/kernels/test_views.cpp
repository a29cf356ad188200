// The seed's TestCustomKernelInput cases: add-one through views of a 32-element buffer, lowered,
// compiled for each target and run on the emulator.
#include <doctest/doctest.h>

#include <functional>

#include "kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/runtime/device.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;

namespace {

// out[idx] = view(in)[idx] + 1 over the view's shape: the first axis GLOBAL, the rest LOOP.
UOp add_one_kernel(const std::function<UOp(const UOp&)>& view, std::vector<int64_t>* out_shape) {
  UOp in = placeholder({32}, dtypes::float32, 1);
  UOp v = view(in);
  *out_shape = v.static_shape();
  UOp out = placeholder(*out_shape, dtypes::float32, 0);
  std::vector<UOp> idx;
  for (size_t d = 0; d < out_shape->size(); ++d)
    idx.push_back(range((*out_shape)[d], static_cast<int64_t>(d), d == 0 ? AxisType::GLOBAL : AxisType::LOOP));
  return sink({"add_one_view"}, {out.index(idx).store(v.index(idx).load() + 1.0).end(idx)});
}

// `where(i)`: the input element (or -1 for padding) that output element i (row-major) reads.
void check_view(const std::function<UOp(const UOp&)>& view, const std::function<int(int)>& where) {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    std::vector<int64_t> shape;
    UOp k = add_one_kernel(view, &shape);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    auto x = weft::testing::random_floats(32);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      const int src = where(i);
      const float expect = src < 0 ? 1.0f : x[static_cast<size_t>(src)] + 1.0f;
      CHECK(y[static_cast<size_t>(i)] == expect);  // one rounding in float32 on both sides: exact
    }
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("add one through views: reshape, permute, double permute") {
  check_view([](const UOp& x) { return x.reshape({16, 2}); }, [](int i) { return i; });
  check_view([](const UOp& x) { return x.reshape({4, 8}).permute({1, 0}); }, [](int i) { return (i % 4) * 8 + i / 4; });
  check_view([](const UOp& x) { return x.reshape({4, 8}).permute({1, 0}).permute({1, 0}); }, [](int i) { return i; });
}

WEFT_DEVICE_TEST_CASE("add one through views: shrink, offset shrink, 2-D shrink") {
  check_view([](const UOp& x) { return x.shrink({{0, 4}}); }, [](int i) { return i; });
  check_view([](const UOp& x) { return x.shrink({{4, 8}}); }, [](int i) { return i + 4; });
  check_view([](const UOp& x) { return x.reshape({4, 8}).shrink({{0, 4}, {2, 6}}); }, [](int i) { return (i / 4) * 8 + 2 + i % 4; });
}

WEFT_DEVICE_TEST_CASE("add one through views: pad, flip, expand") {
  check_view([](const UOp& x) { return x.shrink({{0, 4}}).pad({{0, 4}}); }, [](int i) { return i < 4 ? i : -1; });
  check_view([](const UOp& x) { return x.flip({0}); }, [](int i) { return 31 - i; });
  check_view([](const UOp& x) { return x.reshape({16, 2}).shrink({{0, 16}, {0, 1}}).expand({16, 2}); }, [](int i) { return (i / 2) * 2; });
}
