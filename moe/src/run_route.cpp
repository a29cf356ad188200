// run_route: random router logits, a launch of the route kernel, and the check against the
// double-precision reference (route.h).
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "route_inputs.h"
#include "weft/dsl/float_formats.h"
#include "weft/moe/route.h"
#include "weft/runtime/kernel.h"

namespace weft::moe {
namespace {

// Logits as the device holds them (bytes of `dtype`), and their exact values.
std::vector<uint8_t> logits_bytes(DType dtype, std::vector<double>& values) {
  std::vector<uint8_t> bytes;
  for (double& v : values) {
    const float f = static_cast<float>(v);
    if (dtype == dtypes::bfloat16) {
      const uint16_t b = float_to_bf16(f);
      v = std::isnan(f) ? v : bf16_to_float(b);
      bytes.insert(bytes.end(), {static_cast<uint8_t>(b), static_cast<uint8_t>(b >> 8)});
    } else {
      v = std::isnan(f) ? v : f;
      uint8_t four[4];
      std::memcpy(four, &f, 4);
      bytes.insert(bytes.end(), four, four + 4);
    }
  }
  return bytes;
}

// One of the values whose bits an order key must get right: +-inf, NaN with either sign bit, +-0,
// the dtype's smallest subnormal and largest finite value, each with both signs.
double extreme(DType dtype, std::mt19937_64& gen) {
  const bool bf16 = dtype == dtypes::bfloat16;
  const double tiny = bf16 ? std::ldexp(1.0, -133) : std::ldexp(1.0, -149);
  const double huge = bf16 ? bf16_to_float(0x7f7f) : std::numeric_limits<float>::max();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::array<double, 5> magnitudes{inf, nan, 0.0, tiny, huge};
  const double m = magnitudes[std::uniform_int_distribution<size_t>(0, magnitudes.size() - 1)(gen)];
  return std::uniform_int_distribution<int>(0, 1)(gen) ? -m : m;
}

void draw_inputs(const RouteConfig& c, RouteInputs inputs, std::mt19937_64& gen, std::vector<double>& logits, std::vector<double>& bias) {
  std::uniform_real_distribution<double> uniform(-4.0, 4.0), small(-0.5, 0.5);
  std::uniform_int_distribution<int> level(0, 3), coin(0, 3);
  logits.resize(static_cast<size_t>(c.tokens * c.experts));
  bias.resize(static_cast<size_t>(c.experts));
  for (double& b : bias) b = inputs == RouteInputs::Quantized ? 0.25 * level(gen) / 2 : small(gen);
  for (size_t i = 0; i < logits.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) / c.experts;
    if (inputs == RouteInputs::Quantized) logits[i] = level(gen) - 1.5;  // -1.5 .. 1.5: exact in bfloat16
    else if (inputs == RouteInputs::SignedZeros) logits[i] = std::array<double, 4>{-0.0, 0.0, -1.0, -0.0}[static_cast<size_t>(level(gen))];
    else if (inputs == RouteInputs::Extremes && coin(gen) < 2) logits[i] = extreme(c.logits, gen);
    else logits[i] = uniform(gen);
    if (inputs == RouteInputs::WithNaN && (t % 7 == 3 || coin(gen) == 0)) logits[i] = std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace

RouteData draw_route_inputs(const RouteConfig& c, RouteInputs inputs, uint64_t seed) {
  std::mt19937_64 gen(seed);
  RouteData d;
  draw_inputs(c, inputs, gen, d.logits, d.bias);
  d.logits_bytes = logits_bytes(c.logits, d.logits);
  for (double& b : d.bias) b = static_cast<float>(b);  // the device's float32 bias
  std::vector<float> bias_f(d.bias.begin(), d.bias.end());
  d.bias_bytes.resize(bias_f.size() * 4);
  std::memcpy(d.bias_bytes.data(), bias_f.data(), d.bias_bytes.size());
  return d;
}

gemm::RunResult run_route(rt::Device& device, const RouteConfig& c, uint64_t seed, rt::CompileCache* cache, RouteInputs inputs) {
  c.validate();
  gemm::RunResult r;
  rt::CompiledKernel compiled = rt::CompiledKernel::compile(device, route(c, device.arch()), cache);
  r.compile = compiled.times();
  const RouteData d = draw_route_inputs(c, inputs, seed);
  const size_t choices = static_cast<size_t>(c.tokens * c.top_k);
  const rt::OwnedArray ids(device, rt::upload(device, dtypes::int32, std::vector<uint8_t>(choices * 4, 0xCD), "expert_ids"));
  const rt::OwnedArray w(device, rt::upload(device, dtypes::float32, std::vector<uint8_t>(choices * 4, 0xCD), "weights"));
  const rt::OwnedArray in(device, rt::upload(device, c.logits, d.logits_bytes, "logits"));
  const rt::OwnedArray b(device, rt::upload(device, dtypes::float32, d.bias_bytes, "correction_bias"));
  auto t = std::chrono::steady_clock::now();
  std::vector<rt::DeviceArray> args{ids, w, in};
  if (c.scoring == Scoring::SigmoidGroupedTopK) args.push_back(b);
  compiled.launch(device, args);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  const std::vector<uint8_t> id_bytes = rt::download(device, ids), w_bytes = rt::download(device, w);
  std::vector<int32_t> got_ids(choices);
  std::vector<float> got_w(choices);
  std::memcpy(got_ids.data(), id_bytes.data(), choices * 4);
  std::memcpy(got_w.data(), w_bytes.data(), choices * 4);
  t = std::chrono::steady_clock::now();
  r.check = check_route(c, d.logits, d.bias, got_ids, got_w);
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  return r;
}

}  // namespace weft::moe
