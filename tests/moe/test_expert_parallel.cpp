// The expert-parallel MoE layer (moe/expert_parallel.h) on a mesh of 4 emulated devices (and over
// the GPUs at hand): tokens and experts split over the devices, two all-to-alls, and Y equal bit for bit to MoeLayer's on
// one device, which is itself checked against the double-precision reference of the layer
// (run_moe_layer with MoeLayerRunOptions::expert_parallel); a changed expert weight changes Y;
// the configs and arrays it refuses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernel_harness.h"
#include "weft/gemm/matmul_relu.h"
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
  rt::Mesh mesh = rt::Mesh::open(target + " x 4");
  // The layer on device 0, checked stage by stage and end to end against the double-precision
  // reference, then expert-parallel over the mesh on the same inputs, its Y against device 0's.
  const uint64_t seed = testing::rng()();
  CAPTURE(seed);
  const gemm::RunResult r = moe::run_moe_layer(mesh.device(0), layer_config(32, 8, 2, 64, 64), seed, nullptr, {.expert_parallel = &mesh});
  INFO(r.check.first_bad);
  CHECK(r.check.passed());
}

// Over every GPU here, the all-to-alls through NCCL where it loads, through host memory where it
// does not (the message says which; one lent GPU: a mesh of one, whose all-to-alls are sends to
// itself).
TEST_CASE("expert-parallel MoE over the GPUs at hand equals the layer on one GPU bit for bit [cuda]") {
  WEFT_REQUIRE_CUDA();
  rt::Mesh mesh = testing::all_gpus();
  const moe::MoeLayerConfig c = layer_config(32 * static_cast<int64_t>(mesh.size()), 8 * static_cast<int64_t>(mesh.size()), 2, 64, 64);
  MESSAGE("all-to-alls over " << mesh.name() << ": " << rt::Collectives::open(mesh)->backend());
  const uint64_t seed = testing::rng()();
  CAPTURE(seed);
  const gemm::RunResult r = moe::run_moe_layer(mesh.device(0), c, seed, nullptr, {.expert_parallel = &mesh});
  INFO(r.check.first_bad);
  CHECK(r.check.passed());
}

TEST_CASE("expert-parallel MoE: the comparison can fail, and what it refuses") {
  require_emulators();
  const std::string target = testing::emulators().front();
  rt::Mesh mesh = rt::Mesh::open(target + " x 4");
  const moe::MoeLayerConfig c = layer_config(32, 8, 2, 64, 64);
  const int64_t T = c.route.tokens, E = c.route.experts, D = c.hidden, F = c.ffn;
  std::vector<double> unused;
  const std::vector<uint8_t> x = bf16_bytes(static_cast<size_t>(T * D), 1.0f, unused);
  const std::vector<uint8_t> w1 = bf16_bytes(static_cast<size_t>(E * 2 * F * D), 0.125f, unused);
  const std::vector<uint8_t> w2 = bf16_bytes(static_cast<size_t>(E * D * F), 0.125f, unused);
  // Every token on expert E-1 (and another): a change to E-1's weights must show in Y.
  std::vector<float> logit_values = testing::random_floats(static_cast<size_t>(T * E), -4.0f, 4.0f);
  for (int64_t t = 0; t < T; ++t) logit_values[static_cast<size_t>(t * E + E - 1)] = 10.0f;
  const std::vector<uint8_t> logits = float_bytes(logit_values);
  const rt::Sharding split{{0}};
  const moe::ExpertParallelMoe ep(mesh, c);
  CHECK(ep.collectives().starts_with("host (NCCL not used: device emu:"));
  const rt::ShardedArray xs = rt::distribute(mesh, dtypes::bfloat16, {T, D}, x, split, "X");
  const rt::ShardedArray ls = rt::distribute(mesh, dtypes::float32, {T, E}, logits, split, "logits");
  const rt::ShardedArray w2s = rt::distribute(mesh, dtypes::bfloat16, {E, D, F}, w2, split, "W2");
  const rt::ShardedArray ys = rt::distribute(mesh, dtypes::bfloat16, {T, D}, std::vector<uint8_t>(static_cast<size_t>(T * D * 2), 0xCD), split, "Y");
  const auto y_with = [&](const std::vector<uint8_t>& w1_bytes) {
    const rt::ShardedArray w1s = rt::distribute(mesh, dtypes::bfloat16, {E, 2 * F, D}, w1_bytes, split, "W1");
    ep.forward(mesh, xs, ls, w1s, w2s, ys);
    rt::release(mesh, w1s);
    return rt::gather(mesh, ys);
  };
  const std::vector<uint8_t> before = y_with(w1);
  std::vector<uint8_t> w1_changed = w1;
  w1_changed[static_cast<size_t>((E - 1) * 2 * F * D * 2 + 1)] ^= 0x40;  // expert E-1's first gate weight, rescaled
  CHECK(std::memcmp(y_with(w1_changed).data(), before.data(), before.size()) != 0);
  CHECK(y_with(w1) == before);  // and the same inputs give the same bits again

  CHECK_THROWS_WITH_AS(moe::ExpertParallelMoe(mesh, layer_config(30, 8, 2, 64, 64)), doctest::Contains("tokens 30 do not divide over 4 devices"),
                       Error);
  rt::Mesh grid = rt::Mesh::open(target + " x 2x2");
  CHECK_THROWS_WITH_AS(moe::ExpertParallelMoe(grid, c), doctest::Contains("runs over a 1-D mesh"), Error);
  const rt::ShardedArray replicated = rt::reshard(mesh, xs, rt::Sharding::replicated(mesh), "X whole");
  const rt::ShardedArray w1s = rt::distribute(mesh, dtypes::bfloat16, {E, 2 * F, D}, w1, split, "W1");
  CHECK_THROWS_WITH_AS(ep.forward(mesh, replicated, ls, w1s, w2s, ys), doctest::Contains("X [T, D] must be"), Error);
}
