// The routing weights' backward (route_backward.h): one workgroup per token, whose lanes each
// recompute the k chosen experts' scores (k <= 64 loads and exponentials, cheaper than a
// shared-memory round trip) and write their own experts' gradients, zeros for the unchosen.
#include "weft/moe/route_backward.h"

#include <chrono>
#include <cmath>
#include <numbers>

#include "host_rows.h"
#include "launch_util.h"
#include "row_tiling.h"

namespace weft::moe {

using namespace detail;

namespace {

UOp exp_of(const UOp& x) { return exp2(x * std::numbers::log2e); }

void check_config(int64_t experts, int64_t top_k, const RouteBackwardConfig& c) {
  if (experts < 1) throw Error("moe route_backward: experts must be >= 1, got " + std::to_string(experts));
  if (top_k < 1 || top_k > std::min<int64_t>(experts, 64))
    throw Error("moe route_backward: top_k must lie in [1, min(experts, 64)], got " + std::to_string(top_k));
  if (!std::isfinite(c.routed_scaling_factor)) throw Error("moe route_backward: routed_scaling_factor must be finite");
}

// The gradients of the chosen experts' logits (route_backward.h's formulas), one per choice.
std::vector<UOp> chosen_gradients(const std::vector<UOp>& logit, const std::vector<UOp>& dw, const RouteBackwardConfig& c) {
  const size_t k = logit.size();
  const UOp scale = constant(static_cast<double>(c.routed_scaling_factor), dtypes::float32), one = constant(1.0, dtypes::float32);
  std::vector<UOp> grad(k);
  if (c.scoring == Scoring::SoftmaxTopK) {
    UOp m = logit[0];
    for (size_t j = 1; j < k; ++j) m = max(m, logit[j]);
    std::vector<UOp> e(k);
    UOp sum;
    for (size_t j = 0; j < k; ++j) {
      e[j] = exp_of(logit[j] - m);
      sum = j ? sum + e[j] : e[j];
    }
    UOp g;
    std::vector<UOp> p(k);
    for (size_t j = 0; j < k; ++j) {
      p[j] = e[j] / sum;
      g = j ? g + p[j] * dw[j] : p[j] * dw[j];
    }
    for (size_t j = 0; j < k; ++j) grad[j] = scale * p[j] * (dw[j] - g);
    return grad;
  }
  // s = 1 / (1 + e) and 1 - s = e * s with e = exp(-l): no cancellation in 1 - s where s is near 1.
  std::vector<UOp> s(k), rest(k);
  UOp sum;
  for (size_t j = 0; j < k; ++j) {
    const UOp e = exp_of(-logit[j]);
    s[j] = one / (one + e);
    rest[j] = e * s[j];
    sum = j ? sum + s[j] : s[j];
  }
  UOp g;
  if (c.normalize)
    for (size_t j = 0; j < k; ++j) g = j ? g + (s[j] / sum) * dw[j] : (s[j] / sum) * dw[j];
  for (size_t j = 0; j < k; ++j) {
    const UOp slope = s[j] * rest[j];
    grad[j] = c.normalize ? scale / sum * (dw[j] - g) * slope : scale * dw[j] * slope;
  }
  return grad;
}

}  // namespace

UOp route_backward_kernel(int64_t experts, int64_t top_k, const RouteBackwardConfig& config) {
  check_config(experts, top_k, config);
  // One float32 per lane access: the row tiling of a row of E float32 values, vector 1.
  RowTiling t = row_tiling(experts, dtypes::float32);
  t.vector = 1;
  t.threads = std::min<int64_t>(256, (experts + 63) / 64 * 64);
  t.steps = (experts + t.threads - 1) / t.threads;
  const UOp tokens = tokens_variable(std::max(experts, top_k)), E = constant(Wide(experts));
  const UOp dlogits = global_buffer({tokens, E}, dtypes::float32, 0), logits = global_buffer({tokens, E}, dtypes::float32, 1);
  const UOp ids = global_buffer({tokens * top_k}, dtypes::int32, 2), dw = global_buffer({tokens * top_k}, dtypes::float32, 3);
  const UOp token = range(tokens, 0, AxisType::GLOBAL);
  const RowAccess a = row_access(t, 1);
  std::vector<UOp> id(static_cast<size_t>(top_k)), logit(id.size()), grad_w(id.size());
  for (int64_t j = 0; j < top_k; ++j) {
    const UOp choice = token * top_k + j;
    id[static_cast<size_t>(j)] = as_index(ids[choice].load());
    logit[static_cast<size_t>(j)] = logits[{token, max(min(id[static_cast<size_t>(j)], E - 1), constant(Wide(0)))}].load();
    grad_w[static_cast<size_t>(j)] = dw[choice].load();
  }
  const std::vector<UOp> grad = chosen_gradients(logit, grad_w, config);
  UOp value = constant(0.0, dtypes::float32);
  for (size_t j = 0; j < grad.size(); ++j) value = where(id[j].eq(a.column), grad[j], value);
  const UOp at = dlogits[{token, a.column}];
  const UOp store = !a.inside.is_null() ? at.store(value, a.inside) : at.store(value);
  const char* scoring = config.scoring == Scoring::SoftmaxTopK ? "softmax" : config.normalize ? "sigmoid_normalized" : "sigmoid";
  return sink({.name = std::string("moe_route_backward_") + scoring + "_e" + std::to_string(experts) + "_k" + std::to_string(top_k), .dependent_launch = true},
              {store.end({token, a.lane, a.step})});
}

void launch_route_backward(rt::Device& device, const MoeShape& shape, const RouteBackwardConfig& config, const rt::DeviceArray& logits,
                           const rt::DeviceArray& expert_ids, const rt::DeviceArray& dw, const rt::DeviceArray& dlogits, rt::CompileCache* cache) {
  shape.validate();
  expect_array("route_backward", logits, "logits [T, E]", dtypes::float32, shape.tokens * shape.experts);
  expect_array("route_backward", expert_ids, "expert_ids [T*k]", dtypes::int32, shape.choices());
  expect_array("route_backward", dw, "dW [T*k]", dtypes::float32, shape.choices());
  expect_array("route_backward", dlogits, "dlogits [T, E]", dtypes::float32, shape.tokens * shape.experts);
  launch(device, route_backward_kernel(shape.experts, shape.top_k, config), {dlogits, logits, expert_ids, dw}, shape, cache);
}

gemm::RunResult run_route_backward(rt::Device& device, const MoeShape& shape, const RouteBackwardConfig& config, uint64_t seed,
                                   rt::CompileCache* cache, bool skew) {
  shape.validate();
  check_config(shape.experts, shape.top_k, config);
  std::mt19937_64 gen(seed);
  const RoutingPlan plan = random_plan(shape, gen, skew);
  const int64_t T = shape.tokens, E = shape.experts, k = shape.top_k;
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(T * E)), dw(static_cast<size_t>(T * k));
  for (float& x : logits) x = normal(gen);
  for (float& x : dw) x = normal(gen);
  const rt::OwnedArray ld(device, rt::upload(device, dtypes::float32, as_bytes(logits), "logits"));
  const rt::OwnedArray idd(device, rt::upload(device, dtypes::int32, as_bytes(plan.expert_ids), "expert_ids"));
  const rt::OwnedArray dwd(device, rt::upload(device, dtypes::float32, as_bytes(dw), "dW"));
  const rt::OwnedArray out(device, rt::upload(device, dtypes::float32, std::vector<uint8_t>(static_cast<size_t>(T * E * 4), 0xCD), "dlogits"));
  gemm::RunResult r;
  auto t0 = std::chrono::steady_clock::now();
  launch_route_backward(device, shape, config, ld, idd, dwd, out, cache);
  device.synchronize();
  r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<double> got = read_values(dtypes::float32, rt::download(device, out));
  t0 = std::chrono::steady_clock::now();
  std::vector<double> want(static_cast<size_t>(T * E), 0.0), tol(want.size(), 0.0);
  const double scale = config.routed_scaling_factor;
  for (int64_t tok = 0; tok < T; ++tok) {
    std::vector<double> l(static_cast<size_t>(k)), g(l.size()), s(l.size());
    for (int64_t j = 0; j < k; ++j) {
      l[static_cast<size_t>(j)] = logits[static_cast<size_t>(tok * E + plan.expert_ids[static_cast<size_t>(tok * k + j)])];
      g[static_cast<size_t>(j)] = dw[static_cast<size_t>(tok * k + j)];
    }
    double sum = 0, dot = 0, magnitude = 0, largest = 0;
    for (double x : l) largest = std::max(largest, std::abs(x));
    if (config.scoring == Scoring::SoftmaxTopK) {
      const double m = *std::max_element(l.begin(), l.end());
      for (size_t j = 0; j < l.size(); ++j) sum += s[j] = std::exp(l[j] - m);
      for (size_t j = 0; j < l.size(); ++j) s[j] /= sum;
    } else {
      for (size_t j = 0; j < l.size(); ++j) sum += s[j] = 1.0 / (1.0 + std::exp(-l[j]));
    }
    for (size_t j = 0; j < l.size(); ++j) {
      const double p = config.scoring == Scoring::SoftmaxTopK ? s[j] : s[j] / sum;
      dot += p * g[j];
      magnitude += std::abs(p * g[j]);
    }
    for (size_t j = 0; j < l.size(); ++j) {
      double v, size;
      if (config.scoring == Scoring::SoftmaxTopK) {
        v = scale * s[j] * (g[j] - dot);
        size = std::abs(scale) * s[j] * (std::abs(g[j]) + magnitude);
      } else if (config.normalize) {
        v = scale / sum * (g[j] - dot) * s[j] * (1 - s[j]);
        size = std::abs(scale) / sum * (std::abs(g[j]) + magnitude) * s[j] * (1 - s[j]);
      } else {
        v = scale * g[j] * s[j] * (1 - s[j]);
        size = std::abs(v);
      }
      const size_t at = static_cast<size_t>(tok * E + plan.expert_ids[static_cast<size_t>(tok * k + j)]);
      want[at] = v;
      // float32 arithmetic with hardware exponentials (a few ulp each), over k terms.
      // (exp's argument is rounded: a relative error of |l| ulp in its result).
      tol[at] = (static_cast<double>(4 * k + 16) + largest) * std::ldexp(1.0, -23) * size + 1e-30;
    }
  }
  r.check = compare(got, want, tol, "dlogits", E);
  r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace weft::moe
