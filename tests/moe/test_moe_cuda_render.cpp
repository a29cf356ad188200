// Every MoE routing kernel renders to CUDA C++ that NVRTC compiles for sm_90, without a GPU
// (lowered for 32-lane warps, as a CUDA device does). Reported as skipped where NVRTC is absent.
#include <doctest/doctest.h>

#include "skip.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/moe/align.h"
#include "weft/moe/activation.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/moe/permute.h"
#include "weft/moe/route.h"
#include "weft/moe/route_backward.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;

namespace {

void compiles_for_sm90(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  const auto lowered = lower::lower(kernel, options);
  const std::string src = cuda::render_cuda(lowered, 90);
  INFO(src);
  CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
}

}  // namespace

TEST_CASE("CUDA: the route kernels (both scorings, float32 and bfloat16 logits, counting or not) compile with NVRTC for sm_90") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  using moe::Scoring;
  for (const moe::RouteConfig& c : {moe::RouteConfig{5, 256, 8, Scoring::SoftmaxTopK, dtypes::bfloat16},
                                    moe::RouteConfig{3, 8, 1, Scoring::SoftmaxTopK, dtypes::float32},
                                    moe::RouteConfig{7, 256, 8, Scoring::SigmoidGroupedTopK, dtypes::bfloat16, 8, 4},
                                    moe::RouteConfig{2, 512, 2, Scoring::SigmoidGroupedTopK, dtypes::float32, 4, 2, false, 1.0},
                                    moe::RouteConfig{2, 16, 2, Scoring::SigmoidGroupedTopK, dtypes::float32, 8, 2}}) {
    CAPTURE(c.experts);
    CAPTURE(c.top_k);
    compiles_for_sm90(moe::route(c, "sm_90"));
    compiles_for_sm90(moe::route_counting(c, "sm_90"));
  }
}

TEST_CASE("CUDA: the align kernels compile with NVRTC for sm_90") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const moe::MoeShape& s : {moe::MoeShape{1, 8, 1, 128}, moe::MoeShape{300, 256, 8, 256}, moe::MoeShape{600, 512, 8, 128}}) {
    CAPTURE(s.experts);
    compiles_for_sm90(moe::align_count(s));
    compiles_for_sm90(moe::align_place(s, "sm_90"));
  }
}

TEST_CASE("align_place's shared memory: three phases, one barrier each (sums, the waves' counts and totals, the offsets), its choice loaded before them") {
  lower::LowerOptions options;
  options.wave_size = 32;
  for (const moe::MoeShape& s : {moe::MoeShape{1, 8, 1, 128}, moe::MoeShape{16384, 256, 8, 128}, moe::MoeShape{600, 512, 8, 128}}) {
    CAPTURE(s.experts);
    const auto lowered = lower::lower(moe::align_place(s, "sm_90"), options);
    const std::string src = cuda::render_cuda(lowered, 90);
    size_t barriers = 0;
    for (size_t at = src.find("__syncthreads()"); at != std::string::npos; at = src.find("__syncthreads()", at + 1)) ++barriers;
    CHECK(barriers == 3);
    // Its choice's id and weight, loaded before the barriers, stay there (the CUDA renderer's
    // held loads: coherent inline-PTX loads, which ptxas does not sink past a barrier).
    const size_t id_load = src.find("asm volatile(\"ld.global.b32"), weight_load = src.find("asm volatile(\"ld.global.f32");
    CHECK(id_load < src.find("__syncthreads()"));
    CHECK(weight_load < src.find("__syncthreads()"));
    // A choice's rank counts its ballots' bits with popc (POPCOUNT), not a SWAR sum.
    CHECK(src.find("__popc(") != std::string::npos);
    CHECK(src.find("1431655765") == std::string::npos);  // 0x55555555
  }
}

TEST_CASE("route's row of logits is loaded as held vector loads (inline ld.global, 16 bytes each), issued together before the ranking") {
  lower::LowerOptions options;
  options.wave_size = 32;
  const moe::RouteConfig c{16384, 256, 8, moe::Scoring::SoftmaxTopK, dtypes::bfloat16};
  const std::string src = cuda::render_cuda(lower::lower(moe::route_counting(c, "sm_90"), options), 90);
  size_t loads = 0;
  for (size_t at = src.find("ld.global.v4.b32"); at != std::string::npos; at = src.find("ld.global.v4.b32", at + 1)) ++loads;
  CHECK(loads == 4);  // 32 experts a lane, 8 to a vector
  CHECK(src.find("__shfl_xor_sync") > src.rfind("ld.global.v4.b32"));
}

TEST_CASE("every MoE kernel is a dependent launch: on sm_90 it waits for the kernel before it first, on sm_80 it does not") {
  using moe::Scoring;
  const moe::MoeShape s{300, 64, 8, 128};
  const moe::RouteConfig route{300, 64, 8, Scoring::SoftmaxTopK, dtypes::bfloat16};
  const std::vector<std::pair<std::string, UOp>> kernels{
      {"route", moe::route(route, "sm_90")},
      {"route_counting", moe::route_counting(route, "sm_90")},
      {"align_count", moe::align_count(s)},
      {"align_place", moe::align_place(s, "sm_90")},
      {"dispatch", moe::dispatch_kernel(256, dtypes::bfloat16)},
      {"dispatch fp8", moe::dispatch_fp8_kernel(256, dtypes::bfloat16)},
      {"combine", moe::combine_kernel(256, 8, dtypes::bfloat16, dtypes::bfloat16)},
      {"dispatch backward", moe::dispatch_backward_kernel(256, 8, dtypes::bfloat16, dtypes::float32)},
      {"dispatch backward atomic", moe::dispatch_backward_atomic_kernel(256, dtypes::bfloat16)},
      {"zero", moe::zero_kernel(256)},
      {"combine backward", moe::combine_backward_kernel(256, 8, dtypes::bfloat16)},
      {"route backward", moe::route_backward_kernel(64, 8, {})},
      {"silu_mul", moe::silu_mul_kernel(256)},
      {"grouped GEMM (mma.sync)", moe::grouped_gemm("sm_80", 128)},
      {"grouped GEMM (hopper_gemm's grouped form)", moe::grouped_gemm("sm_90", 128)},
  };
  lower::LowerOptions options;
  options.wave_size = 32;
  for (const auto& [name, kernel] : kernels) {
    CAPTURE(name);
    const lower::LoweredKernel lowered = lower::lower(kernel, options);
    CHECK(lowered.dependent_launch);
    CHECK(cuda::waits_for_predecessor(lowered, 90));
    CHECK_FALSE(cuda::waits_for_predecessor(lowered, 80));
    CHECK(cuda::render_cuda(lowered, 90).find("griddepcontrol.wait;") != std::string::npos);
    if (name.find("hopper_gemm") == std::string::npos)  // (Hopper-only instructions do not render for sm_80)
      CHECK(cuda::render_cuda(lowered, 80).find("griddepcontrol") == std::string::npos);
  }
  // The dense hopper_gemm is timed alone against cuBLAS: serialized.
  CHECK_FALSE(lower::lower(gemm::hopper_gemm(gemm::HopperGemmSpec{}), options).dependent_launch);
}
