// Compile latency of a DSL kernel, graph to code object: matmul_relu (256x256x256, float16 and
// float32) through weft's passes, the LLVM IR renderer, LLVM's O3 pipeline, the AMDGPU code
// generator and lld, for gfx950 and gfx942. Counters split the time by stage (seconds per
// compile). Peers (issue 4, quoted, not measured here): TileLang 8-21 s per kernel, CuTe DSL up
// to minutes; the aim is well under one second.
#include <benchmark/benchmark.h>

#include <chrono>

#include "weft/gemm/matmul_relu.h"
#include "weft/lowering/amdgpu_codegen.h"
#include "weft/lowering/pipeline.h"

namespace {

void BM_CompileMatmulRelu(benchmark::State& state, const char* target, weft::DType dtype) {
  const weft::UOp kernel = weft::gemm::matmul_relu(256, 256, 256, dtype);
  double passes = 0, render = 0, optimize = 0, codegen = 0, link = 0;
  for (auto _ : state) {
    const auto t = std::chrono::steady_clock::now();
    const weft::lower::LoweredKernel lowered = weft::lower::lower(kernel);
    passes += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const weft::amdgpu::KernelCode code = weft::amdgpu::compile_kernel(lowered, target);
    benchmark::DoNotOptimize(code.code_object.data());
    render += code.times.parse_seconds;
    optimize += code.times.optimize_seconds;
    codegen += code.times.llvm_seconds;
    link += code.times.link_seconds;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["weft_passes_s"] = passes / n;
  state.counters["render_s"] = render / n;
  state.counters["llvm_O3_s"] = optimize / n;
  state.counters["llvm_codegen_s"] = codegen / n;
  state.counters["lld_s"] = link / n;
}

BENCHMARK_CAPTURE(BM_CompileMatmulRelu, gfx950_f32, "gfx950", weft::dtypes::float32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileMatmulRelu, gfx950_f16, "gfx950", weft::dtypes::float16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileMatmulRelu, gfx942_f16, "gfx942", weft::dtypes::float16)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
