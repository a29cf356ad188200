// The routing plan's host reference against its definition (moe/plan.h), checked by its
// invariants on random routings rather than by hand-written expected plans.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kernels/kernel_harness.h"
#include "weft/dsl/error.h"
#include "weft/moe/plan.h"

using namespace weft;

namespace {

// k distinct experts per token, drawn uniformly (or all from the first k experts, `skewed`).
std::vector<int32_t> random_choices(const moe::MoeShape& s, bool skewed) {
  std::vector<int32_t> ids;
  std::vector<int32_t> experts(static_cast<size_t>(s.experts));
  std::iota(experts.begin(), experts.end(), 0);
  for (int64_t t = 0; t < s.tokens; ++t) {
    if (!skewed) std::shuffle(experts.begin(), experts.end(), weft::testing::rng());
    ids.insert(ids.end(), experts.begin(), experts.begin() + s.top_k);
  }
  return ids;
}

void check_plan(const moe::MoeShape& s, const moe::RoutingPlan& p) {
  const int64_t B = s.block_rows;
  CHECK(p.offsets.front() == 0);
  for (int64_t e = 0; e < s.experts; ++e) {
    const int32_t lo = p.offsets[static_cast<size_t>(e)], hi = p.offsets[static_cast<size_t>(e + 1)];
    CHECK(lo % B == 0);
    CHECK(hi - lo == (p.counts[static_cast<size_t>(e)] + B - 1) / B * B);
    for (int32_t r = lo; r < hi; r += static_cast<int32_t>(B)) CHECK(p.block_expert[static_cast<size_t>(r / B)] == e);
  }
  CHECK(p.offsets.back() <= s.max_rows());
  std::vector<int> seen(static_cast<size_t>(s.max_rows()), 0);
  for (int64_t c = 0; c < s.choices(); ++c) {
    const int32_t r = p.dest_row[static_cast<size_t>(c)], e = p.expert_ids[static_cast<size_t>(c)];
    REQUIRE(r >= p.offsets[static_cast<size_t>(e)]);
    REQUIRE(r < p.offsets[static_cast<size_t>(e)] + p.counts[static_cast<size_t>(e)]);
    CHECK(++seen[static_cast<size_t>(r)] == 1);
    CHECK(p.row_token[static_cast<size_t>(r)] == c / s.top_k);
    CHECK(p.row_weight[static_cast<size_t>(r)] == p.weights[static_cast<size_t>(c)]);
    if (c > 0 && p.expert_ids[static_cast<size_t>(c - 1)] == e) CHECK(p.dest_row[static_cast<size_t>(c - 1)] < r);  // stable
  }
  for (size_t r = 0; r < seen.size(); ++r)
    if (!seen[r]) CHECK(p.row_token[r] == -1);
}

}  // namespace

TEST_CASE("plan_reference: offsets padded to the row block, stable destination rows, padding marked") {
  for (auto [T, E, k, skewed] : {std::tuple{1, 8, 1, false}, {300, 8, 2, false}, {257, 64, 8, false}, {100, 512, 8, false},
                                 {513, 16, 4, true}}) {
    moe::MoeShape s{T, E, k, 128};
    CAPTURE(T);
    CAPTURE(E);
    CAPTURE(k);
    auto ids = random_choices(s, skewed);
    auto w = weft::testing::random_floats(static_cast<size_t>(s.choices()), 0.0f, 1.0f);
    check_plan(s, moe::plan_reference(s, ids, w));
  }
}

TEST_CASE("plan_reference: bad shapes and bad expert ids are errors that say what is wrong") {
  CHECK_THROWS_WITH_AS(moe::MoeShape({0, 8, 2, 128}).validate(), doctest::Contains("tokens must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(moe::MoeShape({4, 8, 9, 128}).validate(), doctest::Contains("top_k must lie in [1, experts = 8]"), Error);
  CHECK_THROWS_WITH_AS(moe::MoeShape({4, 8, 2, 100}).validate(), doctest::Contains("block_rows must be a power of two"), Error);
  moe::MoeShape s{2, 4, 2, 16};
  CHECK_THROWS_WITH_AS(moe::plan_reference(s, {0, 1, 2, 4}, {1, 1, 1, 1}), doctest::Contains("expert id 4 of choice (1, 1)"), Error);
  CHECK_THROWS_WITH_AS(moe::plan_reference(s, {0, 1, 3, 3}, {1, 1, 1, 1}), doctest::Contains("token 1 chooses expert 3 twice"), Error);
  CHECK_THROWS_WITH_AS(moe::plan_reference(s, {0, 1, 3}, {1, 1, 1}), doctest::Contains("tokens * top_k = 4"), Error);
}

TEST_CASE("random_plan: k distinct experts per token, weights from 0 to 1, the plan of plan_reference, skew puts every token on experts 0..k-1") {
  for (bool skew : {false, true}) {
    CAPTURE(skew);
    const moe::MoeShape s{301, 16, 4, 64};
    const moe::RoutingPlan p = moe::random_plan(s, weft::testing::rng(), skew);
    REQUIRE(p.expert_ids.size() == static_cast<size_t>(s.choices()));
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t j = 0; j < s.top_k; ++j) {
        const int32_t e = p.expert_ids[static_cast<size_t>(t * s.top_k + j)];
        CHECK((skew ? e == j : (e >= 0 && e < s.experts)));
        for (int64_t i = 0; i < j; ++i) CHECK(p.expert_ids[static_cast<size_t>(t * s.top_k + i)] != e);
      }
    for (float w : p.weights) CHECK((w >= 0.0f && w < 1.0f));
    check_plan(s, p);
    const moe::RoutingPlan again = moe::plan_reference(s, p.expert_ids, p.weights);
    CHECK(again.dest_row == p.dest_row);
    CHECK(again.block_expert == p.block_expert);
  }
}
