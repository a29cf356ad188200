// The MoE feed-forward layer (moe/layer.h) end to end on every device at hand: route, align,
// dispatch, the gate/up grouped GEMM, SiLU * up, the down grouped GEMM and combine launched back
// to back, then every stage checked against its reference from the device's own input and Y
// against the double-precision reference of the whole layer (run_moe_layer). Shapes: random
// routing, experts without tokens, T = 1, DeepSeek-V3's grouped sigmoid scoring; weights that
// make the layer the identity give Y = X bit for bit; a perturbed weight must fail the check;
// bad configs and buffers are errors naming them; the activation's code on both vendors.
#include <doctest/doctest.h>

#include <algorithm>

#include "kernels/kernel_harness.h"
#include "occurrences.h"
#include "weft/dsl/error.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/moe/layer.h"
#include "weft/runtime/nvrtc.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/runtime/inspect.h"
#endif

using weft::testing::occurrences;

using namespace weft;

namespace {

moe::MoeLayerConfig softmax_layer(int64_t tokens, int64_t experts, int64_t top_k, int64_t d, int64_t f) {
  moe::MoeLayerConfig c;
  c.route = {tokens, experts, top_k, moe::Scoring::SoftmaxTopK, dtypes::float32};
  c.hidden = d;
  c.ffn = f;
  return c;
}

void check_layer(const moe::MoeLayerConfig& c, const moe::MoeLayerRunOptions& options = {}) {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const uint64_t seed = weft::testing::rng()();
    const gemm::RunResult r = moe::run_moe_layer(*dev, c, seed, nullptr, options);
    INFO("T=", c.route.tokens, " E=", c.route.experts, " k=", c.route.top_k, " D=", c.hidden, " F=", c.ffn, " seed ", seed, ": ",
         r.check.first_bad);
    // At least every element of Y twice (the stage check and the end-to-end one) and of Xs.
    CHECK(r.check.count >= static_cast<size_t>(2 * c.route.tokens * c.hidden + c.shape().max_rows() * c.hidden));
    CHECK(r.check.passed());
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("moe layer: random top-2 routing over 8 experts, T = 37, D = F = 64") { check_layer(softmax_layer(37, 8, 2, 64, 64)); }

WEFT_DEVICE_TEST_CASE("moe layer: experts that receive no token (empty blocks) and ragged F") {
  // Experts 4..7 get no token; F = 40 leaves a masked tail in the activation's rows.
  check_layer(softmax_layer(37, 8, 2, 64, 40), {.empty_experts = true});
}

WEFT_DEVICE_TEST_CASE("moe layer: one token") { check_layer(softmax_layer(1, 8, 2, 64, 64)); }

WEFT_DEVICE_TEST_CASE("moe layer: DeepSeek-V3's grouped sigmoid scoring with bfloat16 logits") {
  moe::MoeLayerConfig c = softmax_layer(20, 16, 4, 32, 32);
  c.route.scoring = moe::Scoring::SigmoidGroupedTopK;
  c.route.logits = dtypes::bfloat16;
  c.route.n_group = 4;
  c.route.topk_group = 2;
  c.route.scaling = 2.5;
  check_layer(c);
}

WEFT_DEVICE_TEST_CASE("moe layer: identity weights give Y = X bit for bit (k = 1)") {
  check_layer(softmax_layer(37, 8, 1, 64, 64), {.identity = true});
}

WEFT_DEVICE_TEST_CASE("moe layer: a perturbed weight fails the check (the check can fail)") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const gemm::RunResult r = moe::run_moe_layer(*dev, softmax_layer(37, 8, 2, 64, 64), weft::testing::rng()(), nullptr, {.perturb_weight = true});
    INFO(r.check.first_bad);
    CHECK_FALSE(r.check.passed());
    CHECK(r.check.first_bad.starts_with("H[row "));  // the gate/up stage is the first to differ
  }
}

WEFT_DEVICE_TEST_CASE("moe layer: forward runs again on the buffers of an earlier forward, giving the same bits") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const moe::MoeLayerConfig c = softmax_layer(45, 8, 2, 32, 16);
    const moe::MoeLayer layer(*dev, c);
    const moe::MoeLayerBuffers b = moe::allocate_layer(*dev, c);
    std::vector<double> values;
    auto random = [&](int64_t n, float scale) {
      return rt::OwnedArray(*dev, weft::testing::put(*dev, dtypes::bfloat16, weft::testing::random_bf16(static_cast<size_t>(n), -scale, scale, values)));
    };
    const rt::OwnedArray x = random(45 * 32, 1.0f), w1 = random(8 * 32 * 32, 0.25f), w2 = random(8 * 32 * 16, 0.25f);
    const rt::OwnedArray logits(*dev, weft::testing::put(*dev, dtypes::float32, weft::testing::random_floats(45 * 8, -4.0f, 4.0f)));
    std::vector<std::vector<uint16_t>> ys;
    for (int run = 0; run < 2; ++run) {
      const rt::OwnedArray y(*dev, weft::testing::poisoned(*dev, dtypes::bfloat16, 45 * 32));
      layer.forward(*dev, x, logits, nullptr, w1, w2, y, b);
      ys.push_back(weft::testing::get<uint16_t>(*dev, y));
    }
    CHECK(std::count(ys[0].begin(), ys[0].end(), uint16_t{0xCDCD}) == 0);  // every element written
    CHECK(ys[0] == ys[1]);
  }
}

WEFT_DEVICE_TEST_CASE("moe layer: wrong buffers are errors naming them, before any launch") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const moe::MoeLayerConfig c = softmax_layer(5, 4, 2, 16, 8);
    const moe::MoeLayer layer(*dev, c);
    const moe::MoeLayerBuffers b = moe::allocate_layer(*dev, c);
    auto bf16 = [&](int64_t n) { return rt::OwnedArray(*dev, weft::testing::poisoned(*dev, dtypes::bfloat16, static_cast<size_t>(n))); };
    const rt::OwnedArray x = bf16(5 * 16), w1 = bf16(4 * 16 * 16), w2 = bf16(4 * 16 * 8), y = bf16(5 * 16), short_w = bf16(4 * 16 * 16 - 1);
    const rt::OwnedArray logits(*dev, weft::testing::poisoned(*dev, dtypes::float32, 5 * 4));
    CHECK_THROWS_WITH_AS(layer.forward(*dev, x, logits, nullptr, short_w, w2, y, b), doctest::Contains("W1 [E, 2F, D] must hold 1024 bfloat16 values, got 1023"), Error);
    CHECK_THROWS_WITH_AS(layer.forward(*dev, x, w2, nullptr, w1, w2, y, b), doctest::Contains("logits [T, E] must hold 20 float32 values"), Error);
    moe::MoeLayerConfig sigmoid = c;
    sigmoid.route.scoring = moe::Scoring::SigmoidGroupedTopK;
    CHECK_THROWS_WITH_AS(moe::MoeLayer(*dev, sigmoid).forward(*dev, x, logits, nullptr, w1, w2, y, b), doctest::Contains("needs the correction bias"), Error);
    // Buffers of another config.
    const moe::MoeLayerBuffers other = moe::allocate_layer(*dev, softmax_layer(5, 4, 2, 16, 16));
    CHECK_THROWS_WITH_AS(layer.forward(*dev, x, logits, nullptr, w1, w2, y, other), doctest::Contains("H [max_rows, 2F] must hold"), Error);
  }
}

TEST_CASE("moe layer: configs it cannot take are errors naming the field") {
  CHECK_THROWS_WITH_AS(softmax_layer(37, 8, 2, 60, 64).validate(), doctest::Contains("hidden (D) must be a multiple of 8"), Error);
  CHECK_THROWS_WITH_AS(softmax_layer(37, 8, 2, 64, 0).validate(), doctest::Contains("ffn (F) must be a multiple of 8"), Error);
  CHECK_THROWS_WITH_AS(softmax_layer(37, 8, 2, 64, 65536).validate(), doctest::Contains("ffn (F) must be a multiple of 8 in [8, 32768]"), Error);
  CHECK_THROWS_WITH_AS(softmax_layer(0, 8, 2, 64, 64).validate(), doctest::Contains("tokens"), Error);
  CHECK_THROWS_WITH_AS(softmax_layer(37, 8, 9, 64, 64).validate(), doctest::Contains("top_k"), Error);
  moe::MoeLayerConfig c = softmax_layer(37, 8, 2, 64, 64);
  c.block_rows = 100;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("block_rows"), Error);
}

TEST_CASE("moe silu_mul renders to CUDA C++ that NVRTC compiles for sm_90, in 16-byte vectors (F = 4096 and F = 40)") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (int64_t f : {4096, 40}) {
    CAPTURE(f);
    lower::LowerOptions options;
    options.wave_size = 32;
    const auto lowered = lower::lower(moe::silu_mul_kernel(f), options);
    const std::string src = cuda::render_cuda(lowered, 90);
    INFO(src);
    if (f == 4096) {  // 256 lanes x 2 steps of 8 elements: gate and up loads, one store each step
      CHECK(occurrences(src, "*reinterpret_cast<const weft_") == 4);
      CHECK(occurrences(src, "*reinterpret_cast<weft_") == 2);
    }
    CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
  }
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("moe silu_mul moves rows in 16-byte vectors (AMD: global_load_dwordx4, global_store_dwordx4)") {
  for (const std::string target : {"gfx950", "gfx942"}) {
    CAPTURE(target);
    const rt::KernelStages s = rt::inspect(moe::silu_mul_kernel(4096), target);
    INFO(s.assembly);
    CHECK(occurrences(s.assembly, "global_load_dwordx4") == 4);  // gate and up, 2 steps
    CHECK(occurrences(s.assembly, "global_store_dwordx4") == 2);
    CHECK(occurrences(s.assembly, "global_load_ushort") == 0);
    CHECK(occurrences(s.assembly, "global_store_short") == 0);
    CHECK(occurrences(s.assembly, "v_exp_f32") >= 1);
  }
}
#endif
