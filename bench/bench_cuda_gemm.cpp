// GEMM on an NVIDIA GPU: weft's DSL kernels against cuBLAS in the same run.
//   mma_gemm     bf16 in, fp32 accumulate and out: mma.sync.m16n8k16 + 16-byte cp.async
//   matmul_relu  f16 in and out, fp32 accumulate, scalar FMA on fragments (tilelang's kernel)
//   cuBLAS       cublasGemmEx with the same types (bf16 -> fp32, f16 -> f16), CUBLAS_COMPUTE_32F
// at 4096^3 and 8192^3, TFLOP/s = 2*M*N*K / time. Each weft kernel's result is compared with
// cuBLAS's (max |difference| relative to max |cuBLAS|, as a counter). Without a GPU every
// benchmark says so and is skipped. Also: NVRTC compile latency (no GPU needed).
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "weft/dsl/float_formats.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mma_tile.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/kernel.h"
#include "weft/runtime/nvrtc.h"

namespace {

using weft::DType;
namespace rt = weft::rt;

struct Gpu {
  std::unique_ptr<rt::Device> device;
  cublasHandle_t blas = nullptr;
  std::string error;
};

Gpu& gpu() {
  static Gpu g = [] {
    Gpu x;
    try {
      x.device = rt::open_device("cuda");
      if (cublasCreate(&x.blas) != CUBLAS_STATUS_SUCCESS) x.error = "cublasCreate failed";
    } catch (const std::exception& e) {
      x.error = e.what();
    }
    return x;
  }();
  return g;
}

std::vector<uint8_t> random_16bit(DType dt, size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<uint8_t> bytes(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = dt == weft::dtypes::bfloat16 ? weft::float_to_bf16(d(gen)) : weft::float_to_half(d(gen));
    std::memcpy(&bytes[i * 2], &h, 2);
  }
  return bytes;
}

struct Problem {
  int64_t n;
  DType in, out;
  rt::DeviceArray a, b, c_weft, c_blas;
};

Problem make_problem(int64_t n, DType in, DType out) {
  Problem p{n, in, out, {}, {}, {}, {}};
  rt::Device& dev = *gpu().device;
  p.a = rt::upload(dev, in, random_16bit(in, static_cast<size_t>(n * n), 1), "A");
  p.b = rt::upload(dev, in, random_16bit(in, static_cast<size_t>(n * n), 2), "B");
  const std::vector<uint8_t> zero(static_cast<size_t>(n * n * out.itemsize()), 0);
  p.c_weft = rt::upload(dev, out, zero, "C (weft)");
  p.c_blas = rt::upload(dev, out, zero, "C (cuBLAS)");
  return p;
}

cudaDataType cuda_type(DType d) {
  if (d == weft::dtypes::bfloat16) return CUDA_R_16BF;
  if (d == weft::dtypes::float16) return CUDA_R_16F;
  return CUDA_R_32F;
}

// Row-major C = A B as column-major C^T = B^T A^T.
void cublas_gemm(const Problem& p) {
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(p.n);
  const auto st = cublasGemmEx(gpu().blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, reinterpret_cast<void*>(p.b.buffer.address),
                               cuda_type(p.in), n, reinterpret_cast<void*>(p.a.buffer.address), cuda_type(p.in), n, &beta,
                               reinterpret_cast<void*>(p.c_blas.buffer.address), cuda_type(p.out), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasGemmEx failed: " + std::to_string(static_cast<int>(st)));
}

double value(DType d, const std::vector<uint8_t>& bytes, size_t i) {
  if (d == weft::dtypes::float32) {
    float f;
    std::memcpy(&f, &bytes[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[i * 2], 2);
  return d == weft::dtypes::float16 ? weft::half_to_float(h) : weft::bf16_to_float(h);
}

// max |weft - cuBLAS| / max |cuBLAS| over a sample of the output.
double difference(const Problem& p, bool relu) {
  rt::Device& dev = *gpu().device;
  const auto w = rt::download(dev, p.c_weft), c = rt::download(dev, p.c_blas);
  double diff = 0, scale = 0;
  const size_t count = static_cast<size_t>(p.n * p.n);
  for (size_t i = 0; i < count; i += 97) {
    double ref = value(p.out, c, i);
    if (relu) ref = std::max(ref, 0.0);
    diff = std::max(diff, std::abs(value(p.out, w, i) - ref));
    scale = std::max(scale, std::abs(ref));
  }
  return scale > 0 ? diff / scale : diff;
}

void set_counters(benchmark::State& state, int64_t n) {
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * n * n * static_cast<double>(state.iterations()) / 1e12,
                                                 benchmark::Counter::kIsRate);
}

template <typename F>
void timed(benchmark::State& state, F&& launch) {
  launch();  // warm up (and compile)
  gpu().device->synchronize();
  for (auto _ : state) {
    const auto t = std::chrono::steady_clock::now();
    launch();
    gpu().device->synchronize();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
}

void BM_WeftKernel(benchmark::State& state, const char* which) {
  if (!gpu().error.empty()) return state.SkipWithError(("no NVIDIA GPU: " + gpu().error).c_str());
  const int64_t n = state.range(0);
  const bool relu = std::string(which) == "matmul_relu";
  const DType in = relu ? weft::dtypes::float16 : weft::dtypes::bfloat16, out = relu ? weft::dtypes::float16 : weft::dtypes::float32;
  Problem p = make_problem(n, in, out);
  auto kernel = rt::CompiledKernel::compile(*gpu().device, relu ? weft::gemm::matmul_relu(n, n, n, in) : weft::gemm::mma_gemm(n, n, n, in));
  const rt::DeviceArray args[] = {p.c_weft, p.a, p.b};
  timed(state, [&] { kernel.launch(*gpu().device, args); });
  set_counters(state, n);
  cublas_gemm(p);
  cudaDeviceSynchronize();
  state.counters["rel_diff_vs_cublas"] = difference(p, relu);
  state.counters["nvrtc_s"] = kernel.times().codegen;
}

void BM_Cublas(benchmark::State& state, const char* types) {
  if (!gpu().error.empty()) return state.SkipWithError(("no NVIDIA GPU: " + gpu().error).c_str());
  const int64_t n = state.range(0);
  const bool f16 = std::string(types) == "f16";
  Problem p = make_problem(n, f16 ? weft::dtypes::float16 : weft::dtypes::bfloat16, f16 ? weft::dtypes::float16 : weft::dtypes::float32);
  timed(state, [&] {
    cublas_gemm(p);
  });
  set_counters(state, n);
}

void BM_NvrtcCompile(benchmark::State& state, const char* which) {
  if (!rt::nvrtc_available()) return state.SkipWithError("NVRTC not found");
  const bool relu = std::string(which) == "matmul_relu";
  const weft::UOp k = relu ? weft::gemm::matmul_relu(4096, 4096, 4096, weft::dtypes::float16)
                           : weft::gemm::mma_gemm(4096, 4096, 4096, weft::dtypes::bfloat16);
  for (auto _ : state) {
    weft::lower::LowerOptions options;
    options.wave_size = 32;  // NVIDIA warps
    auto lowered = weft::lower::lower(k, options);
    auto cubin = rt::nvrtc_compile(weft::cuda::render_cuda(lowered, 90), lowered.name, "sm_90");
    benchmark::DoNotOptimize(cubin.data());
  }
}

BENCHMARK_CAPTURE(BM_WeftKernel, mma_gemm_bf16, "mma_gemm")->Arg(4096)->Arg(8192)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Cublas, bf16_fp32, "bf16")->Arg(4096)->Arg(8192)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WeftKernel, matmul_relu_f16, "matmul_relu")->Arg(4096)->Arg(8192)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Cublas, f16_f16, "f16")->Arg(4096)->Arg(8192)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NvrtcCompile, mma_gemm, "mma_gemm")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NvrtcCompile, matmul_relu, "matmul_relu")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
