// Grid barriers (grid_barrier, builder.h): the CUDA renderer arrives once per block between two
// block barriers and the kernel is launched cooperatively; a misuse is an error naming the rule
// (a counter that is not a uint32 GLOBAL element, a barrier inside a when()); workgroups that read
// each other's writes across two grid barriers, launched twice on one counter, compute what the
// host does, bit for bit, on both emulated targets (every workgroup resident, in turns) and on a
// GPU; a grid larger than the GPU holds is an error naming the kernel.
#include <doctest/doctest.h>

#include <random>

#include "kernels/kernel_harness.h"
#include "kernels/listing_text.h"
#include "occurrences.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/error.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;

namespace {

constexpr int64_t kThreads = 256;

UOp idx(int64_t v) { return constant(Wide(v)); }
UOp u32(int64_t v) { return constant(Wide(v), dtypes::uint32); }

// Three phases over G workgroups of 256 threads, element i = g * 256 + l, n = G * 256:
//   a[i] = in[i] * 3 + g;  grid barrier;  b[i] = a[n-1-i] + a[(i + 256) % n];  grid barrier;
//   out[i] = b[n-1-i] ^ b[i].
// Every read after a barrier is of another workgroup's writes. Slots: 0 out, 1 in, 2 a, 3 b,
// 4 the barrier's counter.
UOp exchange(int64_t groups) {
  const int64_t n = groups * kThreads;
  const UOp out = placeholder({n}, dtypes::uint32, 0), in = placeholder({n}, dtypes::uint32, 1);
  const UOp a = placeholder({n}, dtypes::uint32, 2), b = placeholder({n}, dtypes::uint32, 3), counter = placeholder({1}, dtypes::uint32, 4);
  const UOp g = range(groups, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL), i = g * kThreads + l;
  const UOp mirror = idx(n - 1) - i, next = (i + kThreads) % n;
  const UOp first = a[i].store(in[i].load() * u32(3) + g.cast(dtypes::uint32));
  const UOp met = grid_barrier(counter[idx(0)], {first});
  const UOp second = b[i].store(a.after({met})[mirror].load() + a.after({met})[next].load());
  const UOp met_again = grid_barrier(counter[idx(0)], {second});
  const UOp third = out[i].store(b.after({met_again})[mirror].load() ^ b.after({met_again})[i].load());
  return sink({.name = "grid_exchange"}, {group({first, met, second, met_again, third}).end({g, l})});
}

std::vector<uint32_t> exchange_reference(const std::vector<uint32_t>& in) {
  const size_t n = in.size();
  std::vector<uint32_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) a[i] = in[i] * 3u + static_cast<uint32_t>(i / kThreads);
  for (size_t i = 0; i < n; ++i) b[i] = a[n - 1 - i] + a[(i + kThreads) % n];
  for (size_t i = 0; i < n; ++i) out[i] = b[n - 1 - i] ^ b[i];
  return out;
}

}  // namespace

TEST_CASE("grid barrier: a kernel with one is cooperative, and the CUDA source arrives once a block between block barriers") {
  const lower::LoweredKernel k = testing::lowered_for_cuda(exchange(8));
  CHECK(k.cooperative);
  CHECK_FALSE(testing::lowered_for_cuda(sink({"plain"}, {placeholder({4}, dtypes::uint32, 0)[idx(0)].store(u32(1))})).cooperative);
  const std::string source = cuda::render_cuda(k, 90);
  CHECK(testing::occurrences(source, "weft_grid_arrive_and_wait((unsigned*)") == 2);
  CHECK(source.find("atom.add.release.gpu.u32") != std::string::npos);
  CHECK(source.find("ld.acquire.gpu.u32") != std::string::npos);
  // Each arrival between two block barriers: the block's writes before it, its reads after.
  for (size_t call = source.find("weft_grid_arrive_and_wait((unsigned*)"); call != std::string::npos;
       call = source.find("weft_grid_arrive_and_wait((unsigned*)", call + 1)) {
    const size_t line = source.rfind('\n', call), before = source.rfind('\n', line - 1), after = source.find('\n', call);
    CHECK(source.substr(before + 1, line - before - 1).find("__syncthreads();") != std::string::npos);
    CHECK(source.substr(after + 1, source.find('\n', after + 1) - after - 1).find("__syncthreads();") != std::string::npos);
  }
  // Kernels without one do not carry the helper.
  CHECK(cuda::render_cuda(testing::lowered_for_cuda(sink({"plain"}, {placeholder({4}, dtypes::uint32, 0)[idx(0)].store(u32(1))})), 90)
            .find("weft_grid_arrive_and_wait") == std::string::npos);
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const int sm : {80, 90}) {
    CAPTURE(sm);
    CHECK(rt::nvrtc_compile(cuda::render_cuda(k, sm), k.name, cuda::nvrtc_arch(k, sm)).size() > 0);
  }
}

TEST_CASE("grid barrier: a counter that is not a uint32 GLOBAL element and a barrier inside a when() are errors") {
  const UOp g = range(4, 0, AxisType::GLOBAL), l = range(kThreads, 1, AxisType::LOCAL);
  CHECK_THROWS_WITH_AS(grid_barrier(placeholder({1}, dtypes::int32, 0)[idx(0)]),
                       doctest::Contains("GRID_BARRIER: the counter must index a GLOBAL buffer of uint32"), Error);
  CHECK_THROWS_WITH_AS(grid_barrier(alloc_shared({1}, dtypes::uint32, 0)[idx(0)]),
                       doctest::Contains("GRID_BARRIER: the counter must index a GLOBAL buffer of uint32"), Error);
  // One counter for the whole grid: one a workgroup would wait on forever.
  CHECK_THROWS_WITH_AS(grid_barrier(placeholder({4}, dtypes::uint32, 0)[g]),
                       doctest::Contains("GRID_BARRIER: the counter must be one element for every thread of the grid"), Error);
  // Every thread of every workgroup must reach it.
  const UOp counter = placeholder({1}, dtypes::uint32, 0), out = placeholder({4 * kThreads}, dtypes::uint32, 1);
  const UOp guarded = when(l < kThreads / 2, {grid_barrier(counter[idx(0)])});
  const UOp after = out.after({guarded})[g * kThreads + l].store(u32(1));
  CHECK_THROWS_WITH_AS(testing::lowered_for_cuda(sink({"guarded"}, {group({guarded, after}).end({g, l})})),
                       doctest::Contains("GRID_BARRIER inside when("), Error);
}

// On a GPU 4 workgroups a multiprocessor (an H100 or H200 has 132): every one resident at once.
// On the emulators 24 workgroups (4 waves each on gfx950 and gfx942), in turns.
WEFT_DEVICE_TEST_CASE("grid barrier: workgroups read each other's writes across two grid barriers, twice on one counter, bit for bit") {
  for (const std::string& target : testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t groups = target.starts_with("emu:") ? 24 : 4 * dev->compute_units().value_or(1), n = groups * kThreads;
    const auto kernel = rt::CompiledKernel::compile(*dev, exchange(groups));
    CHECK(kernel.lowered().cooperative);
    if (target.starts_with("emu:")) {
      // The emulator's memory is one coherent copy, so only the code shows the fences: the agent
      // release (write-back) before the arrival, the acquire (invalidate) after the wait, twice.
      const std::string listing = testing::listing_of(kernel);
      INFO(listing);
      for (const char* what : {"buffer_wbl2", "buffer_inv", "global_atomic_add", "s_sleep"}) {
        CAPTURE(what);
        CHECK(testing::occurrences(listing, what) == 2);
      }
    }
    const rt::DeviceArray counter = testing::put(*dev, dtypes::uint32, std::vector<uint32_t>{0}, "counter");
    const rt::DeviceArray a = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "a");
    const rt::DeviceArray b = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "b");
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      const std::vector<int32_t> drawn = testing::random_ints(static_cast<size_t>(n), 0, 1 << 30);
      const std::vector<uint32_t> in(drawn.begin(), drawn.end());
      const rt::DeviceArray in_d = testing::put(*dev, dtypes::uint32, in, "in");
      const rt::DeviceArray out = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "out");
      const rt::DeviceArray args[] = {out, in_d, a, b, counter};
      kernel.launch(*dev, args);
      const std::vector<uint32_t> got = testing::get<uint32_t>(*dev, out), want = exchange_reference(in);
      int bad = 0;
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && bad++ < 5) FAIL_CHECK("out[" << i << "] = " << got[i] << ", expected " << want[i]);
      CHECK(bad == 0);
      // Each barrier flips the counter's top bit and leaves its low bits at 0: two a launch.
      CHECK(testing::get<uint32_t>(*dev, counter)[0] == 0u);
    }
  }
}

TEST_CASE("grid barrier: a grid larger than the GPU holds at once is an error naming the kernel [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const int64_t groups = 64 * dev->compute_units().value_or(1) + 1, n = groups * kThreads;  // 2048 threads a multiprocessor at most
  const auto kernel = rt::CompiledKernel::compile(*dev, exchange(groups));
  const rt::DeviceArray counter = testing::put(*dev, dtypes::uint32, std::vector<uint32_t>{0}, "counter");
  const rt::DeviceArray in = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "in");
  const rt::DeviceArray a = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "a"), b = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "b");
  const rt::DeviceArray out = testing::poisoned(*dev, dtypes::uint32, static_cast<size_t>(n), "out");
  const rt::DeviceArray args[] = {out, in, a, b, counter};
  CHECK_THROWS_WITH_AS(kernel.launch(*dev, args), doctest::Contains("kernel grid_exchange has a grid barrier"), Error);
}
