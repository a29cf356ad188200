// hk_gemm (HipKittens' bf16 GEMM in the tile layer) on both emulated CDNA targets: identity
// bit-exact, random inputs against a double-precision reference, whole and ragged shapes.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/gemm/hk_gemm.h"

using namespace weft;

namespace {

void check_hk_gemm(int64_t m, int64_t n, int64_t k, DType output, bool identity_b = false) {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(output.name());
    auto dev = rt::open_device(target);
    const gemm::RunResult r = gemm::run_hk_gemm(*dev, m, n, k, output, identity_b, weft::testing::rng()());
    INFO(r.check.first_bad);
    CHECK(r.check.count == static_cast<size_t>(m * n));
    CHECK(r.check.passed());
  }
}

}  // namespace

TEST_CASE("hk_gemm: an identity B gives A bit for bit") {
  check_hk_gemm(256, 256, 256, dtypes::float32, true);
  check_hk_gemm(256, 256, 256, dtypes::bfloat16, true);
}

TEST_CASE("hk_gemm: random 256 cubed, bf16 and fp32 output") {
  check_hk_gemm(256, 256, 256, dtypes::bfloat16);
  check_hk_gemm(256, 256, 256, dtypes::float32);
}

TEST_CASE("hk_gemm: 512 x 768 x 320, an odd number of K steps") { check_hk_gemm(512, 768, 320, dtypes::bfloat16); }

TEST_CASE("hk_gemm: 300 x 200 x 136, ragged everywhere") { check_hk_gemm(300, 200, 136, dtypes::float32); }

TEST_CASE("hk_gemm: K = 8 and K = 64") {
  check_hk_gemm(64, 48, 8, dtypes::float32);
  check_hk_gemm(130, 70, 64, dtypes::bfloat16);
}

TEST_CASE("hk_gemm: sizes it cannot take are errors") {
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx90a"), doctest::Contains("no schedule for target 'gfx90a'"), Error);
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx950", dtypes::float16), doctest::Contains("bfloat16 or float32, not float16"), Error);
}
