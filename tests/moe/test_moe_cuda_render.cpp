// Every MoE routing kernel renders to CUDA C++ that NVRTC compiles for sm_90, without a GPU
// (lowered for 32-lane warps, as a CUDA device does). Reported as skipped where NVRTC is absent.
#include <doctest/doctest.h>

#include "skip.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/moe/align.h"
#include "weft/moe/route.h"
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
  for (const moe::MoeShape& s : {moe::MoeShape{1, 8, 1, 128}, moe::MoeShape{300, 256, 8, 256}}) {
    CAPTURE(s.experts);
    compiles_for_sm90(moe::align_count(s));
    compiles_for_sm90(moe::align_scan(s, "sm_90"));
    compiles_for_sm90(moe::align_place(s, "sm_90"));
  }
}
