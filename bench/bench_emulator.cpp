// Emulator speed: time per executed wave-instruction for a VALU loop and for a
// v_mfma_f32_16x16x32_bf16 loop (gfx950), on one host thread and on all of them; with LLVM, one
// launch of hk_gemm 512^3 (the kernel issue 13's 10 ms target is set on) on gfx950 and gfx942.
// The aim (issue 3): <= 15 ns per VALU wave-instruction and <= 1 us per 16x16x32 bf16 MFMA on one
// core, 100x tinygrad's Python emulator (about 1.5 us and 90 us); see docs/PERF.md.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <thread>

#include "../tests/emulator/toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/mfma.h"
#ifdef WEFT_BENCH_HK_GEMM
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/runtime/kernel.h"
#endif

using namespace weft::emu;

namespace {

// 16 dependent fp32 FMAs per iteration, `iters` iterations, per work-item.
const char* kValuKernel = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)
define amdgpu_kernel void @valu(ptr addrspace(1) %out, i32 %iters) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %x0 = uitofp i32 %tid to float
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %x = phi float [%x0, %entry], [%x16, %loop]
  %x1 = call float @llvm.fma.f32(float %x, float 0x3FEFFFFFE0000000, float 1.0)
  %x2 = call float @llvm.fma.f32(float %x1, float 0x3FEFFFFFE0000000, float 1.0)
  %x3 = call float @llvm.fma.f32(float %x2, float 0x3FEFFFFFE0000000, float 1.0)
  %x4 = call float @llvm.fma.f32(float %x3, float 0x3FEFFFFFE0000000, float 1.0)
  %x5 = call float @llvm.fma.f32(float %x4, float 0x3FEFFFFFE0000000, float 1.0)
  %x6 = call float @llvm.fma.f32(float %x5, float 0x3FEFFFFFE0000000, float 1.0)
  %x7 = call float @llvm.fma.f32(float %x6, float 0x3FEFFFFFE0000000, float 1.0)
  %x8 = call float @llvm.fma.f32(float %x7, float 0x3FEFFFFFE0000000, float 1.0)
  %x9 = call float @llvm.fma.f32(float %x8, float 0x3FEFFFFFE0000000, float 1.0)
  %x10 = call float @llvm.fma.f32(float %x9, float 0x3FEFFFFFE0000000, float 1.0)
  %x11 = call float @llvm.fma.f32(float %x10, float 0x3FEFFFFFE0000000, float 1.0)
  %x12 = call float @llvm.fma.f32(float %x11, float 0x3FEFFFFFE0000000, float 1.0)
  %x13 = call float @llvm.fma.f32(float %x12, float 0x3FEFFFFFE0000000, float 1.0)
  %x14 = call float @llvm.fma.f32(float %x13, float 0x3FEFFFFFE0000000, float 1.0)
  %x15 = call float @llvm.fma.f32(float %x14, float 0x3FEFFFFFE0000000, float 1.0)
  %x16 = call float @llvm.fma.f32(float %x15, float 0x3FEFFFFFE0000000, float 1.0)
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %iters
  br i1 %more, label %loop, label %done
done:
  %p = getelementptr float, ptr addrspace(1) %out, i32 %tid
  store float %x16, ptr addrspace(1) %p
  ret void
}
)";

// `iters` chained v_mfma_f32_16x16x32_bf16 per wave.
const char* kMfmaKernel = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, i32, i32, i32)
define amdgpu_kernel void @mfma(ptr addrspace(1) %ab, ptr addrspace(1) %out, i32 %iters) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <8 x bfloat>, ptr addrspace(1) %ab, i32 %tid
  %a = load <8 x bfloat>, ptr addrspace(1) %pa
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %acc = phi <4 x float> [zeroinitializer, %entry], [%acc1, %loop]
  %acc1 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %a, <8 x bfloat> %a, <4 x float> %acc, i32 0, i32 0, i32 0)
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %iters
  br i1 %more, label %loop, label %done
done:
  %p = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %tid
  store <4 x float> %acc1, ptr addrspace(1) %p
  ret void
}
)";

const CodeObject& compiled(const char* ir) {
  static std::map<const char*, CodeObject> cache;
  auto it = cache.find(ir);
  if (it == cache.end()) it = cache.emplace(ir, CodeObject::load(weft::testing::compile_ll(ir, "gfx950"))).first;
  return it->second;
}

void run(benchmark::State& state, const char* ir, const char* kernel, const char* counted, uint32_t iters, uint64_t in_bytes) {
  const CodeObject& code = compiled(ir);
  const uint32_t groups = static_cast<uint32_t>(state.range(0)), threads = static_cast<uint32_t>(state.range(1));
  GlobalMemory mem;
  const uint64_t in = mem.allocate(in_bytes, "in");
  const uint64_t out = mem.allocate(uint64_t{groups} * 256 * 16, "out");
  LaunchOptions o;
  o.grid = {groups, 1, 1};
  o.block = {256, 1, 1};
  o.host_threads = static_cast<int>(threads);
  o.sanitize = state.range(2) != 0;  // hazard mode (docs/emulator.md)
  if (std::string(kernel) == "valu") {
    o.kernarg.resize(12);
    std::memcpy(o.kernarg.data(), &out, 8);
    std::memcpy(o.kernarg.data() + 8, &iters, 4);
  } else {
    o.kernarg.resize(20);
    std::memcpy(o.kernarg.data(), &in, 8);
    std::memcpy(o.kernarg.data() + 8, &out, 8);
    std::memcpy(o.kernarg.data() + 16, &iters, 4);
  }
  // One untimed run with per-opcode statistics says what share of the instructions is `counted`.
  LaunchOptions counting = o;
  counting.stats = true;
  const RunReport census = run_kernel(code, kernel, mem, counting);
  uint64_t counted_instructions = 0;
  for (const auto& [name, n] : census.per_opcode)
    if (name.find(counted) != std::string::npos) counted_instructions += n;
  uint64_t instructions = 0, runs = 0;
  for (auto _ : state) {
    instructions += run_kernel(code, kernel, mem, o).instructions;
    ++runs;
  }
  state.counters["wave_instr_per_s"] = benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate);
  state.counters["ns_per_wave_instr"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
  state.counters[std::string(counted) + "_share"] = static_cast<double>(counted_instructions) / static_cast<double>(census.instructions);
  // Time per `counted` instruction, all other instructions of the loop charged to it.
  state.counters[std::string("ns_per_") + counted] = benchmark::Counter(static_cast<double>(counted_instructions * runs),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

void BM_ValuFma(benchmark::State& state) { run(state, kValuKernel, "valu", "v_fma", 1024, 16); }
void BM_Mfma16x16x32Bf16(benchmark::State& state) { run(state, kMfmaKernel, "mfma", "v_mfma", 256, 256 * 16); }

// The MFMA arithmetic alone (execute_mfma on register files), without the executor around it.
// `reused`: the same A and B bits every call, so their decode is reused (as when a GEMM feeds
// one fragment to a run of MFMAs); otherwise one bit of A and of B changes every call, so both
// are decoded each time.
void BM_ExecuteMfma16x16x32Bf16(benchmark::State& state, bool reused) {
  const MfmaOp* op = find_mfma("v_mfma_f32_16x16x32_bf16", Arch::Gfx950);
  std::vector<uint32_t> a(4 * 64, 0x3f803f80u), b(4 * 64, 0x3f803f80u), c(4 * 64, 0), d(4 * 64);
  for (auto _ : state) {
    if (!reused) {
      a[0] ^= 1;
      b[0] ^= 1;
    }
    execute_mfma(*op, Arch::Gfx950, a.data(), b.data(), c.data(), d.data());
    benchmark::DoNotOptimize(d.data());
  }
}

#ifdef WEFT_BENCH_HK_GEMM
// hk_gemm 512 x 512 x 512 (bf16 in, bf16 out: 4 workgroups of 8 waves, 16384 MFMA
// wave-instructions on gfx950), one launch per iteration; the compile is outside the timing.
void BM_HkGemm512(benchmark::State& state, const char* arch) {
  weft::rt::EmulatorOptions emulator;
  emulator.host_threads = static_cast<int>(state.range(0));
  emulator.sanitize = state.range(1) != 0;  // hazard mode
  const auto device = weft::rt::open_device(std::string("emu:") + arch, emulator);
  const weft::rt::CompiledKernel kernel = weft::rt::CompiledKernel::compile(*device, weft::gemm::hk_gemm(arch));
  constexpr int64_t kSize = 512;
  std::mt19937 gen(1);
  std::uniform_int_distribution<uint32_t> bf16(0x3e00, 0x3fff);  // bf16 codes of 0.125 up to 2
  std::vector<uint8_t> a(kSize * kSize * 2), b(kSize * kSize * 2);
  for (size_t i = 0; i < a.size(); i += 2) {
    const uint32_t x = bf16(gen) ^ (gen() & 1u) << 15, y = bf16(gen) ^ (gen() & 1u) << 15;
    std::memcpy(&a[i], &x, 2);
    std::memcpy(&b[i], &y, 2);
  }
  using weft::dtypes::bfloat16;
  const weft::rt::OwnedArray da(*device, weft::rt::upload(*device, bfloat16, a, "A")),
      db(*device, weft::rt::upload(*device, bfloat16, b, "B")),
      dc(*device, weft::rt::upload(*device, bfloat16, std::vector<uint8_t>(a.size(), 0), "C"));
  const weft::rt::DeviceArray args[] = {dc, da, db};
  const std::map<std::string, weft::rt::ScalarValue> sizes = {{"M", kSize}, {"N", kSize}, {"K", kSize}};
  for (auto _ : state) kernel.launch(*device, args, sizes);
}

// matmul_relu 256 x 256 x 256 in float32 (the README's kernel; issue 14: at most 5 ms a launch on
// one host thread), one launch per iteration; the compile is outside the timing.
void BM_MatmulRelu256(benchmark::State& state) {
  weft::rt::EmulatorOptions emulator;
  emulator.host_threads = static_cast<int>(state.range(0));
  emulator.sanitize = state.range(1) != 0;
  const auto device = weft::rt::open_device("emu:gfx950", emulator);
  constexpr int64_t kSize = 256;
  using weft::dtypes::float32;
  const weft::rt::CompiledKernel kernel = weft::rt::CompiledKernel::compile(*device, weft::gemm::matmul_relu(kSize, kSize, kSize, float32));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint8_t> a(kSize * kSize * 4), b(kSize * kSize * 4);
  for (size_t i = 0; i < a.size(); i += 4) {
    const float x = dist(gen), y = dist(gen);
    std::memcpy(&a[i], &x, 4);
    std::memcpy(&b[i], &y, 4);
  }
  const weft::rt::OwnedArray da(*device, weft::rt::upload(*device, float32, a, "A")), db(*device, weft::rt::upload(*device, float32, b, "B")),
      dc(*device, weft::rt::upload(*device, float32, std::vector<uint8_t>(a.size(), 0), "C"));
  const weft::rt::DeviceArray args[] = {dc, da, db};
  for (auto _ : state) kernel.launch(*device, args);
}
#endif

const int kAllThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

}  // namespace

// hazards:1 runs the same launches in hazard mode (the sanitizer), to compare with hazards:0.
BENCHMARK(BM_ValuFma)->ArgNames({"groups", "threads", "hazards"})->Args({8, 1, 0})->Args({8, kAllThreads, 0})->Args({8, 1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Mfma16x16x32Bf16)->ArgNames({"groups", "threads", "hazards"})->Args({8, 1, 0})->Args({8, kAllThreads, 0})->Args({8, 1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ExecuteMfma16x16x32Bf16, decoded, false);
BENCHMARK_CAPTURE(BM_ExecuteMfma16x16x32Bf16, reused, true);
#ifdef WEFT_BENCH_HK_GEMM
BENCHMARK_CAPTURE(BM_HkGemm512, gfx950, "gfx950")->ArgNames({"threads", "hazards"})->Args({1, 0})->Args({kAllThreads, 0})->Args({1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_HkGemm512, gfx942, "gfx942")->ArgNames({"threads", "hazards"})->Args({1, 0})->Args({kAllThreads, 0})->Args({1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatmulRelu256)->ArgNames({"threads", "hazards"})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
BENCHMARK_MAIN();
