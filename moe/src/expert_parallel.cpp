// The expert-parallel MoE layer (expert_parallel.h): route and combine on each token's device,
// the experts on theirs, two all-to-alls through host memory between them.
#include "weft/moe/expert_parallel.h"

#include <cstring>
#include <string>

#include "launch_util.h"
#include "weft/moe/route.h"

namespace weft::moe {

using detail::fetch;
using detail::poisoned;

namespace {

constexpr float kUnchosen = -100.0f;  // an expert-stage logit that never wins top-1 against 0

int64_t divided(int64_t n, int64_t devices, const char* what) {
  if (n % devices)
    throw Error("expert-parallel moe: " + std::string(what) + " " + std::to_string(n) + " do not divide over " + std::to_string(devices) + " devices");
  return n / devices;
}

template <class T>
rt::OwnedArray owned(rt::Device& device, DType dtype, const std::vector<T>& v, std::string label) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return rt::OwnedArray(device, rt::upload(device, dtype, bytes, std::move(label)));
}

}  // namespace

// One (token, choice) routed to a device's expert: where its row lives (its token's device and
// index there, the choice) and the expert's index on its own device.
struct ExpertParallelMoe::Choice {
  int64_t home, token, j;
  int32_t local_expert;
};

ExpertParallelMoe::ExpertParallelMoe(rt::Mesh& mesh, const MoeLayerConfig& config, rt::CompileCache* cache) : config_(config) {
  config_.validate();
  if (mesh.shape().size() != 1) throw Error("expert-parallel moe: runs over a 1-D mesh, not " + mesh.name());
  if (config_.route.scoring != Scoring::SoftmaxTopK) throw Error("expert-parallel moe: SoftmaxTopK scoring only (for now)");
  const auto P = static_cast<int64_t>(mesh.size());
  const int64_t tokens = divided(config_.route.tokens, P, "tokens"), experts = divided(config_.route.experts, P, "experts");
  expert_config_ = config_;
  expert_config_.route = RouteConfig{config_.route.tokens * config_.route.top_k, experts, 1};
  home_shape_ = MoeShape{tokens, config_.route.experts, config_.route.top_k, config_.block_rows};
  RouteConfig home_route = config_.route;
  home_route.tokens = tokens;
  for (size_t d = 0; d < mesh.size(); ++d) {
    rt::Device& dev = mesh.device(d);
    devices_.push_back(&dev);
    routes_.push_back(rt::CompiledKernel::compile(dev, route(home_route, dev.arch()), cache));
    experts_.push_back(std::make_unique<MoeLayer>(dev, expert_config_, cache));
    combines_.push_back(std::make_unique<Combine>(dev, home_shape_, config_.hidden, dtypes::bfloat16, dtypes::bfloat16, cache));
  }
}

void ExpertParallelMoe::check_arrays(const rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits,
                                     const rt::ShardedArray& w1, const rt::ShardedArray& w2, const rt::ShardedArray& y) const {
  bool same_mesh = mesh.size() == devices_.size();
  for (size_t d = 0; same_mesh && d < mesh.size(); ++d) same_mesh = &mesh.device(d) == devices_[d];
  if (!same_mesh) throw Error("expert-parallel moe: built for another mesh, given " + mesh.name());
  const int64_t T = config_.route.tokens, E = config_.route.experts, D = config_.hidden, F = config_.ffn;
  const auto expect = [&](const rt::ShardedArray& a, const char* name, DType dtype, std::vector<int64_t> shape) {
    if (!(a.dtype == dtype) || a.shape != shape || !(a.sharding == rt::Sharding{{0}}) || a.shards.size() != mesh.size())
      throw Error(std::string("expert-parallel moe: ") + name + " must be " + dtype.name() + " of its shape, sharded [0] over the mesh's " +
                  std::to_string(mesh.size()) + " devices");
  };
  expect(x, "X [T, D]", dtypes::bfloat16, {T, D});
  expect(logits, "logits [T, E]", config_.route.logits, {T, E});
  expect(w1, "W1 [E, 2F, D]", dtypes::bfloat16, {E, 2 * F, D});
  expect(w2, "W2 [E, D, F]", dtypes::bfloat16, {E, D, F});
  expect(y, "Y [T, D]", dtypes::bfloat16, {T, D});
}

// Route on each token's device; its weights stay there, its choices come back grouped by the
// device of their expert, with the tokens' rows of X.
ExpertParallelMoe::Routed ExpertParallelMoe::route_tokens(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits) const {
  const int64_t k = config_.route.top_k, E = config_.route.experts, Th = home_shape_.tokens, El = expert_config_.route.experts;
  Routed r;
  r.by_device.resize(mesh.size());
  for (size_t h = 0; h < mesh.size(); ++h) {
    rt::Device& dev = mesh.device(h);
    const rt::OwnedArray ids = poisoned(dev, dtypes::int32, Th * k, "expert_ids");
    r.weights.push_back(poisoned(dev, dtypes::float32, Th * k, "weights"));
    const rt::DeviceArray args[] = {ids, r.weights.back(), logits.shards[h]};
    routes_[h].launch(dev, args);
    dev.synchronize();
    const std::vector<int32_t> chosen = fetch<int32_t>(dev, ids);
    r.x.push_back(rt::download(dev, x.shards[h]));
    for (int64_t t = 0; t < Th; ++t)
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = chosen[static_cast<size_t>(t * k + j)];
        if (e < 0 || e >= E)
          throw Error("expert-parallel moe: the route kernel on " + dev.name() + " chose expert " + std::to_string(e) + " for token " +
                      std::to_string(t) + ", choice " + std::to_string(j) + " (of " + std::to_string(E) + ")");
        r.by_device[static_cast<size_t>(e / El)].push_back({static_cast<int64_t>(h), t, j, static_cast<int32_t>(e % El)});
      }
  }
  return r;
}

// The experts of device o over the rows routed to them: a k = 1 layer whose logits pick each row's
// expert (padding rows: zeros on expert 0). Returns its Y, one row per choice in `mine`'s order.
std::vector<uint8_t> ExpertParallelMoe::run_experts(rt::Mesh& mesh, size_t o, const Routed& routed, const rt::ShardedArray& w1,
                                                    const rt::ShardedArray& w2) const {
  rt::Device& dev = mesh.device(o);
  const std::vector<Choice>& mine = routed.by_device[o];
  const int64_t rows = expert_config_.route.tokens, El = expert_config_.route.experts;
  const auto row_bytes = static_cast<size_t>(config_.hidden * 2);
  std::vector<uint8_t> xs(static_cast<size_t>(rows) * row_bytes, 0);
  std::vector<float> picks(static_cast<size_t>(rows * El), kUnchosen);
  for (int64_t n = 0; n < rows; ++n) picks[static_cast<size_t>(n * El)] = 0.0f;  // padding: expert 0
  for (size_t n = 0; n < mine.size(); ++n) {
    std::memcpy(&xs[n * row_bytes], &routed.x[static_cast<size_t>(mine[n].home)][static_cast<size_t>(mine[n].token) * row_bytes], row_bytes);
    picks[n * static_cast<size_t>(El)] = kUnchosen;
    picks[n * static_cast<size_t>(El) + static_cast<size_t>(mine[n].local_expert)] = 0.0f;
  }
  const rt::OwnedArray x_o = owned(dev, dtypes::bfloat16, xs, "X (expert stage)");
  const rt::OwnedArray logits_o = owned(dev, dtypes::float32, picks, "logits (expert stage)");
  const rt::OwnedArray y_o = poisoned(dev, dtypes::bfloat16, rows * config_.hidden, "Y (expert stage)");
  const MoeLayerBuffers buffers = allocate_layer(dev, expert_config_);
  experts_[o]->forward(dev, x_o, logits_o, nullptr, w1.shards[o], w2.shards[o], y_o, buffers);
  dev.synchronize();
  return rt::download(dev, y_o);
}

void ExpertParallelMoe::forward(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
                                const rt::ShardedArray& w2, const rt::ShardedArray& y) const {
  check_arrays(mesh, x, logits, w1, w2, y);
  const int64_t k = config_.route.top_k, Th = home_shape_.tokens;
  const auto row_bytes = static_cast<size_t>(config_.hidden * 2);
  const Routed routed = route_tokens(mesh, x, logits);  // and the first all-to-all's rows

  // The experts, and the second all-to-all: each result to its token's device, at row t*k + j.
  std::vector<std::vector<uint8_t>> returned(mesh.size(), std::vector<uint8_t>(static_cast<size_t>(home_shape_.max_rows()) * row_bytes, 0xCD));
  for (size_t o = 0; o < mesh.size(); ++o) {
    const std::vector<uint8_t> results = run_experts(mesh, o, routed, w1, w2);
    const std::vector<Choice>& mine = routed.by_device[o];
    for (size_t n = 0; n < mine.size(); ++n)
      std::memcpy(&returned[static_cast<size_t>(mine[n].home)][static_cast<size_t>(mine[n].token * k + mine[n].j) * row_bytes], &results[n * row_bytes],
                  row_bytes);
  }

  // Combine on each token's device, the k choices of token t at rows t*k .. t*k + k-1.
  std::vector<int32_t> in_order(static_cast<size_t>(Th * k));
  for (size_t n = 0; n < in_order.size(); ++n) in_order[n] = static_cast<int32_t>(n);
  for (size_t h = 0; h < mesh.size(); ++h) {
    rt::Device& dev = mesh.device(h);
    const rt::OwnedArray ys = owned(dev, dtypes::bfloat16, returned[h], "Ys (returned)");
    const rt::OwnedArray dest = owned(dev, dtypes::int32, in_order, "dest_row");
    combines_[h]->launch(dev, ys, dest, routed.weights[h], y.shards[h]);
    dev.synchronize();
  }
}

}  // namespace weft::moe
