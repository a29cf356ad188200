// dispatch, combine and their backward (moe/permute.h) on every device at hand, against host
// references in double: dispatch bit for bit (and its fp8 quantization), combine and the
// gather-sums within their rounding and bit-identical run to run, the combine backward against
// the analytic gradients. Shapes: experts without tokens, every token on one set of experts,
// T = 1, T not a multiple of any block, k in {1, 2, 8}, E up to 512, D not a multiple of the
// 16-byte vector.
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/moe/permute.h"

using namespace weft;

namespace {

struct Case {
  int64_t tokens, experts, top_k, block_rows, d;
  bool skew;
};

// Small enough for the emulator: a few thousand rows of at most a few hundred elements.
const Case kCases[] = {
    {1, 8, 1, 16, 64, false},     // one token
    {37, 8, 2, 16, 100, false},   // T and D ragged (bfloat16 vectors of 4)
    {50, 16, 8, 16, 24, false},   // k = 8
    {20, 512, 8, 16, 8, false},   // E = 512: most experts get no rows
    {33, 16, 2, 32, 136, true},   // every token on experts 0 and 1
    {9, 4, 3, 16, 7, false},      // D odd: one element per access
};

void check_case(const char* what, const Case& c, const gemm::RunResult& r) {
  const std::string name = std::string(what) + " T=" + std::to_string(c.tokens) + " E=" + std::to_string(c.experts) +
                           " k=" + std::to_string(c.top_k) + " B=" + std::to_string(c.block_rows) + " D=" + std::to_string(c.d) +
                           (c.skew ? " skewed" : "") + ": " + r.check.first_bad;
  INFO(name);
  CHECK(r.check.passed());
}

template <class Run>
void for_every_case(const char* what, const Run& run) {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    for (const Case& c : kCases) {
      const moe::MoeShape s{c.tokens, c.experts, c.top_k, c.block_rows};
      for (DType dt : {dtypes::bfloat16, dtypes::float32}) {
        CAPTURE(dt.name());
        check_case(what, c, run(*dev, s, c, dt, weft::testing::rng()()));
      }
    }
  }
}

}  // namespace

WEFT_DEVICE_TEST_CASE("moe dispatch: rows gathered into expert order, zeros for padding, bit for bit") {
  for_every_case("dispatch", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_dispatch(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew});
  });
}

WEFT_DEVICE_TEST_CASE("moe dispatch to fp8 e4m3: per-row scales and codes equal the host quantization bit for bit") {
  for_every_case("dispatch fp8", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_dispatch(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew, .fp8 = true});
  });
}

WEFT_DEVICE_TEST_CASE("moe combine: the weighted sum over each token's k rows, and the same bits on a second run") {
  for_every_case("combine", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_combine(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew});
  });
}

WEFT_DEVICE_TEST_CASE("moe dispatch backward: the gather-sum, and the opt-in atomic scatter-add") {
  for_every_case("dispatch backward", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_dispatch_backward(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew});
  });
  for_every_case("dispatch backward (atomic)", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_dispatch_backward(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew, .atomic = true});
  });
}

WEFT_DEVICE_TEST_CASE("moe combine backward: expert-row gradients and routing-weight gradients against the analytic ones") {
  for_every_case("combine backward", [](rt::Device& dev, const moe::MoeShape& s, const Case& c, DType dt, uint64_t seed) {
    return moe::run_combine_backward(dev, s, c.d, dt, seed, nullptr, {.skew = c.skew});
  });
}

namespace {
doctest::Contains contains(const std::string& s) { return doctest::Contains(doctest::String(s.c_str())); }
}  // namespace

TEST_CASE("moe permute kernels: bad shapes, dtypes and mismatched buffers are errors that name them") {
  CHECK_THROWS_WITH_AS(moe::dispatch_kernel(0, dtypes::bfloat16), doctest::Contains("the row length D must be >= 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(moe::dispatch_kernel(64, dtypes::float16), doctest::Contains("rows are bfloat16 or float32, not float16"), Error);
  CHECK_THROWS_WITH_AS(moe::dispatch_fp8_kernel(64, dtypes::bfloat16, dtypes::fp8e5m2), doctest::Contains("float8_e4m3 or float8_e4m3fnuz, not float8_e5m2"), Error);
  CHECK_THROWS_WITH_AS(moe::combine_kernel(64, 0, dtypes::bfloat16, dtypes::bfloat16), doctest::Contains("top_k must lie in [1, 64], got 0"), Error);
  if (weft::testing::emulators().empty()) return;
  auto dev = rt::open_device("emu:gfx950");
  using weft::testing::poisoned;
  const moe::MoeShape s{4, 8, 2, 16};
  const int64_t R = s.max_rows(), d = 32;
  const rt::OwnedArray x(*dev, poisoned(*dev, dtypes::bfloat16, 4 * d)), xs(*dev, poisoned(*dev, dtypes::bfloat16, R * d)),
      short_xs(*dev, poisoned(*dev, dtypes::bfloat16, (R - 1) * d)), tokens(*dev, poisoned(*dev, dtypes::int32, R)),
      dest(*dev, poisoned(*dev, dtypes::int32, 8)), w(*dev, poisoned(*dev, dtypes::float32, 8)), y32(*dev, poisoned(*dev, dtypes::float32, 4 * d)),
      halves(*dev, poisoned(*dev, dtypes::float16, 4 * d));
  CHECK_THROWS_WITH_AS(moe::launch_dispatch(*dev, s, d, x, tokens, short_xs),
                       contains("moe dispatch: Xs [max_rows, D] must hold " + std::to_string(R * d) + " bfloat16 values, got " + std::to_string((R - 1) * d) + " bfloat16"),
                       Error);
  CHECK_THROWS_WITH_AS(moe::launch_dispatch(*dev, s, d, x, dest, xs), contains("row_token [max_rows] must hold " + std::to_string(R)), Error);
  CHECK_THROWS_WITH_AS(moe::launch_dispatch(*dev, s, d, halves, tokens, xs), doctest::Contains("X holds bfloat16 or float32 rows, not float16"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_dispatch(*dev, s, 0, x, tokens, xs), doctest::Contains("the row length D must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_dispatch(*dev, {4, 8, 9, 16}, d, x, tokens, xs), doctest::Contains("top_k must lie in [1, experts = 8]"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_combine(*dev, s, d, xs, dest, tokens, y32), contains("weights [T*k] must hold 8 float32 values, got " + std::to_string(R) + " int32"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_dispatch_backward(*dev, s, d, xs, dest, tokens, x, true),
                       doctest::Contains("the atomic scatter-add sums into a float32 dX, not bfloat16"), Error);
  CHECK_THROWS_WITH_AS(moe::launch_combine_backward(*dev, s, d, x, xs, tokens, w, dest, xs, w),
                       contains("row_weight [max_rows] must hold " + std::to_string(R) + " float32 values, got 8 float32"), Error);
}
