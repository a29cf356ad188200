// The align kernels on every device at hand, bit for bit against plan_reference (align.h):
// T = 1 and T not a multiple of the chunk, E from 8 to 512, k 1..8, row blocks of 128 and 256,
// one expert taking every token, most experts taking none.
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/moe/router.h"

using namespace weft;
using moe::AlignInputs;
using moe::MoeShape;

namespace {

void check_align_runs(const MoeShape& s, AlignInputs inputs) {
  for (const std::string& target : weft::testing::devices()) {
    auto dev = rt::open_device(target);
    const uint64_t seed = weft::testing::rng()();
    CAPTURE(target);
    CAPTURE(seed);
    CAPTURE(s.tokens);
    CAPTURE(s.experts);
    CAPTURE(s.top_k);
    CAPTURE(s.block_rows);
    CAPTURE(static_cast<int>(inputs));
    const gemm::RunResult r = moe::run_align(*dev, s, seed, nullptr, inputs);
    INFO(r.check.first_bad);
    CHECK(r.check.passed());
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("align: stable plans, bit for bit, for uniform choices") {
  check_align_runs({1, 8, 1, 128}, AlignInputs::Uniform);
  check_align_runs({1, 512, 8, 256}, AlignInputs::Uniform);
  check_align_runs({45, 64, 8, 128}, AlignInputs::Uniform);  // 360 choices: two chunks, the second ragged
  check_align_runs({300, 256, 2, 256}, AlignInputs::Uniform);
  check_align_runs({1100, 64, 8, 128}, AlignInputs::Uniform);  // 8800 choices: three spans, chunks past the first of a span
  check_align_runs({600, 512, 8, 128}, AlignInputs::Uniform);   // two experts a thread in align_place's sums, over two spans
  check_align_runs({1100, 384, 8, 256}, AlignInputs::Uniform);  // E not a multiple of the workgroup: some threads' second expert past E
  // Two spans and 32 chunks, the last of each ragged; four spans and 64 chunks, whole and then
  // ragged; 20 spans and 316 chunks: align_place's span rows in two rounds, the second partial.
  check_align_runs({1000, 256, 8, 128}, AlignInputs::Uniform);
  check_align_runs({2048, 64, 8, 128}, AlignInputs::Uniform);
  check_align_runs({2036, 64, 8, 128}, AlignInputs::Uniform);
  check_align_runs({10112, 64, 8, 128}, AlignInputs::Uniform);
}

WEFT_DEVICE_TEST_CASE("align: one expert takes every token, or most experts take none") {
  check_align_runs({333, 16, 1, 128}, AlignInputs::OneExpert);
  check_align_runs({100, 64, 8, 128}, AlignInputs::OneExpert);
  check_align_runs({77, 512, 2, 256}, AlignInputs::FewExperts);
  check_align_runs({2500, 8, 2, 128}, AlignInputs::OneExpert);  // 5000 choices of one expert over two spans
}

TEST_CASE("align: bad shapes are errors naming the field") {
  CHECK_THROWS_WITH_AS(moe::align_count({0, 8, 1, 128}), doctest::Contains("tokens must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(moe::align_place({4, 8, 9, 128}, "gfx950"), doctest::Contains("top_k must lie in [1, experts = 8]"), Error);
  CHECK_THROWS_WITH_AS(moe::align_place({4, 8, 2, 96}, "sm_90"), doctest::Contains("block_rows must be a power of two"), Error);
  CHECK_THROWS_WITH_AS(moe::align_place({4, 8, 2, 128}, "gfx90a"), doctest::Contains("no wave width for target 'gfx90a'"), Error);
  CHECK(moe::align_workspace({300, 64, 2, 128}) == 2 * (1 + 3) * 64 + 2);  // two histograms of 1 span row and 3 chunk rows; the two parities
  CHECK(moe::align_workspace({2049, 64, 2, 128}) == 2 * (2 + 17) * 64 + 2);
}

WEFT_DEVICE_TEST_CASE("route then align on device buffers: the plan of the routed choices, bit for bit, twice on the same buffers") {
  for (const std::string& target : weft::testing::devices()) {
    auto dev = rt::open_device(target);
    const uint64_t seed = weft::testing::rng()();
    CAPTURE(target);
    CAPTURE(seed);
    const moe::RouteConfig grouped{37, 64, 8, moe::Scoring::SigmoidGroupedTopK, dtypes::bfloat16, 4, 2, true, 2.5};
    const moe::RouteConfig softmax{70, 8, 2, moe::Scoring::SoftmaxTopK, dtypes::float32};
    const moe::RouteConfig spans{1100, 64, 8, moe::Scoring::SoftmaxTopK, dtypes::bfloat16};  // 8800 choices: 3 spans, 35 workgroups
    // 16 lanes a token for k = 2 (14 write no choice), T*k exactly one chunk
    const moe::RouteConfig wide{128, 512, 2, moe::Scoring::SoftmaxTopK, dtypes::bfloat16};
    for (const auto& [config, rows] : {std::pair{grouped, int64_t{128}}, std::pair{softmax, int64_t{256}}, std::pair{spans, int64_t{128}},
                                       std::pair{wide, int64_t{128}}}) {
      CAPTURE(config.tokens);
      const gemm::RunResult r = moe::run_router(*dev, config, rows, seed);
      INFO(r.check.first_bad);
      CHECK(r.check.passed());
    }
  }
}

TEST_CASE("compare_plans finds a single wrong bit") {
  const MoeShape s{5, 8, 2, 16};
  const moe::RoutingPlan want = moe::plan_reference(s, {0, 1, 2, 3, 1, 0, 7, 6, 5, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(moe::compare_plans(want, want).passed());
  moe::RoutingPlan got = want;
  got.row_weight[3] = -got.row_weight[3];
  CHECK_FALSE(moe::compare_plans(got, want).passed());
  got = want;
  got.block_expert.back() = 0;
  CHECK(moe::compare_plans(got, want).first_bad.find("block_expert") != std::string::npos);
}
