// The expert-parallel MoE layer (expert_parallel.h): route, dispatch and combine on each token's
// device, the experts on theirs, two all-to-alls (rt::Collectives) between them.
#include "weft/moe/expert_parallel.h"

#include <cstdint>
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

// One (token, choice) routed to a device's expert: its token's device and index there, the
// choice, and the expert's index on its own device.
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
    dispatches_.push_back(std::make_unique<Dispatch>(dev, home_shape_, config_.hidden, dtypes::bfloat16, cache));
    experts_.push_back(std::make_unique<MoeLayer>(dev, expert_config_, cache));
    combines_.push_back(std::make_unique<Combine>(dev, home_shape_, config_.hidden, dtypes::bfloat16, dtypes::bfloat16, cache));
  }
  comm_ = rt::Collectives::open(mesh);
}

ExpertParallelMoe::~ExpertParallelMoe() = default;

std::string ExpertParallelMoe::collectives() const { return comm_->backend(); }

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

// Route on each token's device. Its weights stay there; its choices (read back: the
// all-to-alls' sizes depend on them) are grouped by the device of their expert, in (token,
// choice) order within each group.
ExpertParallelMoe::Routed ExpertParallelMoe::route_tokens(rt::Mesh& mesh, const rt::ShardedArray& logits) const {
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

// Where each device's rows go and come from, from the routed choices. Device h sends its rows
// grouped by expert device o (the groups in order of o, each in (token, choice) order), and
// receives the results back in the same order: so the choice's result lands at the position its
// row left from, which is combine's dest_row.
ExpertParallelMoe::Exchange ExpertParallelMoe::exchange(const Routed& routed) const {
  const size_t P = devices_.size();
  const int64_t k = config_.route.top_k, D = config_.hidden;
  Exchange x;
  x.counts.assign(P, std::vector<int64_t>(P, 0));
  x.row_token.assign(P, std::vector<int32_t>(static_cast<size_t>(home_shape_.max_rows()), -1));
  x.dest_row.assign(P, std::vector<int32_t>(static_cast<size_t>(home_shape_.choices()), -1));
  x.counts_back.assign(P, std::vector<int64_t>(P, 0));
  std::vector<int32_t> sent(P, 0);
  for (size_t o = 0; o < P; ++o)
    for (const Choice& c : routed.by_device[o]) {
      const auto h = static_cast<size_t>(c.home);
      x.row_token[h][static_cast<size_t>(sent[h])] = static_cast<int32_t>(c.token);
      x.dest_row[h][static_cast<size_t>(c.token * k + c.j)] = sent[h]++;
      x.counts[h][o] += D;
    }
  for (size_t h = 0; h < P; ++h)
    for (size_t o = 0; o < P; ++o) x.counts_back[o][h] = x.counts[h][o];
  return x;
}

// The experts' input on device o: each row received picks its expert (logit 0 against -100, so
// the weight of its one choice is exactly 1); the rows past them (padding) pick expert 0.
std::vector<float> ExpertParallelMoe::picks(const Routed& routed, size_t o) const {
  const int64_t rows = expert_config_.route.tokens, El = expert_config_.route.experts;
  std::vector<float> logits(static_cast<size_t>(rows * El), kUnchosen);
  for (int64_t n = 0; n < rows; ++n) logits[static_cast<size_t>(n * El)] = 0.0f;
  const std::vector<Choice>& mine = routed.by_device[o];
  for (size_t n = 0; n < mine.size(); ++n) {
    logits[n * static_cast<size_t>(El)] = kUnchosen;
    logits[n * static_cast<size_t>(El) + static_cast<size_t>(mine[n].local_expert)] = 0.0f;
  }
  return logits;
}

void ExpertParallelMoe::forward(rt::Mesh& mesh, const rt::ShardedArray& x, const rt::ShardedArray& logits, const rt::ShardedArray& w1,
                                const rt::ShardedArray& w2, const rt::ShardedArray& y) const {
  check_arrays(mesh, x, logits, w1, w2, y);
  const size_t P = mesh.size();
  const int64_t D = config_.hidden, home_rows = home_shape_.max_rows(), expert_rows = expert_config_.route.tokens;
  const Routed routed = route_tokens(mesh, logits);
  const Exchange plan = exchange(routed);

  // Each token device's rows in send order (dispatch with the exchange's row_token), to the
  // expert devices; the experts; their results back; combine.
  std::vector<rt::OwnedArray> row_token, sent, received, results, returned, dest_row;
  for (size_t h = 0; h < P; ++h) {
    rt::Device& dev = mesh.device(h);
    row_token.push_back(owned(dev, dtypes::int32, plan.row_token[h], "row_token (send order)"));
    sent.push_back(poisoned(dev, dtypes::bfloat16, home_rows * D, "X rows (sent)"));
    dispatches_[h]->launch(dev, x.shards[h], row_token.back(), sent.back());
    // The expert stage's rows past those received are padding: zeros, as a layer's padding is.
    received.push_back(owned(dev, dtypes::bfloat16, std::vector<uint16_t>(static_cast<size_t>(expert_rows * D), 0), "X rows (received)"));
    results.push_back(poisoned(dev, dtypes::bfloat16, expert_rows * D, "Y rows (expert stage)"));
    returned.push_back(poisoned(dev, dtypes::bfloat16, home_rows * D, "Y rows (returned)"));
    dest_row.push_back(owned(dev, dtypes::int32, plan.dest_row[h], "dest_row (receive order)"));
  }
  const auto arrays = [](const std::vector<rt::OwnedArray>& v) { return std::vector<rt::DeviceArray>(v.begin(), v.end()); };
  comm_->all_to_all(arrays(sent), arrays(received), plan.counts);
  std::vector<rt::OwnedArray> expert_logits;
  for (size_t o = 0; o < P; ++o) {
    rt::Device& dev = mesh.device(o);
    expert_logits.push_back(owned(dev, dtypes::float32, picks(routed, o), "logits (expert stage)"));
    const MoeLayerBuffers buffers = allocate_layer(dev, expert_config_);
    experts_[o]->forward(dev, received[o], expert_logits.back(), nullptr, w1.shards[o], w2.shards[o], results[o], buffers);
    dev.synchronize();  // before the layer's buffers are freed
  }
  comm_->all_to_all(arrays(results), arrays(returned), plan.counts_back);
  for (size_t h = 0; h < P; ++h) {
    rt::Device& dev = mesh.device(h);
    combines_[h]->launch(dev, returned[h], dest_row[h], routed.weights[h], y.shards[h]);
    dev.synchronize();
  }
}

}  // namespace weft::moe
