// The compile suite: how long weft takes from a kernel's graph to loadable code, per stage, with
// the compile cache off. AMD kernels compile for emu:gfx950 (weft's passes, the LLVM module, O3,
// the code generator, lld, loading); NVIDIA kernels compile for sm_90 through NVRTC, which
// needs no GPU. No peer: compile latency has no like-for-like library here.
#include <chrono>

#include "suite_common.h"
#include "weft/bench/timing.h"
#include "weft/dsl/error.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mma_tile.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/kernel.h"
#include "weft/runtime/nvrtc.h"

namespace weft::bench {

namespace {

struct Stages {
  std::vector<std::pair<std::string, std::vector<double>>> seconds;  // per stage, every repetition
  void add(const std::string& stage, double s) {
    for (auto& [name, v] : seconds)
      if (name == stage) return v.push_back(s);
    seconds.push_back({stage, {s}});
  }
};

Result compile_line(const std::string& kernel, const std::string& target, const std::function<void(Stages&)>& compile_once, const Options& o) {
  Result r;
  r.suite = "compile";
  r.kernel = kernel;
  r.size = target;
  r.device = "host CPU";
  r.unit = "ms";
  Stages stages;
  r.weft = time_on_host([&] { compile_once(stages); }, o);
  // The warm-up compiles were recorded too: keep the timed repetitions' stage times only.
  for (auto& [name, v] : stages.seconds) {
    Timing t;
    t.seconds.assign(v.end() - static_cast<std::ptrdiff_t>(r.weft.seconds.size()), v.end());
    r.details.push_back({name + " ms", t.median() * 1e3});
  }
  return r;
}

double since(std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }

Result amd(const std::string& kernel, const UOp& graph, const Options& o) {
  Options one = o;
  one.device = "emu:gfx950";
  auto device = open(one, "emu:gfx950");
  return compile_line(kernel, "gfx950", [&](Stages& s) {
    const rt::CompiledKernel k = rt::CompiledKernel::compile(*device, graph);
    const rt::CompileTimes& t = k.times();
    s.add("lower", t.lower), s.add("render", t.render), s.add("optimize", t.optimize), s.add("codegen", t.codegen), s.add("link", t.link);
    s.add("load", t.load);
  }, o);
}

Result nvidia(const std::string& kernel, const UOp& graph, const Options& o) {
  if (!rt::nvrtc_available()) throw Error("weft bench compile: " + kernel + " compiles through NVRTC, which was not found");
  return compile_line(kernel, "sm_90", [&](Stages& s) {
    auto t = std::chrono::steady_clock::now();
    lower::LowerOptions options;
    options.wave_size = 32;  // NVIDIA warps, as CompiledKernel::compile lowers for a CUDA device
    const lower::LoweredKernel lowered = lower::lower(graph, options);
    s.add("lower", since(t));
    t = std::chrono::steady_clock::now();
    const std::string source = cuda::render_cuda(lowered, 90);
    s.add("render", since(t));
    t = std::chrono::steady_clock::now();
    const std::vector<uint8_t> cubin = rt::nvrtc_compile(source, lowered.name, cuda::nvrtc_arch(lowered, 90));  // sm_90a for Hopper's instructions
    s.add("nvrtc", since(t));
  }, o);
}

std::vector<Result> run_compile(const Options& o) {
  struct Entry {
    std::string kernel;
    std::function<Result()> run;
  };
  const std::vector<Entry> entries = {
      {"matmul_relu", [&] { return amd("matmul_relu", gemm::matmul_relu(256, 256, 256, dtypes::float32), o); }},
      {"hk_gemm", [&] { return amd("hk_gemm", gemm::hk_gemm("gfx950"), o); }},
      {"mma_gemm", [&] { return nvidia("mma_gemm", gemm::mma_gemm(4096, 4096, 4096, dtypes::bfloat16), o); }},
      {"hopper_gemm", [&] { return nvidia("hopper_gemm", gemm::hopper_gemm(dtypes::bfloat16), o); }},
  };
  std::vector<Result> out;
  for (const Entry& e : entries) {
    if (!o.kernel.empty() && o.kernel != e.kernel) continue;
    tell(o, "compile " + e.kernel);
    if (!o.kernel.empty()) {
      out.push_back(e.run());
      continue;
    }
    // The whole suite: a kernel whose compiler this build or machine lacks (no LLVM, no NVRTC)
    // is a line that says so, and the others still run.
    try {
      out.push_back(e.run());
    } catch (const Error& error) {
      Result r;
      r.suite = "compile";
      r.kernel = e.kernel;
      r.device = "host CPU";
      r.not_run = error.what();
      out.push_back(std::move(r));
    }
  }
  if (out.empty()) throw Error("weft bench compile: no kernel named " + o.kernel);
  return out;
}

}  // namespace

Suite compile_suite() {
  return {"compile", "compile latency per stage, cache off: AMD kernels for gfx950 (LLVM in-process), NVIDIA ones for sm_90 (NVRTC)",
          {"matmul_relu", "hk_gemm", "mma_gemm", "hopper_gemm"}, run_compile};
}

}  // namespace weft::bench
