// The expert-parallel MoE layer (expert_parallel.h): route and combine on each token's device,
// the experts on theirs, two all-to-alls through host memory between them.
#include "weft/moe/expert_parallel.h"

#include <cstring>
#include <string>

#include "weft/moe/route.h"

namespace weft::moe {
namespace {

constexpr float kUnchosen = -100.0f;  // an expert-stage logit that never wins top-1 against 0

int64_t divided(int64_t n, int64_t devices, const char* what) {
  if (n % devices)
    throw Error("expert-parallel moe: " + std::string(what) + " " + std::to_string(n) + " do not divide over " + std::to_string(devices) + " devices");
  return n / devices;
}

template <class T>
std::vector<T> download_as(rt::Device& device, const rt::DeviceArray& a) {
  const std::vector<uint8_t> bytes = rt::download(device, a);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

template <class T>
rt::OwnedArray owned(rt::Device& device, DType dtype, const std::vector<T>& v, std::string label) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return rt::OwnedArray(device, rt::upload(device, dtype, bytes, std::move(label)));
}

rt::OwnedArray poison(rt::Device& device, DType dtype, int64_t elements, std::string label) {
  return rt::OwnedArray(device, rt::upload(device, dtype, std::vector<uint8_t>(static_cast<size_t>(elements * dtype.itemsize()), 0xCD), std::move(label)));
}

// Where one choice's row lives: its token's device and index there, and the choice.
struct Choice {
  int64_t home, token, j;
};

}  // namespace

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
    routes_.push_back(rt::CompiledKernel::compile(dev, route(home_route, dev.arch()), cache));
    experts_.push_back(std::make_unique<MoeLayer>(dev, expert_config_, cache));
    combines_.push_back(std::make_unique<Combine>(dev, home_shape_, config_.hidden, dtypes::bfloat16, dtypes::bfloat16, cache));
  }
}

void ExpertParallelMoe::check_arrays(const rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits,
                                     const rt::ShardedArray& w1, const rt::ShardedArray& w2, const rt::ShardedArray& y) const {
  const int64_t T = config_.route.tokens, E = config_.route.experts, D = config_.hidden, F = config_.ffn;
  const auto expect = [&](const rt::ShardedArray& a, const char* name, DType dtype, std::vector<int64_t> shape) {
    if (!(a.dtype == dtype) || a.shape != shape || !(a.sharding == rt::Sharding{{0}}) || a.shards.size() != mesh.size())
      throw Error(std::string("expert-parallel moe: ") + name + " must be " + dtype.name() + " of shape " + std::to_string(shape[0]) +
                  "x... sharded [0] over the mesh's " + std::to_string(mesh.size()) + " devices");
  };
  expect(x, "X [T, D]", dtypes::bfloat16, {T, D});
  expect(logits, "logits [T, E]", config_.route.logits, {T, E});
  expect(w1, "W1 [E, 2F, D]", dtypes::bfloat16, {E, 2 * F, D});
  expect(w2, "W2 [E, D, F]", dtypes::bfloat16, {E, D, F});
  expect(y, "Y [T, D]", dtypes::bfloat16, {T, D});
}

void ExpertParallelMoe::forward(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
                                const rt::ShardedArray& w2, const rt::ShardedArray& y) const {
  check_arrays(mesh, x, logits, w1, w2, y);
  const auto P = static_cast<int64_t>(mesh.size());
  const int64_t k = config_.route.top_k, D = config_.hidden, Th = home_shape_.tokens, El = expert_config_.route.experts;
  const int64_t rows = expert_config_.route.tokens;  // every choice of the batch: the expert stage's worst case
  const auto row_bytes = static_cast<size_t>(D * 2);

  // Route on each token's device; the choices, grouped by the device of their expert.
  std::vector<rt::OwnedArray> weights;
  std::vector<std::vector<uint8_t>> home_x;
  std::vector<std::vector<Choice>> by_device(static_cast<size_t>(P));
  std::vector<std::vector<int32_t>> local_expert(static_cast<size_t>(P));
  for (int64_t h = 0; h < P; ++h) {
    rt::Device& dev = mesh.device(static_cast<size_t>(h));
    rt::OwnedArray ids = poison(dev, dtypes::int32, Th * k, "expert_ids");
    weights.push_back(poison(dev, dtypes::float32, Th * k, "weights"));
    const rt::DeviceArray args[] = {ids, weights.back(), logits.shards[static_cast<size_t>(h)]};
    routes_[static_cast<size_t>(h)].launch(dev, args);
    dev.synchronize();
    const std::vector<int32_t> chosen = download_as<int32_t>(dev, ids);
    home_x.push_back(rt::download(dev, x.shards[static_cast<size_t>(h)]));
    for (int64_t t = 0; t < Th; ++t)
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = chosen[static_cast<size_t>(t * k + j)];
        by_device[static_cast<size_t>(e / El)].push_back({h, t, j});
        local_expert[static_cast<size_t>(e / El)].push_back(static_cast<int32_t>(e % El));
      }
  }

  // The first all-to-all and the experts: each expert device's rows, a k = 1 layer over them
  // (padding rows: zeros on expert 0, their results dropped).
  std::vector<std::vector<uint8_t>> home_rows(static_cast<size_t>(P), std::vector<uint8_t>(static_cast<size_t>(home_shape_.max_rows()) * row_bytes, 0xCD));
  for (int64_t o = 0; o < P; ++o) {
    rt::Device& dev = mesh.device(static_cast<size_t>(o));
    const std::vector<Choice>& mine = by_device[static_cast<size_t>(o)];
    std::vector<uint8_t> xs(static_cast<size_t>(rows) * row_bytes, 0);
    std::vector<float> picks(static_cast<size_t>(rows * El), kUnchosen);
    for (int64_t n = 0; n < rows; ++n) picks[static_cast<size_t>(n * El)] = 0.0f;  // padding: expert 0
    for (size_t n = 0; n < mine.size(); ++n) {
      std::memcpy(&xs[n * row_bytes], &home_x[static_cast<size_t>(mine[n].home)][static_cast<size_t>(mine[n].token) * row_bytes], row_bytes);
      picks[n * static_cast<size_t>(El)] = kUnchosen;
      picks[n * static_cast<size_t>(El) + static_cast<size_t>(local_expert[static_cast<size_t>(o)][n])] = 0.0f;
    }
    const rt::OwnedArray x_o = owned(dev, dtypes::bfloat16, xs, "X (expert stage)");
    const rt::OwnedArray logits_o = owned(dev, dtypes::float32, picks, "logits (expert stage)");
    const rt::OwnedArray y_o = poison(dev, dtypes::bfloat16, rows * D, "Y (expert stage)");
    const MoeLayerBuffers buffers = allocate_layer(dev, expert_config_);
    experts_[static_cast<size_t>(o)]->forward(dev, x_o, logits_o, nullptr, w1.shards[static_cast<size_t>(o)], w2.shards[static_cast<size_t>(o)], y_o,
                                              buffers);
    dev.synchronize();
    const std::vector<uint8_t> results = rt::download(dev, y_o);
    // The second all-to-all: each result to its token's device, at row t*k + j.
    for (size_t n = 0; n < mine.size(); ++n)
      std::memcpy(&home_rows[static_cast<size_t>(mine[n].home)][static_cast<size_t>(mine[n].token * k + mine[n].j) * row_bytes], &results[n * row_bytes],
                  row_bytes);
  }

  // Combine on each token's device, the k choices of token t at rows t*k .. t*k + k-1.
  std::vector<int32_t> in_order(static_cast<size_t>(Th * k));
  for (size_t n = 0; n < in_order.size(); ++n) in_order[n] = static_cast<int32_t>(n);
  for (int64_t h = 0; h < P; ++h) {
    rt::Device& dev = mesh.device(static_cast<size_t>(h));
    const rt::OwnedArray ys = owned(dev, dtypes::bfloat16, home_rows[static_cast<size_t>(h)], "Ys (returned)");
    const rt::OwnedArray dest = owned(dev, dtypes::int32, in_order, "dest_row");
    combines_[static_cast<size_t>(h)]->launch(dev, ys, dest, weights[static_cast<size_t>(h)], y.shards[static_cast<size_t>(h)]);
    dev.synchronize();
  }
}

}  // namespace weft::moe
