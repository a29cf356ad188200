// The permute kernels' host entry points: random inputs from a seed, poisoned outputs, a launch
// on the device, and a check against a reference computed here in double precision.
#include <chrono>
#include <cmath>

#include "host_rows.h"
#include "launch_util.h"
#include "weft/dsl/float_formats.h"
#include "weft/moe/permute.h"

namespace weft::moe {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The plan's buffers on the device.
struct DevicePlan {
  rt::OwnedArray dest_row, weights, row_token, row_weight;
  DevicePlan(rt::Device& dev, const RoutingPlan& p)
      : dest_row(dev, rt::upload(dev, dtypes::int32, as_bytes(p.dest_row), "dest_row")),
        weights(dev, rt::upload(dev, dtypes::float32, as_bytes(p.weights), "weights")),
        row_token(dev, rt::upload(dev, dtypes::int32, as_bytes(p.row_token), "row_token")),
        row_weight(dev, rt::upload(dev, dtypes::float32, as_bytes(p.row_weight), "row_weight")) {}
};

// Half an ulp of the output's rounding, relative (bfloat16 keeps 8 significant bits).
double rounding(DType dtype) { return dtype == dtypes::bfloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24); }

// A sum of `terms` fp32 products and additions: each step may lose half an ulp of the running
// magnitude, bounded by the sum of the terms' magnitudes.
double fp32_sum_error(int64_t terms, double magnitude) { return static_cast<double>(terms + 1) * std::ldexp(1.0, -24) * magnitude + 1e-30; }

}  // namespace

gemm::RunResult run_dispatch(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed, rt::CompileCache* cache,
                             const PermuteOptions& options) {
  shape.validate();
  std::mt19937_64 gen(seed);
  const RoutingPlan plan = random_plan(shape, gen, options.skew);
  const int64_t R = shape.max_rows();
  std::vector<double> x;
  const auto x_bytes = random_values(dtype, static_cast<size_t>(shape.tokens * d), gen, x);
  const rt::OwnedArray xd(device, rt::upload(device, dtype, x_bytes, "X"));
  const DevicePlan dp(device, plan);
  gemm::RunResult r;
  auto t = Clock::now();
  if (!options.fp8) {
    const rt::OwnedArray xs = poisoned(device, dtype, R * d, "Xs");
    t = Clock::now();
    launch_dispatch(device, shape, d, xd, dp.row_token, xs, cache);
    device.synchronize();
    r.run_seconds = seconds_since(t);
    const auto got = rt::download(device, xs);
    t = Clock::now();
    std::vector<double> want(static_cast<size_t>(R * d), 0.0);
    for (int64_t row = 0; row < R; ++row)
      if (const int32_t tok = plan.row_token[static_cast<size_t>(row)]; tok >= 0)
        std::copy_n(x.begin() + tok * d, d, want.begin() + row * d);
    r.check = compare_bits(got, value_bytes(dtype, want), static_cast<size_t>(dtype.itemsize()), "Xs", d);
    r.reference_seconds = seconds_since(t);
    return r;
  }
  const DType fp8 = dtypes::fp8e4m3;
  const rt::OwnedArray xs8 = poisoned(device, fp8, R * d, "Xs8"), scales = poisoned(device, dtypes::float32, R, "scales");
  t = Clock::now();
  launch_dispatch_fp8(device, shape, d, xd, dp.row_token, xs8, scales, cache);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  const auto got_q = rt::download(device, xs8), got_s = rt::download(device, scales);
  t = Clock::now();
  // The kernel's arithmetic, in float32 as it does it: amax, scale = amax / 448,
  // q = e4m3(x * (448 / amax)), and 0 for a zero row.
  const auto fp8_max = static_cast<float>(float_format_info(*fp8.float_format()).max_finite);
  std::vector<uint8_t> want_q(static_cast<size_t>(R * d), 0);
  std::vector<float> want_s(static_cast<size_t>(R), 0.0f);
  for (int64_t row = 0; row < R; ++row) {
    const int32_t tok = plan.row_token[static_cast<size_t>(row)];
    if (tok < 0) continue;
    float amax = 0.0f;
    for (int64_t c = 0; c < d; ++c) amax = std::max(amax, std::abs(static_cast<float>(x[static_cast<size_t>(tok * d + c)])));
    want_s[static_cast<size_t>(row)] = amax / fp8_max;
    const float inv = amax > 0.0f ? fp8_max / amax : 0.0f;
    for (int64_t c = 0; c < d; ++c)
      want_q[static_cast<size_t>(row * d + c)] =
          static_cast<uint8_t>(encode_float(*fp8.float_format(), static_cast<float>(x[static_cast<size_t>(tok * d + c)]) * inv, Overflow::Saturate));
  }
  r.check = merge(compare_bits(got_s, as_bytes(want_s), 4, "scales", 1), compare_bits(got_q, want_q, 1, "Xs8", d));
  r.reference_seconds = seconds_since(t);
  return r;
}

gemm::RunResult run_combine(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed, rt::CompileCache* cache,
                            const PermuteOptions& options) {
  shape.validate();
  std::mt19937_64 gen(seed);
  const RoutingPlan plan = random_plan(shape, gen, options.skew);
  const int64_t R = shape.max_rows(), T = shape.tokens, k = shape.top_k;
  std::vector<double> ys;
  const rt::OwnedArray ysd(device, rt::upload(device, dtype, random_values(dtype, static_cast<size_t>(R * d), gen, ys), "Ys"));
  const DevicePlan dp(device, plan);
  const rt::OwnedArray y = poisoned(device, dtype, T * d, "Y"), again = poisoned(device, dtype, T * d, "Y (second run)");
  gemm::RunResult r;
  auto t = Clock::now();
  launch_combine(device, shape, d, ysd, dp.dest_row, dp.weights, y, cache);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  launch_combine(device, shape, d, ysd, dp.dest_row, dp.weights, again, cache);
  const auto got = rt::download(device, y);
  t = Clock::now();
  std::vector<double> want(static_cast<size_t>(T * d), 0.0), tol(want.size());
  for (int64_t tok = 0; tok < T; ++tok)
    for (int64_t c = 0; c < d; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t j = 0; j < k; ++j) {
        const size_t choice = static_cast<size_t>(tok * k + j);
        const double term = static_cast<double>(plan.weights[choice]) * ys[static_cast<size_t>(plan.dest_row[choice] * d + c)];
        sum += term;
        magnitude += std::abs(term);
      }
      want[static_cast<size_t>(tok * d + c)] = sum;
      tol[static_cast<size_t>(tok * d + c)] = fp32_sum_error(k, magnitude) + rounding(dtype) * std::abs(sum);
    }
  r.check = merge(compare(read_values(dtype, got), want, tol, "Y", d),
                  compare_bits(rt::download(device, again), got, static_cast<size_t>(dtype.itemsize()), "Y run to run: second run's Y", d));
  r.reference_seconds = seconds_since(t);
  return r;
}

gemm::RunResult run_dispatch_backward(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed, rt::CompileCache* cache,
                                      const PermuteOptions& options) {
  shape.validate();
  std::mt19937_64 gen(seed);
  const RoutingPlan plan = random_plan(shape, gen, options.skew);
  const int64_t R = shape.max_rows(), T = shape.tokens, k = shape.top_k;
  const DType out = options.atomic ? dtypes::float32 : dtype;
  std::vector<double> dxs;
  const rt::OwnedArray dxsd(device, rt::upload(device, dtype, random_values(dtype, static_cast<size_t>(R * d), gen, dxs), "dXs"));
  const DevicePlan dp(device, plan);
  const rt::OwnedArray dx = poisoned(device, out, T * d, "dX");
  gemm::RunResult r;
  auto t = Clock::now();
  launch_dispatch_backward(device, shape, d, dxsd, dp.dest_row, dp.row_token, dx, options.atomic, cache);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  const auto got = rt::download(device, dx);
  t = Clock::now();
  std::vector<double> want(static_cast<size_t>(T * d), 0.0), tol(want.size());
  for (int64_t tok = 0; tok < T; ++tok)
    for (int64_t c = 0; c < d; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double term = dxs[static_cast<size_t>(plan.dest_row[static_cast<size_t>(tok * k + j)] * d + c)];
        sum += term;
        magnitude += std::abs(term);
      }
      want[static_cast<size_t>(tok * d + c)] = sum;
      tol[static_cast<size_t>(tok * d + c)] = fp32_sum_error(k, magnitude) + rounding(out) * std::abs(sum);
    }
  r.check = compare(read_values(out, got), want, tol, "dX", d);
  r.reference_seconds = seconds_since(t);
  return r;
}

gemm::RunResult run_combine_backward(rt::Device& device, const MoeShape& shape, int64_t d, DType dtype, uint64_t seed, rt::CompileCache* cache,
                                     const PermuteOptions& options) {
  shape.validate();
  std::mt19937_64 gen(seed);
  const RoutingPlan plan = random_plan(shape, gen, options.skew);
  const int64_t R = shape.max_rows(), T = shape.tokens, k = shape.top_k;
  std::vector<double> dy, ys;
  const rt::OwnedArray dyd(device, rt::upload(device, dtype, random_values(dtype, static_cast<size_t>(T * d), gen, dy), "dY"));
  const rt::OwnedArray ysd(device, rt::upload(device, dtype, random_values(dtype, static_cast<size_t>(R * d), gen, ys), "Ys"));
  const DevicePlan dp(device, plan);
  const rt::OwnedArray dys = poisoned(device, dtype, R * d, "dYs"), dw = poisoned(device, dtypes::float32, T * k, "dW");
  gemm::RunResult r;
  auto t = Clock::now();
  launch_combine_backward(device, shape, d, dyd, ysd, dp.row_token, dp.row_weight, dp.dest_row, dys, dw, cache);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  const auto got_rows = read_values(dtype, rt::download(device, dys)), got_w = read_values(dtypes::float32, rt::download(device, dw));
  t = Clock::now();
  std::vector<double> want_rows(static_cast<size_t>(R * d), 0.0), tol_rows(want_rows.size());
  for (int64_t row = 0; row < R; ++row) {
    const int32_t tok = plan.row_token[static_cast<size_t>(row)];
    for (int64_t c = 0; c < d; ++c) {
      const size_t i = static_cast<size_t>(row * d + c);
      want_rows[i] = tok < 0 ? 0.0 : static_cast<double>(plan.row_weight[static_cast<size_t>(row)]) * dy[static_cast<size_t>(tok * d + c)];
      tol_rows[i] = (rounding(dtype) + std::ldexp(1.0, -24)) * std::abs(want_rows[i]);  // fp32 product, then the output's rounding
    }
  }
  std::vector<double> want_w(static_cast<size_t>(T * k)), tol_w(want_w.size());
  for (int64_t choice = 0; choice < T * k; ++choice) {
    const int64_t tok = choice / k, row = plan.dest_row[static_cast<size_t>(choice)];
    double dot = 0, magnitude = 0;
    for (int64_t c = 0; c < d; ++c) {
      const double p = dy[static_cast<size_t>(tok * d + c)] * ys[static_cast<size_t>(row * d + c)];
      dot += p;
      magnitude += std::abs(p);
    }
    want_w[static_cast<size_t>(choice)] = dot;
    tol_w[static_cast<size_t>(choice)] = fp32_sum_error(d, magnitude);
  }
  r.check = merge(compare(got_rows, want_rows, tol_rows, "dYs", d), compare(got_w, want_w, tol_w, "dW", k));
  r.reference_seconds = seconds_since(t);
  return r;
}

}  // namespace weft::moe
