// The expert-parallel MoE layer (moe/expert_parallel.h) on a mesh of 4 emulated devices: tokens
// and experts split over the devices, two all-to-alls, and Y equal bit for bit to MoeLayer's on
// one device, which is itself checked against the double-precision reference of the layer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernel_harness.h"
#include "weft/moe/expert_parallel.h"

using namespace weft;

namespace {

moe::MoeLayerConfig layer_config(int64_t tokens, int64_t experts, int64_t top_k, int64_t d, int64_t f) {
  moe::MoeLayerConfig c;
  c.route = {tokens, experts, top_k, moe::Scoring::SoftmaxTopK, dtypes::float32};
  c.hidden = d;
  c.ffn = f;
  return c;
}

// n random bf16 values in [-scale, scale) as bytes, and the doubles they are.
std::vector<uint8_t> bf16_bytes(size_t n, float scale, std::vector<double>& values) {
  const std::vector<uint16_t> bits = testing::random_bf16(n, -scale, scale, values);
  std::vector<uint8_t> b(n * 2);
  std::memcpy(b.data(), bits.data(), b.size());
  return b;
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void require_emulators() {
  if (testing::emulators().empty()) WEFT_SKIP("built without LLVM 22 (WEFT_LLVM=OFF): no AMDGPU code generator for the emulators");
}

}  // namespace

TEST_CASE("expert-parallel MoE over 4 emulated devices equals the layer on one device bit for bit") {
  require_emulators();
  const std::string target = testing::emulators().front();
  const moe::MoeLayerConfig c = layer_config(32, 8, 2, 64, 64);
  const int64_t T = c.route.tokens, E = c.route.experts, D = c.hidden, F = c.ffn;
  moe::MoeLayerHost host;
  const std::vector<uint8_t> x = bf16_bytes(static_cast<size_t>(T * D), 1.0f, host.x);
  const std::vector<uint8_t> w1 = bf16_bytes(static_cast<size_t>(E * 2 * F * D), 0.125f, host.w1);
  const std::vector<uint8_t> w2 = bf16_bytes(static_cast<size_t>(E * D * F), 0.125f, host.w2);
  const std::vector<uint8_t> logits = float_bytes(testing::random_floats(static_cast<size_t>(T * E), -4.0f, 4.0f));
  const std::vector<uint8_t> poison(static_cast<size_t>(T * D * 2), 0xCD);

  // One device: the layer, checked against the reference of its own plan.
  auto dev = rt::open_device(target);
  const moe::MoeLayer layer(*dev, c);
  const moe::MoeLayerBuffers buffers = moe::allocate_layer(*dev, c);
  const rt::OwnedArray x1(*dev, rt::upload(*dev, dtypes::bfloat16, x, "X")), l1(*dev, rt::upload(*dev, dtypes::float32, logits, "logits"));
  const rt::OwnedArray w11(*dev, rt::upload(*dev, dtypes::bfloat16, w1, "W1")), w21(*dev, rt::upload(*dev, dtypes::bfloat16, w2, "W2"));
  const rt::OwnedArray y1(*dev, rt::upload(*dev, dtypes::bfloat16, poison, "Y"));
  layer.forward(*dev, x1, l1, nullptr, w11, w21, y1, buffers);
  dev->synchronize();
  const std::vector<uint8_t> one = rt::download(*dev, y1);
  const moe::RoutingPlan plan = moe::download_plan(*dev, c.shape(), buffers.plan);
  const moe::MoeLayerReference ref = moe::moe_layer_reference(c, host, plan);
  for (size_t n = 0; n < ref.y.size(); ++n) {
    uint16_t bits = 0;
    std::memcpy(&bits, &one[n * 2], 2);
    REQUIRE(std::abs(static_cast<double>(bf16_to_float(bits)) - ref.y[n]) <= ref.tolerance[n]);
  }

  // Four devices: tokens and experts split, Y gathered.
  rt::Mesh mesh = rt::Mesh::open(target + " x 4");
  const moe::ExpertParallelMoe ep(mesh, c);
  const rt::Sharding split{{0}};
  const rt::ShardedArray xs = rt::distribute(mesh, dtypes::bfloat16, {T, D}, x, split, "X");
  const rt::ShardedArray ls = rt::distribute(mesh, dtypes::float32, {T, E}, logits, split, "logits");
  const rt::ShardedArray w1s = rt::distribute(mesh, dtypes::bfloat16, {E, 2 * F, D}, w1, split, "W1");
  const rt::ShardedArray w2s = rt::distribute(mesh, dtypes::bfloat16, {E, D, F}, w2, split, "W2");
  const rt::ShardedArray ys = rt::distribute(mesh, dtypes::bfloat16, {T, D}, poison, split, "Y");
  ep.forward(mesh, xs, ls, w1s, w2s, ys);
  const std::vector<uint8_t> many = rt::gather(mesh, ys);
  REQUIRE(many.size() == one.size());
  CHECK(std::memcmp(many.data(), one.data(), one.size()) == 0);

  // The comparison can fail: one expert's weight changed on its device changes Y.
  std::vector<uint8_t> w1_changed = w1;
  w1_changed[static_cast<size_t>(E - 1) * 2 * F * D * 2 + 1] ^= 0x40;  // the last expert's first weight, scaled
  const rt::ShardedArray w1c = rt::distribute(mesh, dtypes::bfloat16, {E, 2 * F, D}, w1_changed, split, "W1'");
  ep.forward(mesh, xs, ls, w1c, w2s, ys);
  const std::vector<uint8_t> changed = rt::gather(mesh, ys);
  const bool last_expert_used = std::find(plan.expert_ids.begin(), plan.expert_ids.end(), E - 1) != plan.expert_ids.end();
  if (last_expert_used) CHECK(std::memcmp(changed.data(), one.data(), one.size()) != 0);  // (unused: 1 run in 10^4)

  // What it refuses.
  CHECK_THROWS_WITH_AS(moe::ExpertParallelMoe(mesh, layer_config(30, 8, 2, 64, 64)), doctest::Contains("tokens 30 do not divide over 4 devices"),
                       Error);
  rt::Mesh grid = rt::Mesh::open(target + " x 2x2");
  CHECK_THROWS_WITH_AS(moe::ExpertParallelMoe(grid, c), doctest::Contains("runs over a 1-D mesh"), Error);
  const rt::ShardedArray replicated = rt::reshard(mesh, xs, rt::Sharding::replicated(mesh), "X whole");
  CHECK_THROWS_WITH_AS(ep.forward(mesh, replicated, ls, w1s, w2s, ys), doctest::Contains("X [T, D] must be"), Error);
}
