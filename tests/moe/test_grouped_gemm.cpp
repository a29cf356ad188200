// The MoE grouped GEMM (moe/grouped_gemm.h) on the emulated CDNA targets and, where one is, an
// NVIDIA GPU: every real row against a double-precision reference, padding rows zero, rows of
// unused blocks untouched (run_grouped_gemm's check), for uneven and empty experts, one expert
// taking every token, an identity weight (bit-exact rows) and ragged N and K; the errors; and
// the NVIDIA kernel rendered and compiled with NVRTC without a GPU.
#include <doctest/doctest.h>

#include <algorithm>

#include "hopper_roles.h"
#include "kernels/kernel_harness.h"
#include "occurrences.h"
#include "skip.h"
#include "weft/dsl/error.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/gemm/hopper_gemm.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#include "weft/moe/grouped_gemm.h"
#include "weft/runtime/nvrtc.h"
#ifdef WEFT_HAVE_LLVM
#include "weft/emulator/code_stats.h"
#include "weft/runtime/inspect.h"
#endif

using weft::testing::occurrences;

using namespace weft;

namespace {

// One run on `target`, with its case in the failure message.
void check_grouped_on(const std::string& target, const moe::MoeShape& shape, int64_t n, int64_t k, const moe::GroupedGemmInputs& inputs) {
  CAPTURE(target);
  CAPTURE(shape.tokens);
  CAPTURE(shape.experts);
  CAPTURE(shape.top_k);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(inputs.fp8);
  auto dev = rt::open_device(target);
  const gemm::RunResult r = moe::run_grouped_gemm(*dev, shape, n, k, inputs, weft::testing::rng()());
  INFO(r.check.first_bad);
  CHECK(r.check.count == static_cast<size_t>(shape.max_rows() * n));  // every element of Ys
  CHECK(r.check.passed());
}

// One run on every device of the test's family.
void check_grouped(const moe::MoeShape& shape, int64_t n, int64_t k, const moe::GroupedGemmInputs& inputs = {}) {
  for (const std::string& target : weft::testing::devices()) check_grouped_on(target, shape, n, k, inputs);
}

// top_k = 1 choices giving expert e counts[e] tokens, in a random token order.
std::vector<int32_t> choices_with_counts(const std::vector<int32_t>& counts) {
  std::vector<int32_t> ids;
  for (size_t e = 0; e < counts.size(); ++e) ids.insert(ids.end(), static_cast<size_t>(counts[e]), static_cast<int32_t>(e));
  std::shuffle(ids.begin(), ids.end(), weft::testing::rng());
  return ids;
}

}  // namespace

WEFT_DEVICE_TEST_CASE("grouped_gemm: random routing, top_k 2 over 4 experts") { check_grouped({200, 4, 2, 256}, 128, 128); }

WEFT_DEVICE_TEST_CASE("grouped_gemm: uneven counts, an expert with no tokens, unused blocks untouched") {
  // 300, 0, 100, 37 rows: 2 + 0 + 1 + 1 blocks of 256 used, 2 of the 6 unused.
  moe::GroupedGemmInputs in;
  in.expert_ids = choices_with_counts({300, 0, 100, 37});
  check_grouped({437, 4, 1, 256}, 128, 128, in);
}

WEFT_DEVICE_TEST_CASE("grouped_gemm: every token on one expert") {
  moe::GroupedGemmInputs in;
  in.expert_ids = choices_with_counts({0, 0, 300, 0});
  check_grouped({300, 4, 1, 256}, 128, 64, in);
}

WEFT_DEVICE_TEST_CASE("grouped_gemm: an identity weight gives its rows of Xs bit for bit") {
  moe::GroupedGemmInputs in;
  in.expert_ids = choices_with_counts({90, 170, 40});
  in.identity_expert = 1;
  check_grouped({300, 3, 1, 256}, 128, 128, in);
}

WEFT_DEVICE_TEST_CASE("grouped_gemm: ragged N and K (no column reads another expert's weight)") {
  // N = 203: each expert's only column block reads 53 rows of the next expert's weight (zeros
  // past the last), which feed only the masked columns; K = 72 is one whole and one partial K step.
  // (On sm_90 Ys's rows of 406 bytes take the masked-store form; the other cases' TMA-stored Ys
  // is clipped at N = 128 inside a 256-column block.)
  moe::GroupedGemmInputs in;
  in.expert_ids = choices_with_counts({100, 260, 50});
  check_grouped({410, 3, 1, 256}, 203, 72, in);
}

WEFT_DEVICE_TEST_CASE("grouped_gemm: shapes it cannot take are errors") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    const int64_t block = moe::grouped_gemm_block_rows(dev->arch());
    CHECK_THROWS_WITH_AS(moe::GroupedGemm(*dev, {100, 4, 1, block / 2}), doctest::Contains("must be a multiple of the kernel's row block"), Error);
    const moe::GroupedGemm gg(*dev, {100, 4, 1, 256});
    const rt::DeviceArray none{};
    CHECK_THROWS_WITH_AS(gg.launch(*dev, 128, 100, none, none, none, none), doctest::Contains("a multiple of 8"), Error);
    CHECK_THROWS_WITH_AS(gg.launch(*dev, 0, 128, none, none, none, none), doctest::Contains("N in [1, "), Error);
    if (!dev->arch().starts_with("sm_"))  // 4 experts of 2^16 x 2^16: 2^35 bytes of W
      CHECK_THROWS_WITH_AS(gg.launch(*dev, 65536, 65536, none, none, none, none), doctest::Contains("must each fit 2^31 bytes"), Error);
    CHECK_THROWS_WITH_AS(gg.launch_fp8(*dev, 128, 128, none, none, none, none, none, none), doctest::Contains("takes bfloat16 inputs"), Error);
    moe::GroupedGemmInputs in;
    in.identity_expert = 0;
    CHECK_THROWS_WITH_AS(moe::run_grouped_gemm(*dev, {100, 4, 1, 256}, 128, 64, in, 1), doctest::Contains("identity weight needs N == K"), Error);
    if (dev->arch().starts_with("sm_") && dev->arch() != "sm_90") {
      in = {};
      in.fp8 = true;
      CHECK_THROWS_WITH_AS(moe::run_grouped_gemm(*dev, {100, 4, 1, 256}, 128, 64, in, 1), doctest::Contains("fp8 inputs need sm_90"), Error);
    }
  }
}

TEST_CASE("grouped_gemm with fp8 e4m3 inputs and row-wise scales on an H200: random, an identity expert, ragged N and K [cuda]") {
  WEFT_REQUIRE_CUDA();
  moe::GroupedGemmInputs in;
  in.fp8 = true;
  check_grouped_on("cuda", {200, 4, 2, 128}, 128, 256, in);
  in.expert_ids = choices_with_counts({90, 170, 0, 40});
  in.identity_expert = 1;
  check_grouped_on("cuda", {300, 4, 1, 128}, 128, 128, in);
  in.identity_expert = -1;
  check_grouped_on("cuda", {300, 4, 1, 256}, 200, 80, in);  // K = 80: one whole and one partial 128-byte step
  const auto dev = rt::open_device("cuda");
  const moe::GroupedGemm gg(*dev, {100, 4, 1, 128}, nullptr, moe::GroupedPrecision::Fp8RowScaled);
  const rt::DeviceArray none{};
  CHECK_THROWS_WITH_AS(gg.launch_fp8(*dev, 128, 72, none, none, none, none, none, none), doctest::Contains("a multiple of 16"), Error);
  CHECK_THROWS_WITH_AS(gg.launch(*dev, 128, 128, none, none, none, none), doctest::Contains("takes fp8 inputs"), Error);
}

TEST_CASE("grouped_gemm: targets without a block schedule are errors") {
  CHECK_THROWS_WITH_AS(moe::grouped_gemm("gfx90a", 256), doctest::Contains("no block schedule for target 'gfx90a'"), Error);
  CHECK_THROWS_WITH_AS(moe::grouped_gemm("gfx950", 128), doctest::Contains("block_rows (128) must be a multiple of the kernel's row block on gfx950 (256)"), Error);
  CHECK(moe::grouped_gemm_block_rows("gfx942") == 256);
  CHECK(moe::grouped_gemm_block_rows("sm_90") == 128);
  CHECK_THROWS_WITH_AS(moe::grouped_gemm("sm_80", 128, moe::GroupedPrecision::Fp8RowScaled), doctest::Contains("fp8 inputs need sm_90"), Error);
  CHECK_NOTHROW(moe::grouped_gemm("sm_90", 128, moe::GroupedPrecision::Fp8RowScaled));  // the Hopper form, not the block GEMM's
  CHECK(moe::grouped_gemm_input("gfx942", moe::GroupedPrecision::Fp8RowScaled) == dtypes::fp8e4m3fnuz);
  CHECK(moe::grouped_gemm_input("gfx950", moe::GroupedPrecision::Fp8RowScaled) == dtypes::fp8e4m3);
}

TEST_CASE("grouped_gemm for sm_80 renders a cp.async pipeline of mma.sync and compiles with NVRTC") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (int64_t block_rows : {128, 256}) {
    CAPTURE(block_rows);
    lower::LowerOptions options;
    options.wave_size = 32;
    const auto lowered = lower::lower(moe::grouped_gemm("sm_80", block_rows), options);
    const std::string src = cuda::render_cuda(lowered, 80);
    INFO(src);
    CHECK(src.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
    CHECK(src.find("cp.async.cg.shared.global") != std::string::npos);
    CHECK(src.find("cp.async.wait_group 1;") != std::string::npos);
    CHECK(src.find("cp.async.wait_group 0;") != std::string::npos);  // the drain before the stores
    // A and B (N x K) operands read with ldmatrix.x4 as stored, none as 4-byte pairs
    CHECK(src.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
    CHECK(src.find("weft_unsigned_short_2*>") == std::string::npos);
    CHECK(rt::nvrtc_compile(src, lowered.name, "sm_80").size() > 0);
  }
}

TEST_CASE("grouped_gemm for sm_90 is hopper_gemm's grouped form: TMA boxes of B from the block's expert, wgmma, TMA or masked stores") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const gemm::HopperStore store : {gemm::HopperStore::Tma, gemm::HopperStore::Direct}) {
    for (int64_t block_rows : {128, 256}) {
      const bool tma = store == gemm::HopperStore::Tma;
      CAPTURE(tma);
      CAPTURE(block_rows);
      lower::LowerOptions options;
      options.wave_size = 32;
      const auto lowered = lower::lower(moe::grouped_gemm("sm_90", block_rows, moe::GroupedPrecision::Bfloat16, store), options);
      const std::string src = cuda::render_cuda(lowered, 90);
      INFO(src);
      CHECK(cuda::nvrtc_arch(lowered, 90) == "sm_90a");
      CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
      // Xs and W loaded by TMA; Ys stored by TMA from staging boxes (a third tensor map, bulk
      // groups waited for before the kernel ends) or by each thread.
      CHECK(occurrences(src, "__grid_constant__ weft_tensor_map") == (tma ? 3 : 2));
      CHECK((occurrences(src, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") > 0) == tma);
      CHECK((occurrences(src, "cp.async.bulk.wait_group.read 0") > 0) == tma);
      // A block's trip count is 0 or 1 (its expert may be -1): the trip loops stay loops and every
      // wgmma and TMA copy stays in its role (folded away, the consumer loop ran in every warp).
      CHECK(weft::testing::hopper_statements_outside_roles(lowered) == 0);
      // The kernel's variables are the mma.sync form's: the launch is the same.
      std::vector<std::string> scalars;
      for (const auto& p : lowered.params)
        if (p.kind == lower::KernelParam::Kind::Scalar) scalars.push_back(p.name);
      CHECK(scalars == std::vector<std::string>{"E", "K", "N", "ROWS"});
      CHECK(rt::nvrtc_compile(src, lowered.name, "sm_90a").size() > 0);
    }
  }
  CHECK_THROWS_WITH_AS(gemm::hopper_gemm(gemm::HopperGemmSpec{dtypes::bfloat16, dtypes::bfloat16, {}, 192}),
                       doctest::Contains("block rows (192) must be a multiple of 128"), Error);
  // fp8 with row-wise scales: Xs's per row (dispatch's), W's per expert column ([E * N]), after block_expert.
  const gemm::HopperEpilogue scaled{gemm::OperandScale::PerRow, false, gemm::Activation::None};
  const gemm::HopperGemmSlots slots = gemm::hopper_gemm_slots(scaled, true);
  CHECK(slots.scale_a == 4);
  CHECK(slots.scale_b == 5);
  lower::LowerOptions options;
  options.wave_size = 32;
  const auto fp8 = lower::lower(moe::grouped_gemm("sm_90", 128, moe::GroupedPrecision::Fp8RowScaled), options);
  const std::string src = cuda::render_cuda(fp8, 90);
  INFO(src);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") != std::string::npos);
  CHECK(weft::testing::hopper_statements_outside_roles(fp8) == 0);
  CHECK(rt::nvrtc_compile(src, fp8.name, "sm_90a").size() > 0);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("grouped_gemm's code object: hk_gemm's block (fills, MFMAs) plus one scalar load of the expert") {
  for (const char* target : {"gfx950", "gfx942"}) {
    CAPTURE(target);
    const emu::KernelStats grouped = emu::kernel_stats(rt::inspect(moe::grouped_gemm(target, 256), target).code_object);
    const emu::KernelStats plain = emu::kernel_stats(rt::inspect(gemm::hk_gemm(target), target).code_object);
    CHECK(grouped.scratch_bytes == 0);
    CHECK(grouped.vgpr_spills == 0);
    CHECK(grouped.lds_bytes == plain.lds_bytes);
    const char* mfma = std::string(target) == "gfx950" ? "v_mfma_f32_16x16x32_bf16" : "v_mfma_f32_16x16x16_bf16";
    CHECK(grouped.count(mfma) == plain.count(mfma));
    CHECK(grouped.count_prefix("buffer_load_dword") == plain.count_prefix("buffer_load_dword"));  // the same fills
    // The expert: one scalar load (the kernel arguments come as dwordx4 and dwordx8), no vector
    // load anywhere.
    CHECK(grouped.count("s_load_dword") == 1);
    CHECK(grouped.count_prefix("global_load") == 0);
  }
}

TEST_CASE("grouped_gemm with the target's fp8 and row-wise scales on CDNA: random, an identity expert, ragged N and K") {
  moe::GroupedGemmInputs in;
  in.fp8 = true;
  for (const std::string& target : weft::testing::emulators()) {
    check_grouped_on(target, {200, 4, 2, 256}, 128, 256, in);
    moe::GroupedGemmInputs identity = in;
    identity.expert_ids = choices_with_counts({90, 300, 0, 40});
    identity.identity_expert = 1;
    check_grouped_on(target, {430, 4, 1, 256}, 128, 128, identity);
    check_grouped_on(target, {300, 4, 1, 256}, 200, 80, in);  // K = 80: a whole and a partial step on gfx942, a partial one on gfx950
    // The products are the fp8 MFMAs (gfx950's f8f6f4 16x16x128, gfx942's 16x16x32), with nothing spilled.
    const std::string arch = target.substr(4);
    const emu::KernelStats stats = emu::kernel_stats(rt::inspect(moe::grouped_gemm(arch, 256, moe::GroupedPrecision::Fp8RowScaled), arch).code_object);
    CHECK(stats.count(arch == "gfx950" ? "v_mfma_f32_16x16x128_f8f6f4" : "v_mfma_f32_16x16x32_fp8_fp8") > 0);
    CHECK(stats.count_prefix("v_mfma_f32_16x16x32_bf16") == 0);
    CHECK(stats.scratch_bytes == 0);
    CHECK(stats.vgpr_spills == 0);
    const auto dev = rt::open_device(target);
    const moe::GroupedGemm gg(*dev, {100, 4, 1, 256}, nullptr, moe::GroupedPrecision::Fp8RowScaled);
    const rt::DeviceArray none{};
    CHECK_THROWS_WITH_AS(gg.launch_fp8(*dev, 128, 72, none, none, none, none, none, none), doctest::Contains("a multiple of 16"), Error);
    CHECK_THROWS_WITH_AS(gg.launch(*dev, 128, 128, none, none, none, none), doctest::Contains("takes fp8 inputs"), Error);
  }
}
#endif
