// The MoE kernels' code: every one renders to CUDA C++ that NVRTC compiles for sm_90 without a
// GPU, and the row moves are 16-byte vector accesses (AMD: dwordx4 global loads and stores;
// CUDA: whole-vector loads and stores through the aligned vector structs).
#include <doctest/doctest.h>

#include "occurrences.h"
#include "skip.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/dsl/builder.h"
#include "weft/moe/permute.h"
#include "weft/moe/route_backward.h"
#include "weft/runtime/inspect.h"
#include "weft/runtime/nvrtc.h"

using weft::testing::occurrences;

using namespace weft;

namespace {

std::vector<UOp> every_kernel(int64_t d) {
  std::vector<UOp> k;
  for (DType dt : {dtypes::bfloat16, dtypes::float32}) {
    k.push_back(moe::dispatch_kernel(d, dt));
    k.push_back(moe::dispatch_fp8_kernel(d, dt));
    k.push_back(moe::combine_kernel(d, 8, dt, dt));
    k.push_back(moe::dispatch_backward_kernel(d, 2, dt, dt));
    k.push_back(moe::dispatch_backward_atomic_kernel(d, dt));
    k.push_back(moe::combine_backward_kernel(d, 8, dt));
  }
  k.push_back(moe::zero_kernel(d));
  k.push_back(moe::route_backward_kernel(256, 8, {moe::Scoring::SoftmaxTopK, true, 1.0f}));
  k.push_back(moe::route_backward_kernel(256, 8, {moe::Scoring::SigmoidGroupedTopK, true, 2.5f}));
  return k;
}

std::string cuda_source(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return cuda::render_cuda(lower::lower(kernel, options), 90);
}

}  // namespace

TEST_CASE("moe kernels render to CUDA C++ that NVRTC compiles for sm_90 (D = 4096 and D = 100)") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (int64_t d : {4096, 100})
    for (const UOp& k : every_kernel(d)) {
      lower::LowerOptions options;
      options.wave_size = 32;
      const auto lowered = lower::lower(k, options);
      CAPTURE(lowered.name);
      const std::string src = cuda::render_cuda(lowered, 90);
      INFO(src);
      CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90").size() > 0);
    }
}

TEST_CASE("moe dispatch and combine move rows in 16-byte vectors (CUDA source)") {
  // bfloat16 rows of 4096: 256 lanes x 2 steps of 8 elements, each one aligned vector access.
  const std::string dispatch = cuda_source(moe::dispatch_kernel(4096, dtypes::bfloat16));
  INFO(dispatch);
  CHECK(occurrences(dispatch, "*reinterpret_cast<const weft_unsigned_short_8*>") + occurrences(dispatch, "*reinterpret_cast<const weft_bf16_8*>") == 2);
  CHECK(occurrences(dispatch, "*reinterpret_cast<weft_") == 2);
  const std::string combine = cuda_source(moe::combine_kernel(4096, 2, dtypes::bfloat16, dtypes::bfloat16));
  INFO(combine);
  CHECK(occurrences(combine, "*reinterpret_cast<const weft_") == 4);  // 2 rows x 2 steps
  CHECK(occurrences(combine, "*reinterpret_cast<weft_") == 2);
}

TEST_CASE("a vector load at a select between aligned bases plus aligned terms is one aligned access (CUDA source)") {
  const UOp in = placeholder({128}, dtypes::int32, 0), out = placeholder({128}, dtypes::int32, 1), flag = placeholder({1}, dtypes::int32, 2);
  const UOp i = range(8, 0, AxisType::GLOBAL), zero = constant(Wide(0));
  const UOp base = where(flag[zero].load().eq(constant(Wide(0), dtypes::int32)), zero, constant(Wide(64)));
  const auto kernel = [&](const UOp& at) {
    return sink({"select_base"}, {out[i * 4].vec(4).store(in[at].vec(4).load()).end({i})});
  };
  CHECK(occurrences(cuda_source(kernel(base + i * 4)), "*reinterpret_cast<const weft_int_4*>") == 1);
  // 62 is not a multiple of 4: the load goes lane by lane.
  const UOp unaligned = where(flag[zero].load().eq(constant(Wide(0), dtypes::int32)), zero, constant(Wide(62)));
  CHECK(occurrences(cuda_source(kernel(unaligned + i * 4)), "*reinterpret_cast<const weft_int_4*>") == 0);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("moe dispatch and combine move rows in 16-byte vectors (AMD: global_load_dwordx4, global_store_dwordx4)") {
  for (const std::string target : {"gfx950", "gfx942"}) {
    CAPTURE(target);
    for (const UOp& k : {moe::dispatch_kernel(4096, dtypes::bfloat16), moe::combine_kernel(4096, 2, dtypes::bfloat16, dtypes::bfloat16),
                         moe::dispatch_backward_kernel(7168, 8, dtypes::bfloat16, dtypes::bfloat16),
                         moe::combine_backward_kernel(4096, 8, dtypes::bfloat16)}) {
      const rt::KernelStages s = rt::inspect(k, target);
      CAPTURE(s.kernel);
      INFO(s.assembly);
      CHECK(occurrences(s.assembly, "global_load_dwordx4") >= 2);  // (D = 4096: 256 lanes x 2 steps; 7168: 128 x 7)
      CHECK(occurrences(s.assembly, "global_store_dwordx4") >= 2);
      CHECK(occurrences(s.assembly, "global_load_ushort") == 0);
      CHECK(occurrences(s.assembly, "global_store_short") == 0);
    }
  }
}
#endif
