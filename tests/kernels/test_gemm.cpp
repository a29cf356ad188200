// matmul_relu (scalar FMA on fragments, shared tiles), the MFMA kernels (wmma) and the tile
// copies of kernels/fragments.h, on both emulated targets, against double-precision Eigen
// references; the fragment operations' errors.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mfma_tile.h"
#include "weft/gemm/mma_tile.h"
#include "weft/kernels/fragments.h"

using namespace weft;

namespace {

void check_matmul_relu(int64_t m, int64_t n, int64_t k, DType dtype) {
  for (const std::string& target : weft::testing::devices()) {
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

WEFT_DEVICE_TEST_CASE("matmul_relu 256x256x256, float32 and float16") {
  check_matmul_relu(256, 256, 256, dtypes::float32);
  check_matmul_relu(256, 256, 256, dtypes::float16);
}

WEFT_DEVICE_TEST_CASE("matmul_relu at a non-square size, 512x384x320") { check_matmul_relu(512, 384, 320, dtypes::float32); }

TEST_CASE("matmul_relu rejects shapes that do not divide into tiles") {
  CHECK_THROWS_WITH_AS(gemm::matmul_relu(100, 64, 64, dtypes::float32),
                       doctest::Contains("M, N and K must be positive multiples of the 64-wide tile; got M=100"), Error);
  CHECK_THROWS_WITH_AS(gemm::matmul_relu(64, 64, 64, dtypes::int32), doctest::Contains("not int32"), Error);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("MFMA tile through wmma: identity is bit-exact, random within fp32 accumulation error") {
  struct Shape {
    const char* target;
    int64_t m, n, k;
    DType input;
  };
  const Shape shapes[] = {
      {"emu:gfx942", 16, 16, 16, dtypes::float16}, {"emu:gfx942", 16, 16, 16, dtypes::bfloat16}, {"emu:gfx942", 32, 32, 8, dtypes::float16},
      {"emu:gfx950", 16, 16, 16, dtypes::float16}, {"emu:gfx950", 16, 16, 32, dtypes::bfloat16}, {"emu:gfx950", 32, 32, 16, dtypes::float16},
      {"emu:gfx942", 16, 16, 32, dtypes::fp8e4m3fnuz}, {"emu:gfx942", 32, 32, 16, dtypes::fp8e4m3fnuz},
      {"emu:gfx950", 16, 16, 32, dtypes::fp8e4m3}, {"emu:gfx950", 32, 32, 16, dtypes::fp8e4m3},
      {"emu:gfx950", 16, 16, 128, dtypes::fp8e4m3}, {"emu:gfx950", 32, 32, 64, dtypes::fp8e4m3},  // the f8f6f4 MFMAs
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

TEST_CASE("tile gemm through wmma (mfma_gemm): identity bit-exact, random against Eigen, both targets") {
  for (const std::string& target : weft::testing::emulators()) {
    for (DType input : {dtypes::float16, dtypes::bfloat16}) {
      CAPTURE(target);
      CAPTURE(input.name());
      auto dev = rt::open_device(target);
      auto id = gemm::run_mfma_gemm(*dev, 64, 64, 64, input, true, weft::testing::rng()());
      INFO(id.check.first_bad);
      CHECK(id.check.passed());
      auto r = gemm::run_mfma_gemm(*dev, 64, 96, 128, input, false, weft::testing::rng()());
      INFO(r.check.first_bad);
      CHECK(r.check.passed());
    }
  }
  CHECK_THROWS_WITH_AS(gemm::mfma_gemm("gfx950", 48, 64, 64, dtypes::float16), doctest::Contains("got M=48"), Error);
}
#endif  // WEFT_HAVE_LLVM

TEST_CASE("fragment operations name the shapes they cannot take") {
  tile::Workgroup wg("gfx950", {constant(Wide(1))}, 2, 1);
  CHECK_THROWS_WITH_AS(tile::fragment(wg, 64, 64, dtypes::float32, 3), doctest::Contains("a 64x64 fragment over 128 threads, 3 across"), Error);
  CHECK_THROWS_WITH_AS(tile::fragment(wg, 4, 64, dtypes::float32, 16), doctest::Contains("does not divide"), Error);
  const tile::st s16 = tile::shared(64, 64, dtypes::float16, tile::SharedSwizzle::unswizzled);
  const tile::st s32 = tile::shared(64, 32, dtypes::float32, tile::SharedSwizzle::unswizzled);
  const tile::gl g32 = tile::global(0, constant(Wide(64)), constant(Wide(64)), dtypes::float32);
  CHECK_THROWS_WITH_AS(tile::copy(wg, s16, constant(Wide(0)), g32, constant(Wide(0)), constant(Wide(0))),
                       doctest::Contains("the shared tile holds float16, the global tensor float32"), Error);
  const tile::rf c = tile::fragment(wg, 64, 64, dtypes::float32, 16);
  CHECK_THROWS_WITH_AS(tile::fma_AB(wg, c, s16, s32, {}), doctest::Contains("A 64x64 and B 64x32 do not make the 64x64 tile"), Error);
  CHECK_THROWS_WITH_AS(tile::load(wg, c, s32), doctest::Contains("a 64x32 shared tile into a 64x64 fragment"), Error);
  CHECK_THROWS_WITH_AS(tile::load_kn(wg, s16, constant(Wide(0)), 24, constant(Wide(0))), doctest::Contains("24 columns of a 64x64 K x N tile"), Error);
}

WEFT_DEVICE_TEST_CASE("tile copies: global -> shared -> fragment -> global, through the tile layer") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    // out = 2 * in on a 64x32 matrix, two 32x32 tiles, one wave of 64 threads per tile (8
    // across: each thread 4 rows x 4 columns of the fragment).
    const tile::gl in = tile::global(1, constant(Wide(64)), constant(Wide(32)), dtypes::float16);
    const tile::gl out = tile::global(0, constant(Wide(64)), constant(Wide(32)), dtypes::float32);
    tile::Workgroup wg("", {constant(Wide(1)), constant(Wide(2))}, 1, 1);
    const UOp row0 = wg.block(1) * 32, zero = constant(Wide(0));
    const tile::st shared = tile::shared(32, 32, dtypes::float16, tile::SharedSwizzle::unswizzled);
    const UOp fill = tile::copy(wg, shared, zero, in, row0, zero);
    const tile::rf frag = tile::load(wg, tile::fragment(wg, 32, 32, dtypes::float32, 8), shared.after({fill}));
    UOp k = sink({"tile_copies"}, {tile::store(wg, out, frag, row0, zero, [](const UOp& v) { return v * 2.0; })});
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    std::vector<uint16_t> h(64 * 32);
    std::vector<float> expect(64 * 32);
    auto x = weft::testing::random_floats(64 * 32);
    for (size_t q = 0; q < h.size(); ++q) h[q] = float_to_half(x[q]), expect[q] = 2.0f * half_to_float(h[q]);
    auto a = weft::testing::put(*dev, dtypes::float16, h);
    auto o = weft::testing::poisoned(*dev, dtypes::float32, 64 * 32);
    const rt::DeviceArray args[] = {o, a};
    compiled.launch(*dev, args);
    auto y = weft::testing::get<float>(*dev, o);
    for (size_t q = 0; q < y.size(); ++q) REQUIRE(y[q] == expect[q]);
  }
}

TEST_CASE("mma.sync tile through wmma on an NVIDIA GPU: identity bit-exact, random against Eigen") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (DType input : {dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(input.name());
    for (bool identity : {true, false}) {
      CAPTURE(identity);
      auto r = gemm::run_mma_tile(*dev, input, identity, weft::testing::rng()());
      INFO(r.check.first_bad);
      CHECK(r.check.passed());
    }
  }
}

TEST_CASE("tiled bf16 GEMM through mma.sync and cp.async (mma_gemm) on an NVIDIA GPU") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (DType input : {dtypes::bfloat16, dtypes::float16}) {
    CAPTURE(input.name());
    auto id = gemm::run_mma_gemm(*dev, 256, 256, 256, input, true, weft::testing::rng()());
    INFO(id.check.first_bad);
    CHECK(id.check.passed());
    auto r = gemm::run_mma_gemm(*dev, 384, 256, 512, input, false, weft::testing::rng()());
    INFO(r.check.first_bad);
    CHECK(r.check.passed());
  }
}
