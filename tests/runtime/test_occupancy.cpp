// KernelInfo::min_workgroups_per_processor: the workgroups a kernel asks to fit on one
// multiprocessor at once. It prints and keeps kernels apart, renders as __launch_bounds__'s second
// argument for CUDA and as amdgpu-waves-per-eu for AMD, and a negative count or one beside a
// register budget (setmaxnreg, which needs one block a multiprocessor) is an error.
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/cuda_codegen.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/lowering/amdgpu_codegen.h"
#endif

using namespace weft;

namespace {

// out[i] = i over 256 threads a workgroup, asking for `workgroups` a multiprocessor.
UOp ids(int64_t workgroups) {
  const UOp out = placeholder({1024}, dtypes::int32, 0);
  const UOp g = range(4, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL), i = g * 256 + l;
  return sink({.name = "ids", .min_workgroups_per_processor = workgroups}, {out[i].store(i.cast(dtypes::int32)).end({g, l})});
}

}  // namespace

TEST_CASE("occupancy hint: prints, tells kernels apart, and renders as CUDA's launch bound") {
  CHECK(graph_string(ids(3)).find("name=ids min_workgroups=3") != std::string::npos);
  CHECK(graph_string(ids(0)).find("min_workgroups") == std::string::npos);
  CHECK_FALSE(ids(3).same(ids(0)));
  const std::string hinted = cuda::render_cuda(testing::lowered_for_cuda(ids(3)), 90), plain = cuda::render_cuda(testing::lowered_for_cuda(ids(0)), 90);
  CHECK(hinted.find("__launch_bounds__(256, 3) ids(") != std::string::npos);
  CHECK(plain.find("__launch_bounds__(256) ids(") != std::string::npos);
  CHECK_THROWS_WITH_AS(lower::lower(ids(-1)), doctest::Contains("min_workgroups_per_processor must be >= 0, got -1"), Error);
}

TEST_CASE("occupancy hint: a kernel that sets register budgets cannot also ask for several workgroups a multiprocessor") {
  const UOp out = placeholder({256}, dtypes::int32, 0);
  const UOp lane = range(32, 0, AxisType::LOCAL), warp = range(8, 1, AxisType::WARP), thread = warp * 32 + lane;
  const UOp budget = when(warp < 4, {set_max_registers(40, RegisterBudget::Lower)});
  const UOp body = group({budget, out.after({budget})[thread].store(thread.cast(dtypes::int32))}).end({lane, warp});
  CHECK_THROWS_WITH_AS(cuda::render_cuda(testing::lowered_for_cuda(sink({.name = "budgets", .min_workgroups_per_processor = 2}, {body})), 90),
                       doctest::Contains("needs one block a multiprocessor, and asks for 2"), Error);
  CHECK(cuda::render_cuda(testing::lowered_for_cuda(sink({.name = "budgets", .min_workgroups_per_processor = 1}, {body})), 90).find("__launch_bounds__(256, 1)") !=
        std::string::npos);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("occupancy hint: renders as amdgpu-waves-per-eu (4 waves a workgroup of 256, 4 SIMDs a CU, at most 8 a SIMD)") {
  for (const auto& [workgroups, waves] : {std::pair<int64_t, const char*>{2, "\"amdgpu-waves-per-eu\"=\"2\""}, {3, "\"amdgpu-waves-per-eu\"=\"3\""}, {16, "\"amdgpu-waves-per-eu\"=\"8\""}}) {
    CAPTURE(workgroups);
    std::string ir;
    amdgpu::compile_kernel(lower::lower(ids(workgroups)), "gfx950", &ir);
    CHECK(ir.find(waves) != std::string::npos);
  }
  std::string ir;
  amdgpu::compile_kernel(lower::lower(ids(0)), "gfx950", &ir);
  CHECK(ir.find("amdgpu-waves-per-eu") == std::string::npos);
}
#endif
