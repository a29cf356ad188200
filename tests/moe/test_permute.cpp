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
