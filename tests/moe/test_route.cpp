// The route kernel on every device at hand against its double-precision reference (route.h):
// both scorings, float32 and bfloat16 logits, E from 8 to 512, k from 1 to 8, exact ties and
// NaN logits; and the checks of its configuration.
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/dsl/print.h"
#include "weft/lowering/pipeline.h"
#include "weft/moe/route.h"

using namespace weft;
using moe::RouteConfig;
using moe::RouteInputs;
using moe::Scoring;

namespace {

const char* inputs_name(RouteInputs i) {
  switch (i) {
    case RouteInputs::Random: return "random";
    case RouteInputs::Quantized: return "quantized";
    case RouteInputs::WithNaN: return "nan";
    case RouteInputs::SignedZeros: return "signed zeros";
    case RouteInputs::Extremes: return "extremes";
  }
  return "?";
}

void check_route_runs(const RouteConfig& c, RouteInputs inputs) {
  for (const std::string& target : weft::testing::devices()) {
    auto dev = rt::open_device(target);
    const uint64_t seed = weft::testing::rng()();
    CAPTURE(target);
    CAPTURE(seed);
    CAPTURE(c.tokens);
    CAPTURE(c.experts);
    CAPTURE(c.top_k);
    CAPTURE(c.logits.name());
    const std::string inputs_label = inputs_name(inputs);
    CAPTURE(inputs_label);
    const gemm::RunResult r = moe::run_route(*dev, c, seed, nullptr, inputs);
    INFO(r.check.first_bad);
    CHECK(r.check.passed());
  }
}

RouteConfig softmax(int64_t T, int64_t E, int64_t k, DType dt) { return {T, E, k, Scoring::SoftmaxTopK, dt}; }
RouteConfig grouped(int64_t T, int64_t E, int64_t k, DType dt, int64_t n_group, int64_t topk_group, bool normalize = true, double scaling = 2.5) {
  return {T, E, k, Scoring::SigmoidGroupedTopK, dt, n_group, topk_group, normalize, scaling};
}

}  // namespace

WEFT_DEVICE_TEST_CASE("route, softmax top-k: E 8..512, k 1..8, float32 and bfloat16 logits, T = 1 and ragged T") {
  check_route_runs(softmax(1, 8, 1, dtypes::float32), RouteInputs::Random);
  check_route_runs(softmax(7, 8, 8, dtypes::bfloat16), RouteInputs::Random);
  check_route_runs(softmax(13, 64, 2, dtypes::float32), RouteInputs::Random);
  check_route_runs(softmax(9, 256, 8, dtypes::bfloat16), RouteInputs::Random);
  check_route_runs(softmax(5, 512, 2, dtypes::float32), RouteInputs::Random);
  check_route_runs(softmax(4, 512, 8, dtypes::bfloat16), RouteInputs::Random);  // 32-bit keys, 8 or 16 a lane
  check_route_runs(softmax(11, 128, 6, dtypes::bfloat16), RouteInputs::Random);  // k not a power of two: lists padded to 8
  check_route_runs(softmax(6, 32, 3, dtypes::float32), RouteInputs::Random);     // 4 lanes, lists of 4
  check_route_runs(softmax(5, 64, 4, dtypes::bfloat16), RouteInputs::Random);
  check_route_runs(softmax(5, 160, 5, dtypes::float32), RouteInputs::Random);
  check_route_runs(softmax(3, 40, 7, dtypes::bfloat16), RouteInputs::Random);
  check_route_runs(softmax(5, 6, 5, dtypes::float32), RouteInputs::Random);     // 8 lanes, two past E
}

WEFT_DEVICE_TEST_CASE("route, softmax top-k: exact ties (signed zeros too) go to the lower id, NaN logits rank last and weigh 0") {
  check_route_runs(softmax(11, 64, 8, dtypes::bfloat16), RouteInputs::Quantized);
  check_route_runs(softmax(6, 8, 2, dtypes::float32), RouteInputs::Quantized);
  check_route_runs(softmax(15, 64, 8, dtypes::float32), RouteInputs::WithNaN);
  check_route_runs(softmax(9, 8, 8, dtypes::bfloat16), RouteInputs::WithNaN);
  check_route_runs(softmax(7, 256, 8, dtypes::bfloat16), RouteInputs::WithNaN);
  check_route_runs(softmax(12, 256, 6, dtypes::bfloat16), RouteInputs::Quantized);
  check_route_runs(softmax(10, 64, 8, dtypes::bfloat16), RouteInputs::SignedZeros);  // -0 and +0 tie
  check_route_runs(softmax(10, 64, 8, dtypes::float32), RouteInputs::SignedZeros);
}

WEFT_DEVICE_TEST_CASE("route, softmax top-k: infinities, NaN of either sign, subnormals and the largest values rank as numbers do") {
  check_route_runs(softmax(13, 256, 8, dtypes::bfloat16), RouteInputs::Extremes);  // 32 experts a lane, 16-byte loads
  check_route_runs(softmax(9, 100, 3, dtypes::bfloat16), RouteInputs::Extremes);   // E with no vector width: strided ids
  check_route_runs(softmax(11, 64, 8, dtypes::float32), RouteInputs::Extremes);
}

WEFT_DEVICE_TEST_CASE("route, sigmoid grouped top-k (DeepSeek-V3): groups within a wave, across slots, one group") {
  check_route_runs(grouped(9, 256, 8, dtypes::bfloat16, 8, 4), RouteInputs::Random);      // groups of 32: 8 lanes, 4 slots each
  check_route_runs(grouped(5, 512, 8, dtypes::float32, 4, 2, false, 1.0), RouteInputs::Random);  // groups of 128: 16 lanes, 8 slots
  check_route_runs(grouped(5, 512, 8, dtypes::bfloat16, 2, 1), RouteInputs::Random);     // 16-byte logit vectors, bias in two
  check_route_runs(grouped(4, 96, 8, dtypes::bfloat16, 3, 2), RouteInputs::Random);      // E not a power of two
  check_route_runs(grouped(3, 8, 1, dtypes::float32, 4, 2), RouteInputs::Random);         // groups of 2: one lane a token
  check_route_runs(grouped(7, 64, 8, dtypes::float32, 16, 5), RouteInputs::Random);       // groups of 4 < 8 lanes: a whole wave
  check_route_runs(grouped(6, 64, 2, dtypes::float32, 1, 1), RouteInputs::Random);        // no group stage
  check_route_runs(grouped(5, 12, 4, dtypes::float32, 1, 1), RouteInputs::Random);        // one group, 3 experts a lane
  check_route_runs(grouped(4, 40, 8, dtypes::bfloat16, 1, 1), RouteInputs::Random);       // one group, E not a multiple of 8 v
  check_route_runs(grouped(3, 6, 5, dtypes::float32, 1, 1), RouteInputs::Random);         // one group, lanes past E
  check_route_runs(grouped(6, 64, 4, dtypes::bfloat16, 4, 4), RouteInputs::Random);       // every group kept
  check_route_runs(grouped(5, 16, 8, dtypes::float32, 8, 4), RouteInputs::Random);        // groups of 2 in a wave, lanes past E
}

WEFT_DEVICE_TEST_CASE("route, sigmoid grouped top-k: ties and NaN logits") {
  check_route_runs(grouped(10, 256, 8, dtypes::bfloat16, 8, 4), RouteInputs::Quantized);
  check_route_runs(grouped(15, 64, 8, dtypes::float32, 4, 2), RouteInputs::WithNaN);
  check_route_runs(grouped(8, 8, 2, dtypes::float32, 2, 1), RouteInputs::WithNaN);
  check_route_runs(grouped(9, 64, 8, dtypes::float32, 16, 5), RouteInputs::Quantized);    // groups narrower than the lanes
  check_route_runs(grouped(9, 64, 8, dtypes::bfloat16, 16, 5), RouteInputs::WithNaN);
}

// route_counting gives a token W lanes, W >= k; only the k that write a choice add into align's
// histograms. (Until session 34 the spare lanes added 0 to one shared counter, which serialized
// them on that address: a kernel 10x slower with 16 lanes a token, and the same plan.)
TEST_CASE("route_counting: only the lanes that write a choice add into the histograms") {
  for (const int64_t wave : {int64_t{32}, int64_t{64}}) {
    for (const RouteConfig& c : {RouteConfig{4096, 256, 2, Scoring::SoftmaxTopK, dtypes::bfloat16},
                                 RouteConfig{4096, 256, 4, Scoring::SigmoidGroupedTopK, dtypes::bfloat16, 8, 4}}) {  // both 8 lanes a token
      CAPTURE(wave);
      CAPTURE(c.top_k);
      lower::LowerOptions options;
      options.wave_size = wave;
      const lower::LoweredKernel k = lower::lower(moe::route_counting(c, wave == 32 ? "sm_90" : "gfx950"), options);
      int64_t atomics = 0;
      for (const lower::LinearOp& step : k.program) {
        if (step.op.op() != Op::ATOMIC) continue;
        ++atomics;
        const UOp index = step.op.src(0);
        INFO(graph_string(index));
        REQUIRE(index.op() == Op::INDEX);
        REQUIRE(index.src().size() > 2);  // a validity: the lane writes a choice
        CHECK_FALSE(index.src(2).op() == Op::CONST);
      }
      CHECK(atomics == 2);  // its span's row and its chunk's row
    }
  }
}

TEST_CASE("route: the reference follows the NaN and tie rules of route.h") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // All NaN: the lowest ids, equal weights. Ties: the lower id. +inf shares the weight it limits to.
  const RouteConfig c = softmax(3, 8, 2, dtypes::float32);
  const std::vector<double> x{nan, nan, nan, nan, nan, nan, nan, nan,  // token 0
                              1, 3, 3, nan, 0, 3, -inf, 2,             // token 1
                              inf, 0, nan, inf, 1, 2, 3, 4};           // token 2
  const moe::RouteResult r = moe::route_reference(c, x, {});
  CHECK(r.expert_ids == std::vector<int32_t>{0, 1, 1, 2, 0, 3});
  CHECK(r.weights == std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  // The check rejects a wrong id, a swapped tie and a NaN weight.
  std::vector<float> w(r.weights.begin(), r.weights.end());
  CHECK(moe::check_route(c, x, {}, r.expert_ids, w).passed());
  CHECK_FALSE(moe::check_route(c, x, {}, {0, 1, 2, 1, 0, 3}, w).passed());  // a tie out of id order
  CHECK_FALSE(moe::check_route(c, x, {}, {0, 1, 1, 5, 0, 3}, w).passed());  // a tie to the higher id
  CHECK_FALSE(moe::check_route(c, x, {}, {0, 2, 1, 2, 0, 3}, w).passed());  // NaNs out of id order
  CHECK_FALSE(moe::check_route(c, x, {}, {0, 1, 1, 7, 0, 3}, w).passed());  // not the top 2
  CHECK_FALSE(moe::check_route(c, x, {}, {0, 1, 1, 13, 0, 3}, w).passed());
  w[1] = static_cast<float>(nan);
  CHECK_FALSE(moe::check_route(c, x, {}, r.expert_ids, w).passed());
}

TEST_CASE("route: bad configurations are errors naming the field") {
  auto fails = [](RouteConfig c, const char* what) {
    CAPTURE(what);
    CHECK_THROWS_WITH_AS(moe::route(c, "gfx950"), doctest::Contains(what), Error);
  };
  fails(softmax(0, 8, 2, dtypes::float32), "tokens must be >= 1");
  fails(softmax(4, 513, 2, dtypes::float32), "experts must lie in [1, 512]");
  fails(softmax(4, 64, 9, dtypes::float32), "top_k must lie in [1, min(8, experts)]");
  fails(softmax(4, 4, 5, dtypes::float32), "top_k must lie in [1, min(8, experts)]");
  fails(softmax(4, 64, 2, dtypes::float16), "logits are float32 or bfloat16");
  fails(grouped(4, 64, 2, dtypes::float32, 3, 1), "n_group must divide experts");
  fails(grouped(4, 96, 2, dtypes::float32, 2, 1), "a group holds a power of two >= 2 experts");
  fails(grouped(4, 64, 2, dtypes::float32, 4, 5), "topk_group must lie in [1, n_group = 4]");
  fails(grouped(4, 16, 8, dtypes::float32, 8, 2), "top_k = 8 exceeds the experts of the kept groups, 4");
  CHECK_THROWS_WITH_AS(moe::route(softmax(4, 64, 2, dtypes::float32), "gfx90a"), doctest::Contains("no schedule for target 'gfx90a'"), Error);
}
