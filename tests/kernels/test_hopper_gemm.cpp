// hopper_gemm (gemm/hopper_gemm.h): the warp-specialized TMA + wgmma GEMM. Without a GPU: the
// lowered program (producer and consumer branches, the mbarrier ring) rendered and compiled by
// NVRTC for sm_90a. On an H200 ("[cuda]"): identity bit-exact, random and ragged shapes against a
// double-precision reference.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "skip.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;

namespace {

lower::LoweredKernel lowered(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return lower::lower(lower::canonical_allocations(kernel), options);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

void check_hopper_gemm(rt::Device& dev, int64_t m, int64_t n, int64_t k, DType output, bool identity_b = false) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(output.name());
  CAPTURE(identity_b);
  const gemm::RunResult r = gemm::run_hopper_gemm(dev, m, n, k, output, identity_b, weft::testing::rng()());
  INFO(r.check.first_bad);
  CHECK(r.check.count == static_cast<size_t>(m * n));
  CHECK(r.check.passed());
}

}  // namespace

TEST_CASE("hopper_gemm renders a producer and two consumer warpgroups around an mbarrier ring, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  const lower::LoweredKernel k = lowered(gemm::hopper_gemm(dtypes::bfloat16));
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  CHECK(cuda::nvrtc_arch(k, 90) == "sm_90a");
  CHECK(src.find("__launch_bounds__(384)") != std::string::npos);
  // Two tensor maps (A and B), 8 mbarriers initialized, the MMAs, 192 KiB of dynamic shared memory.
  CHECK(occurrences(src, "__grid_constant__ weft_tensor_map") == 2);
  CHECK(occurrences(src, "mbarrier.init.shared::cta.b64") == 8);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d") == 2);
  CHECK(occurrences(src, "& 31u) == 0u) asm volatile") == 1);  // the consumers release a stage once a warp
  CHECK(src.find("asm volatile(\"fence.proxy.async.shared::cta;\" :::") == std::string::npos);  // TMA fills: the register fence only
  CHECK(cuda::dynamic_shared_bytes(k) >= 4 * (128 + 256) * 64 * 2);
  CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(dtypes::float16), doctest::Contains("bfloat16 or float32, not float16"), Error);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("hopper_gemm on a device that is not sm_90 is an error naming it") {
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(gemm::run_hopper_gemm(*emu, 128, 128, 64, dtypes::bfloat16, false, 1), doctest::Contains("needs an sm_90"), Error);
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm_ctas(*emu, 128, 128), doctest::Contains("does not report its multiprocessors"), Error);
}
#endif

TEST_CASE("hopper_gemm on an H200: identity bit-exact, random, ragged, K = 8 [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  check_hopper_gemm(*dev, 256, 512, 512, dtypes::bfloat16, true);
  check_hopper_gemm(*dev, 256, 256, 256, dtypes::float32, true);
  check_hopper_gemm(*dev, 1024, 1024, 1024, dtypes::bfloat16);
  check_hopper_gemm(*dev, 384, 768, 2048, dtypes::float32);
  check_hopper_gemm(*dev, 300, 200, 136, dtypes::float32);
  check_hopper_gemm(*dev, 1, 1, 8, dtypes::bfloat16);
  check_hopper_gemm(*dev, 1000, 1030, 72, dtypes::bfloat16);
  // More block rows than one L2 group (8) and a partial last group.
  check_hopper_gemm(*dev, 128 * 11, 256 * 3, 128, dtypes::float32);
  // More blocks than multiprocessors: each workgroup takes several, the ring's phases running on
  // across them (one K step a block here, four below).
  check_hopper_gemm(*dev, 3000, 2100, 64, dtypes::bfloat16);
  check_hopper_gemm(*dev, 4096, 4096, 256, dtypes::bfloat16);
  CHECK(gemm::hopper_gemm_ctas(*dev, 4096, 4096) == *dev->compute_units());
  CHECK(gemm::hopper_gemm_ctas(*dev, 128, 300) == 2);
  CHECK_THROWS_WITH_AS(gemm::run_hopper_gemm(*dev, 64, 64, 12, dtypes::bfloat16, false, 1), doctest::Contains("multiple of 8"), Error);
}
