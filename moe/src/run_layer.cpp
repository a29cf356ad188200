// run_moe_layer: random inputs from a seed, one forward of the MoE layer on poisoned buffers,
// and its checks: the routing, the plan, every stage from the device's own input to it, and Y
// end to end (layer.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "host_rows.h"
#include "layer_reference.h"
#include "route_inputs.h"
#include "weft/moe/expert_parallel.h"
#include "weft/moe/layer.h"

namespace weft::moe {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Random bf16 values uniform in +-2^-floor(log2(K) / 2), about 1/sqrt(K), so that a sum of K
// products stays near the inputs' magnitude (a power of two keeps them exact).
std::vector<double> random_weights(size_t n, int64_t k, std::mt19937_64& gen) {
  std::vector<double> w;
  random_values(dtypes::bfloat16, n, gen, w);
  const double scale = std::ldexp(1.0, -static_cast<int>(std::floor(std::log2(static_cast<double>(k)) / 2)));
  for (double& v : w) v *= scale;
  return w;
}

rt::OwnedArray upload(rt::Device& device, DType dtype, const std::vector<uint8_t>& bytes, const char* label) {
  return rt::OwnedArray(device, rt::upload(device, dtype, bytes, label));
}

std::vector<double> fetch_bf16(rt::Device& device, const rt::DeviceArray& a) { return read_values(dtypes::bfloat16, rt::download(device, a)); }

// `rows` of `got` ([R, cols]) against want (one row of it per entry of `rows`), named by the
// plan's row: "H[row 517, 3] = ...".
gemm::Check check_rows(const std::string& name, const std::vector<double>& got, const std::vector<int64_t>& rows, const Bounded& want) {
  gemm::Check c;
  const int64_t cols = want.cols;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t col = 0; col < cols; ++col) {
      const double g = got[static_cast<size_t>(rows[i] * cols + col)];
      const double w = want.value[i * static_cast<size_t>(cols) + static_cast<size_t>(col)];
      const double tol = want.bound[i * static_cast<size_t>(cols) + static_cast<size_t>(col)];
      const double err = std::abs(g - w);
      const bool ok = err <= tol;  // false for NaN
      ++c.count;
      if (!std::isnan(err)) c.max_error = std::max(c.max_error, err);
      c.worst_ratio = std::max(c.worst_ratio, ok ? (tol > 0 ? err / tol : 0.0) : (std::isnan(err) || tol == 0 ? INFINITY : err / tol));
      if (ok || c.bad++) continue;
      std::ostringstream s;
      s.precision(9);
      s << name << "[row " << rows[i] << ", " << col << "] = " << g << ", expected " << w << " (tolerance " << tol << ")";
      c.first_bad = s.str();
    }
  return c;
}

// Rows that must hold zeros exactly.
gemm::Check check_zero_rows(const std::string& name, const std::vector<double>& got, const std::vector<int64_t>& rows, int64_t cols) {
  return check_rows(name + " (padding row)", got, rows, exact(std::vector<double>(rows.size() * static_cast<size_t>(cols), 0.0), cols));
}

struct DeviceValues {
  std::vector<double> xs, h, a, ys, y;
};

// Each stage against its reference from the device's own input to it: a tight bound (one
// stage's arithmetic and rounding), which names the first stage that goes wrong.
gemm::Check check_stages(const MoeLayerConfig& config, const MoeLayerHost& host, const RoutingPlan& plan, const DeviceValues& got) {
  const MoeShape s = config.shape();
  const int64_t d = config.hidden, f = config.ffn;
  const RealRows real = real_rows(s, plan);
  std::vector<int64_t> tokens, padding, used_padding;
  for (int64_t r : real.rows) tokens.push_back(plan.row_token[static_cast<size_t>(r)]);
  const int64_t used_rows = plan.offsets.back();
  for (int64_t r = 0; r < s.max_rows(); ++r)
    if (plan.row_token[static_cast<size_t>(r)] < 0) {
      padding.push_back(r);
      if (r < used_rows) used_padding.push_back(r);
    }
  gemm::Check c = check_rows("Xs", got.xs, real.rows, exact(gather_rows(host.x, tokens, d), d));
  c = merge(c, check_zero_rows("Xs", got.xs, padding, d));
  c = merge(c, check_rows("H", got.h, real.rows, project(exact(gather_rows(got.xs, real.rows, d), d), host.w1, real.experts, 2 * f)));
  c = merge(c, check_zero_rows("H", got.h, used_padding, 2 * f));
  c = merge(c, check_rows("A", got.a, real.rows, silu_mul(exact(gather_rows(got.h, real.rows, 2 * f), 2 * f))));
  c = merge(c, check_zero_rows("A", got.a, padding, f));
  c = merge(c, check_rows("Ys", got.ys, real.rows, project(exact(gather_rows(got.a, real.rows, f), f), host.w2, real.experts, d)));
  c = merge(c, check_zero_rows("Ys", got.ys, used_padding, d));
  std::vector<int64_t> all_tokens(static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.tokens; ++t) all_tokens[static_cast<size_t>(t)] = t;
  return merge(c, check_rows("Y (from the device's Ys)", got.y, all_tokens,
                             combine(exact(gather_rows(got.ys, real.rows, d), d), real.slot_of_row, plan, s.top_k)));
}

// The weights of MoeLayerRunOptions::identity, and X's column 0 set to 1.
void identity_weights(const MoeLayerConfig& config, MoeLayerHost& host) {
  const int64_t T = config.route.tokens, E = config.route.experts, D = config.hidden, F = config.ffn;
  for (int64_t t = 0; t < T; ++t) host.x[static_cast<size_t>(t * D)] = 1.0;
  std::fill(host.w1.begin(), host.w1.end(), 0.0);
  std::fill(host.w2.begin(), host.w2.end(), 0.0);
  for (int64_t e = 0; e < E; ++e) {
    const double scale = std::ldexp(1.0, static_cast<int>(e % 4));
    for (int64_t c = 0; c < F; ++c) {
      host.w1[static_cast<size_t>((e * 2 * F + c) * D)] = 32.0;               // gate row c: 32 * X[:, 0]
      host.w1[static_cast<size_t>((e * 2 * F + F + c) * D + c)] = scale;      // up row c: X[:, c] * 2^(e mod 4)
      host.w2[static_cast<size_t>((e * D + c) * F + c)] = 1.0 / (32 * scale);  // Ys[:, c] = A[:, c] / (32 * 2^(e mod 4))
    }
  }
}

// bf16 arrays `got` and `want` ([rows, cols]) element by element, bit for bit.
gemm::Check same_bits(const std::string& name, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, int64_t cols) {
  gemm::Check c;
  if (got.size() != want.size()) {
    c.count = c.bad = 1;
    c.worst_ratio = INFINITY;
    c.first_bad = name + ": " + std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
    return c;
  }
  const std::vector<double> g = read_values(dtypes::bfloat16, got), w = read_values(dtypes::bfloat16, want);
  for (size_t n = 0; n < w.size(); ++n) {
    ++c.count;
    if (got[2 * n] == want[2 * n] && got[2 * n + 1] == want[2 * n + 1]) continue;
    if (!std::isnan(g[n] - w[n])) c.max_error = std::max(c.max_error, std::abs(g[n] - w[n]));
    if (c.bad++) continue;
    std::ostringstream s;
    s.precision(9);
    s << name << "[" << static_cast<int64_t>(n) / cols << ", " << static_cast<int64_t>(n) % cols << "] = " << g[n] << ", expected the bits of " << w[n];
    c.first_bad = s.str();
  }
  c.worst_ratio = c.bad ? INFINITY : 0.0;
  return c;
}

// The layer expert-parallel over `mesh` on the same inputs: its Y's bytes.
std::vector<uint8_t> expert_parallel_y(rt::Mesh& mesh, const MoeLayerConfig& config, const MoeLayerHost& host, const std::vector<double>& w1,
                                      const std::vector<uint8_t>& logits, rt::CompileCache* cache, std::string* collectives) {
  const int64_t T = config.route.tokens, E = config.route.experts, D = config.hidden, F = config.ffn;
  const DType bf16 = dtypes::bfloat16;
  const rt::Sharding split{{0}};
  const ExpertParallelMoe ep(mesh, config, cache);
  if (collectives) *collectives = ep.collectives();
  struct Arrays {  // released however the forward ends
    rt::Mesh& mesh;
    std::vector<rt::ShardedArray> held;
    ~Arrays() {
      for (const rt::ShardedArray& a : held) try {
          rt::release(mesh, a);
        } catch (const Error&) {  // a device that failed already: the error that ended the forward is the one to see
        }
    }
  } arrays{mesh, {}};
  const auto put = [&](DType dtype, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes, const char* label) -> const rt::ShardedArray& {
    arrays.held.push_back(rt::distribute(mesh, dtype, std::move(shape), bytes, split, label));
    return arrays.held.back();
  };
  arrays.held.reserve(5);  // the references put() returns stay valid
  const rt::ShardedArray& x = put(bf16, {T, D}, value_bytes(bf16, host.x), "X");
  const rt::ShardedArray& l = put(config.route.logits, {T, E}, logits, "logits");
  const rt::ShardedArray& w1s = put(bf16, {E, 2 * F, D}, value_bytes(bf16, w1), "W1");
  const rt::ShardedArray& w2s = put(bf16, {E, D, F}, value_bytes(bf16, host.w2), "W2");
  const rt::ShardedArray& y = put(bf16, {T, D}, std::vector<uint8_t>(static_cast<size_t>(T * D * 2), 0xCD), "Y");
  ep.forward(mesh, x, l, w1s, w2s, y);
  return rt::gather(mesh, y);
}

}  // namespace

gemm::RunResult run_moe_layer(rt::Device& device, const MoeLayerConfig& config, uint64_t seed, rt::CompileCache* cache,
                              const MoeLayerRunOptions& options) {
  config.validate();
  const MoeShape s = config.shape();
  const int64_t T = s.tokens, E = s.experts, D = config.hidden, F = config.ffn;
  if (options.empty_experts && (config.route.scoring != Scoring::SoftmaxTopK || 2 * s.top_k > E))
    throw Error("run_moe_layer: empty experts need softmax scoring and k <= E/2");
  if (options.identity && (config.route.scoring != Scoring::SoftmaxTopK || s.top_k != 1 || D != F))
    throw Error("run_moe_layer: the identity layer needs softmax scoring, k = 1 and D = F");
  gemm::RunResult r;
  const MoeLayer layer(device, config, cache);
  r.compile = layer.compile_times();

  // Inputs: the route's logits as run_route draws them, then X, W1, W2 from their own stream.
  RouteData routing = draw_route_inputs(config.route, RouteInputs::Random, seed);
  if (options.empty_experts) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = E / 2; e < E; ++e) routing.logits[static_cast<size_t>(t * E + e)] = -100.0;
    routing.logits_bytes = value_bytes(config.route.logits, routing.logits);
  }
  std::mt19937_64 gen(seed ^ 0x9E3779B97F4A7C15ull);
  MoeLayerHost host;
  random_values(dtypes::bfloat16, static_cast<size_t>(T * D), gen, host.x);
  host.w1 = random_weights(static_cast<size_t>(E * 2 * F * D), D, gen);
  host.w2 = random_weights(static_cast<size_t>(E * D * F), F, gen);
  if (options.identity) identity_weights(config, host);
  std::vector<double> w1_device = host.w1;
  if (options.perturb_weight) {
    const int32_t e = route_reference(config.route, routing.logits, routing.bias).expert_ids[0];
    w1_device[static_cast<size_t>(e * 2 * F * D)] += 64.0;
  }
  const DType bf16 = dtypes::bfloat16;
  const rt::OwnedArray x = upload(device, bf16, value_bytes(bf16, host.x), "X"), logits = upload(device, config.route.logits, routing.logits_bytes, "logits");
  const rt::OwnedArray bias = upload(device, dtypes::float32, routing.bias_bytes, "correction_bias");
  const rt::OwnedArray w1 = upload(device, bf16, value_bytes(bf16, w1_device), "W1"), w2 = upload(device, bf16, value_bytes(bf16, host.w2), "W2");
  const rt::OwnedArray y = upload(device, bf16, std::vector<uint8_t>(static_cast<size_t>(T * D * 2), 0xCD), "Y");
  const MoeLayerBuffers buffers = allocate_layer(device, config);

  auto t = Clock::now();
  layer.forward(device, x, logits, &bias.get(), w1, w2, y, buffers);
  device.synchronize();
  r.run_seconds = seconds_since(t);
  const RoutingPlan plan = download_plan(device, s, buffers.plan);
  const DeviceValues got{fetch_bf16(device, buffers.xs), fetch_bf16(device, buffers.h), fetch_bf16(device, buffers.a), fetch_bf16(device, buffers.ys),
                         fetch_bf16(device, y)};

  t = Clock::now();
  // The routing first: the later checks take the device's choices (checked here) as given.
  r.check = check_route(config.route, routing.logits, routing.bias, plan.expert_ids, plan.weights);
  if (r.check.passed()) r.check = merge(r.check, compare_plans(plan, plan_reference(s, plan.expert_ids, plan.weights)));
  if (r.check.passed()) {
    r.check = merge(r.check, check_stages(config, host, plan, got));
    const MoeLayerReference want = moe_layer_reference(config, host, plan);
    std::vector<int64_t> all_tokens(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i) all_tokens[static_cast<size_t>(i)] = i;
    Bounded end_to_end;
    end_to_end.cols = D;
    end_to_end.value = want.y;
    end_to_end.bound = want.tolerance;
    r.check = merge(r.check, check_rows("Y (end to end)", got.y, all_tokens, end_to_end));
    if (options.identity) r.check = merge(r.check, check_rows("Y (the identity layer: must equal X)", got.y, all_tokens, exact(host.x, D)));
  }
  if (options.expert_parallel && r.check.passed()) {
    const std::vector<uint8_t> ep_y = expert_parallel_y(*options.expert_parallel, config, host, w1_device, routing.logits_bytes, cache,
                                                           options.collectives);
    r.check = merge(r.check, same_bits("Y (expert-parallel, against one device's)", ep_y, rt::download(device, y), D));
  }
  r.reference_seconds = seconds_since(t);
  return r;
}

}  // namespace weft::moe
