// Programmatic dependent launch (KernelInfo::dependent_launch): the CUDA renderer waits for the
// kernel before (griddepcontrol.wait) first thing in the body and lets the next one launch
// (griddepcontrol.launch_dependents) last thing, on sm_90 and newer only; the runtime launches such a kernel programmatically there; and a chain
// of such kernels, each reading what the one before wrote, computes what serialized launches do.
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/print.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;

namespace {

// gather: sum[i] = total[i] + the sum of `reads` elements of `in` strided from i (slots: 0 sum,
// 1 in, 2 total). accumulate: total[i] += sum[i] (slots: 0 total, 1 sum). Both int32 over n
// elements, both dependent launches: each reads what the one before it wrote.
UOp gather(int64_t n, int64_t reads) {
  const UOp sum = placeholder({n}, dtypes::int32, 0), in = placeholder({n}, dtypes::int32, 1), total = placeholder({n}, dtypes::int32, 2);
  const UOp g = range(n / 256, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL), j = range(reads, 2, AxisType::REDUCE);
  const UOp i = g * 256 + l;
  const UOp picked = in[(i + j * 4099) % n].load().reduce(Op::ADD, {j});
  return sink({.name = "gather", .dependent_launch = true}, {sum[i].store(picked + total[i].load()).end({g, l})});
}

UOp accumulate(int64_t n) {
  const UOp total = placeholder({n}, dtypes::int32, 0), sum = placeholder({n}, dtypes::int32, 1);
  const UOp g = range(n / 256, 0, AxisType::GLOBAL), l = range(256, 1, AxisType::LOCAL);
  const UOp i = g * 256 + l;
  return sink({.name = "accumulate", .dependent_launch = true}, {total[i].store(total[i].load() + sum[i].load()).end({g, l})});
}

}  // namespace

TEST_CASE("dependent launch: the flag prints, tells kernels apart, and renders the wait first and the trigger last on sm_90, nothing on sm_80") {
  CHECK(graph_string(accumulate(256)).find("name=accumulate dependent_launch") != std::string::npos);
  const UOp i = range(256, 1, AxisType::LOCAL), out = placeholder({256}, dtypes::int32, 0);
  const UOp body = out[i].store(constant(Wide(1), dtypes::int32)).end({i});
  CHECK_FALSE(sink({.name = "k", .dependent_launch = true}, {body}).same(sink({"k"}, {body})));  // hash-consing keeps them apart

  const lower::LoweredKernel k = testing::lowered_for_cuda(accumulate(1024));
  CHECK(k.dependent_launch);
  CHECK(cuda::waits_for_predecessor(k, 90));
  CHECK_FALSE(cuda::waits_for_predecessor(k, 80));
  const std::string hopper = cuda::render_cuda(k, 90), ampere = cuda::render_cuda(k, 80);
  INFO(hopper);
  const size_t wait = hopper.find("griddepcontrol.wait;"), trigger = hopper.find("griddepcontrol.launch_dependents;");
  REQUIRE(wait != std::string::npos);
  REQUIRE(trigger != std::string::npos);
  CHECK(wait < trigger);
  // The wait before any access: it orders everything the kernel reads after the kernel before.
  // The trigger after the last one, the kernel's last statement (measured faster than at entry:
  // the renderer's comment).
  const size_t first_access = hopper.find("buf0 +"), last_access = hopper.rfind("buf");
  REQUIRE(first_access != std::string::npos);
  CHECK(wait < first_access);
  CHECK(last_access < trigger);
  CHECK(hopper.substr(trigger) == "griddepcontrol.launch_dependents;\" ::: \"memory\");\n}\n");
  CHECK(ampere.find("griddepcontrol") == std::string::npos);
  CHECK_FALSE(testing::lowered_for_cuda(sink({"k"}, {body})).dependent_launch);
  // The launch: programmatic on sm_90 and newer only, and only for a dependent launch.
  CHECK(rt::launch_order(k, "sm_90") == rt::LaunchOrder::programmatic);
  CHECK(rt::launch_order(k, "sm_100") == rt::LaunchOrder::programmatic);
  CHECK(rt::launch_order(k, "sm_80") == rt::LaunchOrder::serialized);
  CHECK(rt::launch_order(k, "gfx950") == rt::LaunchOrder::serialized);
  CHECK(rt::launch_order(testing::lowered_for_cuda(sink({"k"}, {body})), "sm_90") == rt::LaunchOrder::serialized);
  CHECK_THROWS_WITH_AS(rt::launch_order(k, "sm_9x"), doctest::Contains("'sm_9x' is not an NVIDIA target"), Error);
  // sm_90a names the same GPU as sm_90 (weft picks sm_90a for NVRTC where a kernel needs it).
  CHECK(cuda::sm_number("sm_90a") == 90);
  CHECK(rt::launch_order(k, "sm_90a") == rt::LaunchOrder::programmatic);
  CHECK_THROWS_WITH_AS(cuda::sm_number("sm_a"), doctest::Contains("'sm_a' is not an NVIDIA target"), Error);
  CHECK_THROWS_WITH_AS(cuda::sm_number("sm_90aa"), doctest::Contains("is not an NVIDIA target"), Error);
}

TEST_CASE("dependent launch: the kernel with its wait and trigger compiles with NVRTC for sm_90") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  const lower::LoweredKernel k = testing::lowered_for_cuda(accumulate(1024));
  CHECK(rt::nvrtc_compile(cuda::render_cuda(k, 90), k.name, cuda::nvrtc_arch(k, 90)).size() > 0);
}

// Rounds of gather then accumulate, back to back with no synchronization: total doubles plus the
// gathered sum each round, so a kernel that read its input before the one before it finished
// writing it would leave a different total (on a GPU the gather runs long enough for that).
WEFT_DEVICE_TEST_CASE("dependent launch: a chain of dependent kernels, each reading the one before's output, matches the host") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const bool emulated = target.starts_with("emu:");
    const int64_t n = emulated ? 1024 : int64_t{1} << 20, reads = emulated ? 4 : 64, rounds = 6;
    const auto in = testing::random_ints(static_cast<size_t>(n), 0, 15);
    const auto first = rt::CompiledKernel::compile(*dev, gather(n, reads)), second = rt::CompiledKernel::compile(*dev, accumulate(n));
    const rt::DeviceArray in_d = testing::put(*dev, dtypes::int32, in, "in"), sum = testing::poisoned(*dev, dtypes::int32, static_cast<size_t>(n), "sum");
    const rt::DeviceArray total = testing::put(*dev, dtypes::int32, std::vector<int32_t>(static_cast<size_t>(n), 0), "total");
    const rt::DeviceArray gather_args[] = {sum, in_d, total}, accumulate_args[] = {total, sum};
    for (int64_t r = 0; r < rounds; ++r) {
      first.launch(*dev, gather_args);
      second.launch(*dev, accumulate_args);
    }
    const std::vector<int32_t> got = testing::get<int32_t>(*dev, total);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t picked = 0, want = 0;
      for (int64_t j = 0; j < reads; ++j) picked += in[static_cast<size_t>((i + j * 4099) % n)];
      for (int64_t r = 0; r < rounds; ++r) want = 2 * want + picked;
      if (got[static_cast<size_t>(i)] != want && bad++ < 5) FAIL_CHECK("total[" << i << "] = " << got[static_cast<size_t>(i)] << ", expected " << want);
    }
    CHECK(bad == 0);
  }
}
