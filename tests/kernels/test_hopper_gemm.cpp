// hopper_gemm (gemm/hopper_gemm.h): the warp-specialized TMA + wgmma GEMM. Without a GPU: the
// lowered program (producer and consumer branches, the mbarrier ring) rendered and compiled by
// NVRTC for sm_90a. On an H200 ("[cuda]"): identity bit-exact, random and ragged shapes against a
// double-precision reference.
#include <doctest/doctest.h>

#include <algorithm>

#include "hopper_roles.h"
#include "kernel_harness.h"
#include "occurrences.h"
#include "skip.h"
#include "weft/dsl/print.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/runtime/nvrtc.h"

using weft::testing::occurrences;

using namespace weft;

namespace {

lower::LoweredKernel lowered(const UOp& kernel) {
  lower::LowerOptions options;
  options.wave_size = 32;
  return lower::lower(lower::canonical_allocations(kernel), options);
}

void check_hopper_gemm(rt::Device& dev, const gemm::HopperGemmSpec& spec, int64_t m, int64_t n, int64_t k,
                       gemm::HopperInputs inputs = gemm::HopperInputs::Uniform) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(spec.input.name());
  CAPTURE(spec.output.name());
  CAPTURE(static_cast<int>(spec.epilogue.scale));
  CAPTURE(spec.epilogue.bias);
  CAPTURE(static_cast<int>(spec.epilogue.activation));
  CAPTURE(static_cast<int>(inputs));
  const gemm::RunResult r = gemm::run_hopper_gemm(dev, spec, m, n, k, inputs, weft::testing::rng()());
  INFO(r.check.first_bad);
  CHECK(r.check.count == static_cast<size_t>(m * n));
  CHECK(r.check.passed());
}

void check_hopper_gemm(rt::Device& dev, int64_t m, int64_t n, int64_t k, DType output, bool identity_b = false) {
  check_hopper_gemm(dev, gemm::HopperGemmSpec{dtypes::bfloat16, output, {}}, m, n, k,
                    identity_b ? gemm::HopperInputs::Identity : gemm::HopperInputs::Uniform);
}

const gemm::HopperGemmSpec kFp8{dtypes::fp8e4m3, dtypes::bfloat16, {}};

// The arrival counts of a kernel's mbarrier inits, in the order the IR lists them.
std::vector<int64_t> mbarrier_counts(const UOp& kernel) {
  std::vector<int64_t> counts;
  for (const UOp& u : toposort(kernel))
    if (u.op() == Op::MBARRIER && static_cast<MbarrierOp>(u.arg_as<EffectArg>().value) == MbarrierOp::Init)
      counts.push_back(static_cast<int64_t>(u.src(1).const_int()));
  return counts;
}

}  // namespace

TEST_CASE("hopper_gemm renders a producer and two consumer warpgroups around an mbarrier ring, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  gemm::HopperGemmSpec tma{};
  tma.store = gemm::HopperStore::Tma;
  CHECK(gemm::HopperGemmSpec{}.store == gemm::HopperStore::Tma);  // the default since it ran on an H100 (session 18)
  // Each stage's full barrier waits for the producer's arrival, its empty one for both consumers' 8 warps.
  CHECK(mbarrier_counts(gemm::hopper_gemm(tma)) == std::vector<int64_t>{1, 8, 1, 8, 1, 8, 1, 8});
  const lower::LoweredKernel k = lowered(gemm::hopper_gemm(tma));
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  CHECK(cuda::nvrtc_arch(k, 90) == "sm_90a");
  CHECK(src.find("__launch_bounds__(384)") != std::string::npos);
  // Three tensor maps (A and B loaded, C stored), 8 mbarriers initialized, the MMAs, 192 KiB of
  // dynamic shared memory for the ring and 32 KiB for the epilogue's staging boxes.
  CHECK(occurrences(src, "__grid_constant__ weft_tensor_map") == 3);
  CHECK(occurrences(src, "mbarrier.init.shared::cta.b64") == 8);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d.shared::cluster.global") == 2);
  // The epilogue: each warp stores its 16 rows in 4 chunks of 64 columns (128 bytes of bf16), each
  // after the store two chunks back has read its staging box, and waits for the last before the end.
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 4);
  CHECK(occurrences(src, "cp.async.bulk.wait_group.read 1;") == 4);
  CHECK(occurrences(src, "cp.async.bulk.wait_group.read 0;") == 1);
  // Lane 0 of a warp: the stage releases (once a warp), the 4 stores and the 5 waits.
  CHECK(occurrences(src, "& 31u) == 0u) asm volatile") == 10);
  // The proxy fence before each store; the main loop's wgmma fence is the register fence only
  // (TMA filled the stage).
  CHECK(occurrences(src, "asm volatile(\"fence.proxy.async.shared::cta;\" :::") == 4);
  // Every wgmma and TMA statement lies inside a role's branch: the consumer loop runs in the
  // consumer warpgroups only (a when() around the last wait alone left the loop to every warp,
  // and the producer warp then spun on a full barrier's next phase: the H200 hang).
  CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
  CHECK(cuda::dynamic_shared_bytes(k) >= 4 * (128 + 256) * 64 * 2 + 32 * 1024);
  CHECK(cuda::dynamic_shared_bytes(k) <= 227 * 1024);
  CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(dtypes::float16), doctest::Contains("bfloat16 or float32, not float16"), Error);
  // C's rows not a multiple of 16 bytes (a tensor map cannot describe them): masked stores of
  // each thread's elements, no staging, no C tensor map.
  const gemm::HopperGemmSpec bf16 = tma;
  CHECK(bf16.for_columns(1030).store == gemm::HopperStore::Direct);
  CHECK(bf16.for_columns(1032).store == gemm::HopperStore::Tma);
  gemm::HopperGemmSpec f32{dtypes::bfloat16, dtypes::float32, {}};
  f32.store = gemm::HopperStore::Tma;
  CHECK(f32.for_columns(257).store == gemm::HopperStore::Direct);
  CHECK(f32.for_columns(260).store == gemm::HopperStore::Tma);
  const lower::LoweredKernel direct = lowered(gemm::hopper_gemm(bf16.for_columns(1030)));
  const std::string direct_src = cuda::render_cuda(direct, 90);
  CHECK(occurrences(direct_src, "__grid_constant__ weft_tensor_map") == 2);
  CHECK(occurrences(direct_src, "bulk_group") == 0);
  CHECK(cuda::dynamic_shared_bytes(direct) < cuda::dynamic_shared_bytes(k));
  CHECK(rt::nvrtc_compile(direct_src, direct.name, "sm_90a").size() > 0);
}

TEST_CASE("hopper_gemm with fp8 inputs renders m64n256k32 e4m3 wgmmas over 128-byte K steps, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  gemm::HopperGemmSpec fp8_tma = kFp8;
  fp8_tma.store = gemm::HopperStore::Tma;
  const lower::LoweredKernel k = lowered(gemm::hopper_gemm(fp8_tma));
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  // fp8 wgmma takes no transpose operands: "p, 1, 1;" ends the operand list.
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") != std::string::npos);
  CHECK(src.find("p, 1, 1;") != std::string::npos);
  CHECK(src.find("k16") == std::string::npos);
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d.shared::cluster.global") == 2);
  CHECK(occurrences(src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 4);
  CHECK(cuda::dynamic_shared_bytes(k) >= 4 * (128 + 256) * 128);
  // A float32 C: chunks of 32 columns (128 bytes), 8 stores a warp, the same 32 KiB of staging.
  gemm::HopperGemmSpec f32_tma{dtypes::bfloat16, dtypes::float32, {}};
  f32_tma.store = gemm::HopperStore::Tma;
  const lower::LoweredKernel f32 = lowered(gemm::hopper_gemm(f32_tma));
  const std::string f32_src = cuda::render_cuda(f32, 90);
  CHECK(occurrences(f32_src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 8);
  CHECK(cuda::dynamic_shared_bytes(f32) == cuda::dynamic_shared_bytes(k));
  CHECK(rt::nvrtc_compile(f32_src, f32.name, "sm_90a").size() > 0);
  CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(gemm::HopperGemmSpec{dtypes::fp8e5m2, dtypes::bfloat16, {}}),
                       doctest::Contains("bfloat16 or float8_e4m3fn, not float8_e5m2"), Error);
}

TEST_CASE("hopper_gemm's epilogue takes its buffers in slot order and renders bias, scales and GELU") {
  using gemm::Activation, gemm::OperandScale;
  const gemm::HopperEpilogue all{OperandScale::PerRow, true, Activation::Gelu};
  const gemm::HopperGemmSlots slots = gemm::hopper_gemm_slots(all);
  CHECK(slots.bias == 3);
  CHECK(slots.scale_a == 4);
  CHECK(slots.scale_b == 5);
  const gemm::HopperGemmSlots scales_only = gemm::hopper_gemm_slots({OperandScale::PerTensor, false, Activation::None});
  CHECK(scales_only.bias == -1);
  CHECK(scales_only.scale_a == 3);
  CHECK(gemm::hopper_gemm_slots({}).scale_b == -1);
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  const lower::LoweredKernel k = lowered(gemm::hopper_gemm(gemm::HopperGemmSpec{dtypes::fp8e4m3, dtypes::bfloat16, all}));
  std::vector<int64_t> buffer_slots;
  for (const lower::KernelParam& p : k.params)
    if (p.kind == lower::KernelParam::Kind::Buffer) buffer_slots.push_back(p.slot);
  CHECK(buffer_slots == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  const std::string src = cuda::render_cuda(k, 90);
  INFO(src);
  CHECK(src.find("exp2f") != std::string::npos);  // GELU's exponential
  CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
}

TEST_CASE("hopper_gemm in clusters of two CTAs renders B's multicast halves, remote stage releases and cluster barriers, and compiles for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const gemm::HopperStore store : {gemm::HopperStore::Tma, gemm::HopperStore::Direct}) {
    CAPTURE(static_cast<int>(store));
    gemm::HopperGemmSpec spec;
    spec.cluster = 2;
    spec.store = store;
    const lower::LoweredKernel k = lowered(gemm::hopper_gemm(spec));
    const std::string src = cuda::render_cuda(k, 90);
    INFO(src);
    CHECK(k.cluster == 2);
    CHECK(src.find("__launch_bounds__(384) __cluster_dims__(2, 1, 1) hopper_gemm(") != std::string::npos);
    // A's box as before, B's half (128 rows) multicast to both CTAs; B's tensor map is the half box.
    CHECK(occurrences(src, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [") == 1);
    CHECK(occurrences(src, "complete_tx::bytes.multicast::cluster") == 1);
    CHECK(k.params.back().slot == 2);  // tensor maps come last, by slot
    CHECK(k.params.back().box.rows == 128);
    // Each consumer warp releases a stage on both CTAs' empty barriers (16 arrivals a phase), at
    // CTA scope: a release at cluster scope here made the kernel 2.3x slower (docs/PERF.md).
    CHECK(occurrences(src, "mbarrier.arrive.shared::cluster.b64 _, [remote]") == 2);
    CHECK(occurrences(src, "release.cluster.shared::cluster") == 0);
    CHECK(occurrences(src, "mbarrier.arrive.shared::cta.b64") == 0);
    // The cluster barrier after the barriers' inits and before the end, reached by every thread.
    CHECK(occurrences(src, "barrier.cluster.arrive.release.aligned") == 2);
    CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
    CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
  }
  gemm::HopperGemmSpec three;
  three.cluster = 3;
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(three), doctest::Contains("a cluster of 3 CTAs; it takes 1 or 2"), Error);
  gemm::HopperGemmSpec grouped{dtypes::bfloat16, dtypes::bfloat16, {}, 128};
  grouped.store = gemm::HopperStore::Direct;
  grouped.cluster = 2;
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(grouped), doctest::Contains("the grouped form runs one workgroup per block"), Error);
}

// The ping-pong schedules (HopperSchedule): each consumer warpgroup its own blocks, in turn.
TEST_CASE("hopper_gemm's ping-pong schedules render one consumer a block, its own stage releases, and compile for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  struct Case {
    gemm::HopperSchedule schedule;
    const char* mma;
    int64_t stages, mmas;
  };
  for (const Case& c : {Case{gemm::HopperSchedule::PingPong, "m64n128k16", 6, 2}, Case{gemm::HopperSchedule::PingPongWide, "m64n256k16", 4, 1}}) {
    for (const DType output : {dtypes::bfloat16, dtypes::float32}) {
      CAPTURE(c.mma);
      CAPTURE(output.name());
      gemm::HopperGemmSpec spec{dtypes::bfloat16, output, {}};
      spec.schedule = c.schedule;
      const gemm::HopperGemmShape shape = spec.shape();
      CHECK(shape.ping_pong);
      CHECK(shape.consumer_rows() == shape.block_m);
      CHECK(shape.halves() * 64 == shape.block_m);
      const UOp kernel = gemm::hopper_gemm(spec);
      // A full barrier a stage (the producer's arrival), an empty one (one consumer's 4 warps) and
      // a turn barrier a consumer (the other's 4 warps).
      std::vector<int64_t> counts = mbarrier_counts(kernel);
      std::sort(counts.begin(), counts.end());
      std::vector<int64_t> expected(c.stages, 1);
      expected.insert(expected.end(), c.stages + 2, 4);
      CHECK(counts == expected);
      const lower::LoweredKernel k = lowered(kernel);
      const std::string src = cuda::render_cuda(k, 90);
      INFO(src);
      CHECK(k.name == "hopper_gemm_ping_pong");
      CHECK(occurrences(src, "mbarrier.init.shared::cta.b64") == 2 * c.stages + 2);
      // One wgmma a 64-row half of the block in each of the 4 K slices (unrolled).
      CHECK(occurrences(src, std::string("wgmma.mma_async.sync.aligned.") + c.mma + ".f32.bf16.bf16") == 4 * c.mmas);
      // Each consumer releases its stages in the loop and its block's last after the loop, and
      // passes the turn between them; it waits for the turn before the loop.
      CHECK(occurrences(src, "mbarrier.arrive.shared::cta.b64") == 3);
      CHECK(occurrences(src, "mbarrier.try_wait.parity") == 3);  // the producer's on empty, the consumer's on its turn and on full
      // Each warp stores its 16 rows of each half a 128-byte chunk at a time.
      const int64_t chunks = c.mmas * shape.block_n * output.itemsize() / 128;
      CHECK(occurrences(src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == chunks);
      CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
      CHECK(cuda::dynamic_shared_bytes(k) >= c.stages * shape.stage_bytes() + 32 * 1024);
      CHECK(cuda::dynamic_shared_bytes(k) <= 227 * 1024);
      CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
    }
  }
  gemm::HopperGemmSpec clustered;
  clustered.schedule = gemm::HopperSchedule::PingPong;
  clustered.cluster = 2;
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(clustered), doctest::Contains("ping-pong schedules run ungrouped, in clusters of 1; this spec asks for clusters of 2"),
                       Error);
  gemm::HopperGemmSpec grouped{dtypes::bfloat16, dtypes::bfloat16, {}, 128};
  grouped.schedule = gemm::HopperSchedule::PingPong;
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(grouped), doctest::Contains("this spec asks for the grouped form"), Error);
}

// The K loops' stage and parity (tile::Ring::use from residues): every mbarrier wait's barrier
// index and parity are int32 after lower_index_dtype, for every schedule, though a persistent
// workgroup's step count passes 2^31 as M, N and K's bounds go.
TEST_CASE("hopper_gemm's mbarrier waits index their stages and parities with 32-bit arithmetic") {
  for (const gemm::HopperSchedule schedule : {gemm::HopperSchedule::Cooperative, gemm::HopperSchedule::PingPong, gemm::HopperSchedule::Cooperative64B}) {
    CAPTURE(static_cast<int>(schedule));
    gemm::HopperGemmSpec spec;
    spec.schedule = schedule;
    const lower::LoweredKernel k = lowered(gemm::hopper_gemm(spec));
    int waits = 0, int32_values = 0;
    for (const lower::LinearOp& s : k.program) {
      const UOp w = s.statement();
      if (w.op() != Op::MBARRIER || static_cast<MbarrierOp>(w.arg_as<EffectArg>().value) != MbarrierOp::Wait) continue;
      ++waits;
      for (const UOp& operand : {w.src(0), w.src(1)})
        for (const UOp& u : toposort(operand))
          if (u.dtype() == dtypes::int64) FAIL_CHECK("a 64-bit " << op_name(u.op()) << " in a wait's operands: " << expr_string(u, 100));
          else int32_values += u.dtype() == dtypes::int32;
    }
    CHECK(waits >= 2);         // the producer's on empty, the consumers' on full
    CHECK(int32_values > 10);  // index arithmetic, lowered (not the index dtype)
  }
}

// The per-block origin: a trip's walk unit is clamped below the unit count (Tiles::origin), and
// lower_index_dtype narrows it, so the block's place in C divides in 32 bits: no statement of any
// form divides or takes a remainder of a 64-bit value (each would be a software division).
TEST_CASE("hopper_gemm divides only 32-bit values, per step and per block") {
  gemm::HopperGemmSpec clustered, grouped{dtypes::bfloat16, dtypes::bfloat16, {}, 128};
  clustered.cluster = 2;
  std::vector<gemm::HopperGemmSpec> specs = {gemm::HopperGemmSpec{}, clustered, grouped};
  for (const gemm::HopperSchedule schedule : {gemm::HopperSchedule::PingPong, gemm::HopperSchedule::Cooperative64B}) {
    specs.emplace_back().schedule = schedule;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    CAPTURE(i);
    const lower::LoweredKernel k = lowered(gemm::hopper_gemm(specs[i]));
    int divisions = 0;
    for (const lower::LinearOp& s : k.program) {
      const UOp& u = s.op;
      if (s.kind != lower::LinearOp::Kind::Value || (u.op() != Op::IDIV && u.op() != Op::MOD)) continue;
      ++divisions;
      if (u.dtype() == dtypes::int64) FAIL_CHECK("a 64-bit " << op_name(u.op()) << ": " << expr_string(u, 100));
    }
    CHECK(divisions >= 4);  // the ring's stage and parity, the block's place
  }
}

TEST_CASE("hopper_gemm with register budgets lowers the producer warpgroup's to 40 and raises each consumer's to 232, inside the roles") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const gemm::HopperSchedule schedule : {gemm::HopperSchedule::Cooperative, gemm::HopperSchedule::PingPong}) {
    CAPTURE(static_cast<int>(schedule));
    gemm::HopperGemmSpec spec;
    spec.schedule = schedule;
    spec.register_budgets = true;
    CHECK(spec.shape().register_budgets);
    const lower::LoweredKernel k = lowered(gemm::hopper_gemm(spec));
    const std::string src = cuda::render_cuda(k, 90);
    INFO(src);
    CHECK(occurrences(src, "setmaxnreg.dec.sync.aligned.u32 40;") == 1);
    CHECK(occurrences(src, "setmaxnreg.inc.sync.aligned.u32 232;") == 1);
    // The producer's budget before its TMA loads, the consumers' before their first wait.
    CHECK(src.find("setmaxnreg.dec") < src.find("cp.async.bulk.tensor.2d.shared::cluster.global"));
    CHECK(src.find("setmaxnreg.inc") < src.find("wgmma.mma_async"));
    CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
    // One block a multiprocessor: ptxas fixes the budget at entry and applies both (no C7508).
    CHECK(src.find("__launch_bounds__(384, 1)") != std::string::npos);
    const rt::NvrtcOutput compiled = rt::nvrtc_compile_with_log(src, k.name, "sm_90a", {"--ptxas-options=-v"});
    CHECK(compiled.cubin.size() > 0);
    CHECK(compiled.log.find("C7508") == std::string::npos);
  }
}

// Cooperative64B: K steps of 64 bytes in the 64-byte swizzle (TMA's SWIZZLE_64B boxes, wgmma
// descriptors with swizzle mode 2 and 512-byte 8-row groups), 8 stages.
TEST_CASE("hopper_gemm's 64-byte K steps render 64-byte-swizzled TMA boxes and descriptors over 8 stages, and compile for sm_90a") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const DType input : {dtypes::bfloat16, dtypes::fp8e4m3}) {
    CAPTURE(input.name());
    gemm::HopperGemmSpec spec{input, dtypes::bfloat16, {}};
    spec.schedule = gemm::HopperSchedule::Cooperative64B;
    const gemm::HopperGemmShape shape = spec.shape();
    CHECK(shape.k_step_bytes == 64);
    const UOp kernel = gemm::hopper_gemm(spec);
    std::vector<int64_t> counts = mbarrier_counts(kernel);
    std::sort(counts.begin(), counts.end());
    std::vector<int64_t> expected(8, 1);
    expected.insert(expected.end(), 8, 8);
    CHECK(counts == expected);
    const lower::LoweredKernel k = lowered(kernel);
    const std::string src = cuda::render_cuda(k, 90);
    INFO(src);
    CHECK(k.name == "hopper_gemm");
    // Three MMA groups in flight: wait until at most 3 are pending, then release the stage 3 steps back.
    CHECK(occurrences(src, "wgmma.wait_group.sync.aligned 3;") == 1);
    // Two K slices a step, one wgmma each (unrolled).
    CHECK(occurrences(src, input == dtypes::bfloat16 ? "wgmma.mma_async.sync.aligned.m64n256k16" : "wgmma.mma_async.sync.aligned.m64n256k32") == 2);
    // A's and B's boxes are 64 bytes wide in the 64-byte swizzle; C's staging keeps 128 bytes.
    int64_t swizzled_64 = 0;
    for (const lower::KernelParam& p : k.params)
      if (p.kind == lower::KernelParam::Kind::TensorMap && p.slot != 0) {
        CHECK(p.box.swizzle == WgmmaSwizzle::B64);
        CHECK(p.box.cols * input.itemsize() == 64);
        ++swizzled_64;
      }
    CHECK(swizzled_64 == 2);
    // The descriptors: swizzle mode 2 in bits 62-63, stride 512 bytes (>> 4 = 32 in bits 32-45),
    // leading 16 (1 in bits 16-29): 2^63 + 32 * 2^32 + 2^16.
    CHECK(src.find(std::to_string((uint64_t{2} << 62) | (uint64_t{32} << 32) | (uint64_t{1} << 16)) + "ull") != std::string::npos);
    CHECK(weft::testing::hopper_statements_outside_roles(k) == 0);
    CHECK(cuda::dynamic_shared_bytes(k) >= 8 * shape.stage_bytes() + 32 * 1024);
    CHECK(cuda::dynamic_shared_bytes(k) <= 227 * 1024);
    CHECK(rt::nvrtc_compile(src, k.name, "sm_90a").size() > 0);
  }
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("hopper_gemm on a device that is not sm_90 is an error naming it") {
  auto emu = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(gemm::run_hopper_gemm(*emu, 128, 128, 64, dtypes::bfloat16, false, 1), doctest::Contains("needs an sm_90"), Error);
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm_ctas(*emu, {}, 128, 128), doctest::Contains("does not report its multiprocessors"), Error);
}
#endif

TEST_CASE("hopper_gemm on an H200: identity bit-exact, random, ragged, K = 8 [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  check_hopper_gemm(*dev, 256, 512, 512, dtypes::bfloat16, true);
  check_hopper_gemm(*dev, 256, 256, 256, dtypes::float32, true);
  check_hopper_gemm(*dev, 1024, 1024, 1024, dtypes::bfloat16);
  check_hopper_gemm(*dev, 384, 768, 2048, dtypes::float32);
  check_hopper_gemm(*dev, 300, 200, 136, dtypes::float32);
  check_hopper_gemm(*dev, 1, 1, 8, dtypes::bfloat16);
  check_hopper_gemm(*dev, 1000, 1030, 72, dtypes::bfloat16);
  // More block rows than one L2 group (8) and a partial last group.
  check_hopper_gemm(*dev, 128 * 11, 256 * 3, 128, dtypes::float32);
  // More blocks than multiprocessors: each workgroup takes several, the ring's phases running on
  // across them (one K step a block here, four below).
  check_hopper_gemm(*dev, 3000, 2100, 64, dtypes::bfloat16);
  check_hopper_gemm(*dev, 4096, 4096, 256, dtypes::bfloat16);
  CHECK(gemm::hopper_gemm_ctas(*dev, {}, 4096, 4096) == *dev->compute_units());
  CHECK(gemm::hopper_gemm_ctas(*dev, {}, 128, 300) == 2);
  CHECK_THROWS_WITH_AS(gemm::run_hopper_gemm(*dev, 64, 64, 12, dtypes::bfloat16, false, 1), doctest::Contains("multiple of 8"), Error);
}

// The masked per-thread store epilogue (HopperStore::Direct, what for_columns picks where C's
// rows are not a multiple of 16 bytes, and the grouped form's), asked for at shapes the default
// stores with TMA: bf16 and fp32 C, identity and random, several blocks a workgroup, and the fp8
// form with its epilogue.
TEST_CASE("hopper_gemm's direct-store epilogue on an H200: identity bit-exact, random, ragged, persistent [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  const auto direct = [](DType input, DType output) {
    gemm::HopperGemmSpec spec{input, output, {}};
    spec.store = gemm::HopperStore::Direct;
    return spec;
  };
  using gemm::HopperInputs;
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::bfloat16), 256, 512, 512, HopperInputs::Identity);
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::float32), 256, 256, 256, HopperInputs::Identity);
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::bfloat16), 1024, 1024, 1024);
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::float32), 300, 200, 136);
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::bfloat16), 1000, 1032, 72);
  check_hopper_gemm(*dev, direct(dtypes::bfloat16, dtypes::bfloat16), 3000, 2104, 64);
  gemm::HopperGemmSpec fp8 = direct(dtypes::fp8e4m3, dtypes::bfloat16);
  fp8.epilogue.scale = gemm::OperandScale::PerRow;
  fp8.epilogue.activation = gemm::Activation::Relu;
  check_hopper_gemm(*dev, fp8, 512, 768, 1024);
}

// The other schedules on a GPU. Ping-pong: the consumers take a workgroup's blocks in turn, so
// shapes with one block (consumer 1 idle), an odd number of blocks a workgroup (consumer 0 takes
// one more) and many blocks a workgroup, each store, fp8 with its epilogue. Cooperative64B: the
// 64-byte swizzle's TMA boxes and descriptors, K steps of 32 bf16 or 64 fp8 (K = 200 and 136 end
// inside a step), and in clusters of two.
TEST_CASE("hopper_gemm's ping-pong and 64-byte-step schedules and register budgets on an H200: identity bit-exact, random, ragged, odd blocks a workgroup, fp8 [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  using gemm::HopperInputs;
  for (const gemm::HopperSchedule schedule :
       {gemm::HopperSchedule::PingPong, gemm::HopperSchedule::PingPongWide, gemm::HopperSchedule::Cooperative64B}) {
    for (const gemm::HopperStore store : {gemm::HopperStore::Tma, gemm::HopperStore::Direct}) {
      CAPTURE(static_cast<int>(schedule));
      CAPTURE(static_cast<int>(store));
      const auto spec = [&](DType input, DType output) {
        gemm::HopperGemmSpec s{input, output, {}};
        s.schedule = schedule;
        s.store = store;
        return s;
      };
      const gemm::HopperGemmShape shape = spec(dtypes::bfloat16, dtypes::bfloat16).shape();
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 256, 512, 512, HopperInputs::Identity);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::float32), 384, 256, 256, HopperInputs::Identity);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 1024, 1024, 1024);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::float32), 300, 200, 136);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 1, 1, 8);
      // 3 blocks a workgroup on every multiprocessor (consumer 0 takes two), ragged edges.
      const int64_t units = *dev->compute_units();
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), shape.block_m * units * 3 - 5, shape.block_n - 8, 200);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 3000, 2104, 64);
      check_hopper_gemm(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 4096, 4096, 256);
      check_hopper_gemm(*dev, spec(dtypes::fp8e4m3, dtypes::float32), 3000, 2100 + (store == gemm::HopperStore::Tma ? 4 : 0), 128,
                        HopperInputs::Integers);
      gemm::HopperGemmSpec fp8 = spec(dtypes::fp8e4m3, dtypes::bfloat16);
      fp8.epilogue = {gemm::OperandScale::PerRow, true, gemm::Activation::Gelu};
      check_hopper_gemm(*dev, fp8, 512, 768, 1024);
      CHECK(gemm::hopper_gemm_ctas(*dev, spec(dtypes::bfloat16, dtypes::bfloat16), 4096, 4096) == units);
    }
  }
  gemm::HopperGemmSpec clustered{dtypes::bfloat16, dtypes::bfloat16, {}};
  clustered.schedule = gemm::HopperSchedule::Cooperative64B;
  clustered.cluster = 2;
  check_hopper_gemm(*dev, clustered, 256, 512, 512, HopperInputs::Identity);
  check_hopper_gemm(*dev, clustered, 3000, 2104, 200);
  // Register budgets (setmaxnreg 40 / 232) in the default and a ping-pong schedule.
  for (const gemm::HopperSchedule schedule : {gemm::HopperSchedule::Cooperative, gemm::HopperSchedule::PingPong}) {
    gemm::HopperGemmSpec budgets{dtypes::bfloat16, dtypes::bfloat16, {}};
    budgets.schedule = schedule;
    budgets.register_budgets = true;
    check_hopper_gemm(*dev, budgets, 256, 512, 512, HopperInputs::Identity);
    check_hopper_gemm(*dev, budgets, 3000, 2104, 200);
  }
}

// Clusters of two CTAs (HopperGemmSpec::cluster = 2): B's box shared by multicast. An odd number of
// block rows leaves the second CTA of the last pairs a block past C (zeros, nothing stored).
TEST_CASE("hopper_gemm in clusters of two CTAs on an H200: identity bit-exact, random, ragged, odd block rows, persistent [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  using gemm::HopperInputs;
  const auto clustered = [](DType input, DType output, gemm::HopperStore store) {
    gemm::HopperGemmSpec spec{input, output, {}};
    spec.cluster = 2;
    spec.store = store;
    return spec;
  };
  for (const gemm::HopperStore store : {gemm::HopperStore::Tma, gemm::HopperStore::Direct}) {
    CAPTURE(static_cast<int>(store));
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, store), 256, 512, 512, HopperInputs::Identity);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::float32, store), 384, 256, 256, HopperInputs::Identity);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, store), 1024, 1024, 1024);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::float32, store), 300, 200, 136);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, store), 1, 1, 8);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, store), 3000, 2104, 64);
    check_hopper_gemm(*dev, clustered(dtypes::bfloat16, dtypes::float32, store), 128 * 11, 256 * 3, 128);
    check_hopper_gemm(*dev, clustered(dtypes::fp8e4m3, dtypes::float32, store), 3000, 2100 + (store == gemm::HopperStore::Tma ? 4 : 0), 128,
                      HopperInputs::Integers);
  }
  CHECK(gemm::hopper_gemm_ctas(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, {}), 4096, 4096) == *dev->compute_units() / 2 * 2);
  CHECK(gemm::hopper_gemm_ctas(*dev, clustered(dtypes::bfloat16, dtypes::bfloat16, {}), 300, 300) == 8);  // 4 walk units (3 block rows in 2 pairs, 2 block columns), 2 CTAs each
}

TEST_CASE("hopper_gemm with fp8 e4m3 inputs on an H200: identity bit-exact, random, ragged, K = 16 [cuda]") {
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  using gemm::HopperInputs;
  const gemm::HopperGemmSpec fp8_to_fp32{dtypes::fp8e4m3, dtypes::float32, {}};
  check_hopper_gemm(*dev, kFp8, 256, 512, 512, HopperInputs::Identity);
  check_hopper_gemm(*dev, fp8_to_fp32, 256, 256, 256, HopperInputs::Identity);
  // Integer inputs: exact sums, so every K step and edge is checked to the last bit.
  check_hopper_gemm(*dev, fp8_to_fp32, 1024, 1024, 1024, HopperInputs::Integers);
  check_hopper_gemm(*dev, fp8_to_fp32, 384, 768, 4096, HopperInputs::Integers);
  check_hopper_gemm(*dev, fp8_to_fp32, 300, 200, 144, HopperInputs::Integers);
  check_hopper_gemm(*dev, fp8_to_fp32, 3000, 2100, 128, HopperInputs::Integers);
  check_hopper_gemm(*dev, kFp8, 1000, 1030, 272, HopperInputs::Integers);
  check_hopper_gemm(*dev, kFp8, 1, 1, 16, HopperInputs::Integers);
  // Uniform inputs, within the fp8 accumulation's bound.
  check_hopper_gemm(*dev, kFp8, 1024, 1024, 1024);
  check_hopper_gemm(*dev, fp8_to_fp32, 3000, 2100, 128);
  CHECK_THROWS_WITH_AS(gemm::run_hopper_gemm(*dev, kFp8, 64, 64, 24, gemm::HopperInputs::Uniform, 1), doctest::Contains("a multiple of 16"), Error);
}

TEST_CASE("hopper_gemm's epilogues on an H200: scales, bias, relu and GELU, bf16 and fp8 [cuda]") {
  using gemm::Activation, gemm::OperandScale;
  WEFT_REQUIRE_CUDA();
  auto dev = rt::open_device("cuda");
  for (const DType input : {dtypes::bfloat16, dtypes::fp8e4m3})
    for (const OperandScale scale : {OperandScale::None, OperandScale::PerTensor, OperandScale::PerRow})
      for (const Activation act : {Activation::None, Activation::Relu, Activation::Gelu}) {
        const gemm::HopperEpilogue e{scale, scale != OperandScale::PerTensor, act};
        if (!e.any()) continue;
        check_hopper_gemm(*dev, gemm::HopperGemmSpec{input, dtypes::bfloat16, e}, 300, 520, 256, gemm::HopperInputs::Integers);
        check_hopper_gemm(*dev, gemm::HopperGemmSpec{input, dtypes::float32, e}, 200, 260, 512);
      }
  // fp32 output keeps the epilogue's own error visible; ragged edges load no scale or bias past M or N.
  check_hopper_gemm(*dev, gemm::HopperGemmSpec{dtypes::fp8e4m3, dtypes::float32, {OperandScale::PerRow, true, Activation::Gelu}}, 129, 257, 512);
  check_hopper_gemm(*dev, gemm::HopperGemmSpec{dtypes::bfloat16, dtypes::float32, {OperandScale::PerTensor, true, Activation::Relu}}, 1, 1, 8);
}
