// The host's cost of a launch: what weft does between a kernel author's launch call and the
// device's own submission (argument checks against the kernel's parameters, buffer sizes, the
// launch dimensions), measured on a device that records the launch and does nothing else, so
// that the driver's cost is left out. Kernels: MoE routing's two (route_counting, align_place:
// launch_router, T = 16384, E = 256, k = 8, bf16 logits), compiled for gfx950; hopper_gemm
// (bf16, 4096^3: four kernel variables, three tensor maps), compiled for sm_90a by NVRTC (skipped
// with its error where NVRTC is absent).
//
// Why it matters: a short kernel's time on the GPU is of the order of this cost (route+align
// runs about 20 us, a 4096 x 4096 x 1024 GEMM about 60), and a launch timed with events
// includes the host's work between them.
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>

#include "weft/gemm/hopper_gemm.h"
#include "weft/moe/router.h"
#include "weft/runtime/device.h"

namespace {

using namespace weft;

class NullModule : public rt::Module {
 public:
  std::vector<std::string> kernels() const override { return {}; }
};

// Addresses from a counter, no memory; launches counted, not run.
class NullDevice : public rt::Device {
 public:
  explicit NullDevice(std::string arch) : arch_(std::move(arch)) {}
  std::string name() const override { return "null:" + arch_; }
  std::string arch() const override { return arch_; }
  rt::Buffer allocate(size_t bytes, std::string) override {
    const rt::Buffer b{next_, bytes};
    next_ += (bytes + 255) / 256 * 256;
    return b;
  }
  void free(const rt::Buffer&) override {}
  void copy_to_device(const rt::Buffer&, std::span<const uint8_t>) override {}
  void copy_from_device(std::span<uint8_t>, const rt::Buffer&) override {}
  void copy_on_device(const rt::Buffer&, const rt::Buffer&, size_t) override {}
  std::shared_ptr<rt::Module> load(std::vector<uint8_t>) override { return std::make_shared<NullModule>(); }
  void launch(rt::Module&, const std::string&, rt::Dim3 grid, rt::Dim3, std::span<const rt::Arg> args, rt::LaunchMode) override {
    launches_ += grid.x + args.size();  // something the optimizer cannot drop
  }
  void synchronize() override {}
  std::shared_ptr<rt::Event> record_event() override { return nullptr; }
  double elapsed_seconds(const rt::Event&, const rt::Event&) override { return 0; }
  uint64_t launches() const { return launches_; }

 private:
  std::string arch_;
  uint64_t next_ = 1 << 20, launches_ = 0;
};

rt::DeviceArray array(rt::Device& device, DType dtype, int64_t elements) {
  return {device.allocate(static_cast<size_t>(elements * dtype.itemsize()), "array"), dtype, static_cast<size_t>(elements)};
}

void count_launches(benchmark::State& state, int per_iteration) {
  state.counters["per_launch"] = benchmark::Counter(static_cast<double>(state.iterations()) * per_iteration,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_LaunchRouter(benchmark::State& state) {
  NullDevice device("gfx950");
  moe::RouteConfig config;
  config.tokens = 16384, config.experts = 256, config.top_k = 8, config.logits = dtypes::bfloat16;
  const moe::Router router = moe::compile_router(device, config, 128);
  const rt::DeviceArray logits = array(device, dtypes::bfloat16, config.tokens * config.experts);
  const moe::PlanBuffers plan = moe::allocate_plan(device, router.shape);
  for (auto _ : state) moe::launch_router(device, router, logits, nullptr, plan);
  benchmark::DoNotOptimize(device.launches());
  count_launches(state, 2);
}

void BM_LaunchHopperGemm(benchmark::State& state) {
  NullDevice device("sm_90");
  const int64_t m = 4096, n = 4096, k = 4096;
  std::optional<rt::CompiledKernel> kernel;
  try {
    kernel = rt::CompiledKernel::compile(device, gemm::hopper_gemm(dtypes::bfloat16));
  } catch (const Error& e) {
    state.SkipWithError(e.what());  // no NVRTC here
    return;
  }
  const rt::DeviceArray args[] = {array(device, dtypes::bfloat16, m * n), array(device, dtypes::bfloat16, m * k),
                                  array(device, dtypes::bfloat16, n * k)};
  const std::map<std::string, rt::ScalarValue> sizes = {{"M", m}, {"N", n}, {"K", k}, {"CTAS", int64_t{132}}};
  for (auto _ : state) kernel->launch(device, args, sizes);
  benchmark::DoNotOptimize(device.launches());
  count_launches(state, 1);
}

BENCHMARK(BM_LaunchRouter)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchHopperGemm)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
