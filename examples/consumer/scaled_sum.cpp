// A kernel written outside weft's tree: y[i] = alpha * x[i] + y0[i] over a run-time length n,
// one element per lane, the ragged last block masked. Built against the installed package,
// compiled for the device named on the command line (emu:gfx950 by default), run, and checked
// against a double-precision host reference. Prints the seed; exit status 0 when it matches.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "weft/dsl/builder.h"
#include "weft/runtime/device.h"
#include "weft/runtime/kernel.h"
#include "weft/version.h"

using namespace weft;

namespace {

constexpr int64_t kLanes = 64;

UOp scaled_sum_kernel(float alpha) {
  const UOp n = variable("n", 1, 1 << 24);
  const UOp y = placeholder(std::vector<UOp>{n}, dtypes::float32, 0);
  const UOp x = placeholder(std::vector<UOp>{n}, dtypes::float32, 1);
  const UOp y0 = placeholder(std::vector<UOp>{n}, dtypes::float32, 2);
  const UOp block = range((n.cast(dtypes::index) + (kLanes - 1)) / kLanes, 0, AxisType::GLOBAL);
  const UOp lane = range(kLanes, 1, AxisType::LOCAL);
  const UOp i = block * kLanes + lane;
  const UOp inside = i < n.cast(dtypes::index);
  const UOp value = x[i].load(inside, constant(0.0, dtypes::float32)) * alpha + y0[i].load(inside, constant(0.0, dtypes::float32));
  return sink({"scaled_sum"}, {y[i].store(value, inside).end({block, lane})});
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device_name = argc > 1 ? argv[1] : "emu:gfx950";
  const int64_t n = 1000;  // not a multiple of the block: the last block is masked
  const float alpha = 1.5f;
  const uint64_t seed = std::random_device{}();
  std::printf("weft %s, device %s, n = %lld, seed %llu\n", WEFT_VERSION, device_name.c_str(), static_cast<long long>(n),
              static_cast<unsigned long long>(seed));
  try {
    auto device = rt::open_device(device_name);
    const rt::CompiledKernel kernel = rt::CompiledKernel::compile(*device, scaled_sum_kernel(alpha));
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    std::vector<float> x(n), y0(n);
    for (auto& v : x) v = dist(gen);
    for (auto& v : y0) v = dist(gen);
    const rt::OwnedArray dx(*device, rt::upload(*device, dtypes::float32, bytes_of(x), "x"));
    const rt::OwnedArray dy0(*device, rt::upload(*device, dtypes::float32, bytes_of(y0), "y0"));
    const rt::OwnedArray dy(*device, rt::upload(*device, dtypes::float32, std::vector<uint8_t>(n * sizeof(float), 0xCD), "y"));
    const rt::DeviceArray args[] = {dy, dx, dy0};
    kernel.launch(*device, args, {{"n", n}});
    device->synchronize();
    const std::vector<uint8_t> out = rt::download(*device, dy);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      float got;
      std::memcpy(&got, out.data() + i * sizeof(float), sizeof(float));
      // One fused or two rounded float operations: each rounding errs by half an ulp of its
      // result, at most |alpha * x| + |y0| (cancellation can make the sum itself far smaller).
      const double want = static_cast<double>(alpha) * x[i] + y0[i];
      const double scale = std::fabs(static_cast<double>(alpha) * x[i]) + std::fabs(y0[i]);
      if (!(std::fabs(got - want) <= std::ldexp(scale, -23))) {
        if (wrong++ < 5) std::printf("  y[%lld] = %.9g, want %.9g\n", static_cast<long long>(i), got, want);
      }
    }
    std::printf("%s: %lld of %lld elements wrong\n", wrong ? "FAILED" : "ok", static_cast<long long>(wrong), static_cast<long long>(n));
    return wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scaled_sum: %s\n", e.what());
    return 1;
  }
}
