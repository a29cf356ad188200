// matmul_relu (scalar FMA on fragments, shared tiles) and the one-tile MFMA kernel (wmma), on
// both emulated targets, against double-precision Eigen references.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mfma_tile.h"

using namespace weft;

namespace {

void check_matmul_relu(int64_t m, int64_t n, int64_t k, DType dtype) {
  for (const char* target : weft::testing::kEmulators) {
    CAPTURE(target);
    CAPTURE(dtype.name());
    auto dev = rt::open_device(target);
    auto r = gemm::run_matmul_relu(*dev, m, n, k, dtype, weft::testing::rng()());
    INFO(r.check.first_bad);
    CHECK(r.check.count == static_cast<size_t>(m * n));
    CHECK(r.check.passed());
  }
}

}  // namespace

TEST_CASE("matmul_relu 256x256x256, float32 and float16") {
  check_matmul_relu(256, 256, 256, dtypes::float32);
  check_matmul_relu(256, 256, 256, dtypes::float16);
}

TEST_CASE("matmul_relu at a non-square size, 512x384x320") { check_matmul_relu(512, 384, 320, dtypes::float32); }

TEST_CASE("matmul_relu rejects shapes that do not divide into tiles") {
  CHECK_THROWS_WITH_AS(gemm::matmul_relu(100, 64, 64, dtypes::float32),
                       doctest::Contains("M, N and K must be positive multiples of the 64-wide tile; got M=100"), Error);
  CHECK_THROWS_WITH_AS(gemm::matmul_relu(64, 64, 64, dtypes::int32), doctest::Contains("not int32"), Error);
}

TEST_CASE("MFMA tile through wmma: identity is bit-exact, random within fp32 accumulation error") {
  struct Shape {
    const char* target;
    int64_t m, n, k;
    DType input;
  };
  const Shape shapes[] = {
      {"emu:gfx942", 16, 16, 16, dtypes::float16}, {"emu:gfx942", 16, 16, 16, dtypes::bfloat16}, {"emu:gfx942", 32, 32, 8, dtypes::float16},
      {"emu:gfx950", 16, 16, 16, dtypes::float16}, {"emu:gfx950", 16, 16, 32, dtypes::bfloat16}, {"emu:gfx950", 32, 32, 16, dtypes::float16},
  };
  for (const Shape& s : shapes) {
    CAPTURE(s.target);
    CAPTURE(s.m);
    CAPTURE(s.k);
    CAPTURE(s.input.name());
    auto dev = rt::open_device(s.target);
    for (bool identity : {true, false}) {
      CAPTURE(identity);
      auto r = gemm::run_mfma_tile(*dev, s.m, s.n, s.k, s.input, identity, weft::testing::rng()());
      INFO(r.check.first_bad);
      CHECK(r.check.passed());
    }
  }
}
