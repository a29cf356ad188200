// hk_gemm (HipKittens' bf16 GEMM in the tile layer, and its fp8 form) on both emulated CDNA
// targets: identity bit-exact, random inputs against a double-precision reference, whole and
// ragged shapes.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/emulator/code_stats.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/kernels/tiles.h"
#include "weft/runtime/inspect.h"

using namespace weft;

namespace {

void check_hk_gemm(int64_t m, int64_t n, int64_t k, DType output, bool identity_b = false) {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(output.name());
    auto dev = rt::open_device(target);
    const gemm::RunResult r = gemm::run_hk_gemm(*dev, m, n, k, output, identity_b, weft::testing::rng()());
    INFO(r.check.first_bad);
    CHECK(r.check.count == static_cast<size_t>(m * n));
    CHECK(r.check.passed());
  }
}

}  // namespace

TEST_CASE("hk_gemm: an identity B gives A bit for bit") {
  check_hk_gemm(256, 256, 256, dtypes::float32, true);
  check_hk_gemm(256, 256, 256, dtypes::bfloat16, true);
}

TEST_CASE("hk_gemm: random 256 cubed, bf16 and fp32 output") {
  check_hk_gemm(256, 256, 256, dtypes::bfloat16);
  check_hk_gemm(256, 256, 256, dtypes::float32);
}

TEST_CASE("hk_gemm: 512 x 768 x 320, an odd number of K steps") { check_hk_gemm(512, 768, 320, dtypes::bfloat16); }

TEST_CASE("hk_gemm: 300 x 200 x 136, ragged everywhere") { check_hk_gemm(300, 200, 136, dtypes::float32); }

TEST_CASE("hk_gemm on other schedules: the pipelined loop of 2 and 3 stages (K 32, gfx950), the ping-pong split by rows (K 32, gfx950), MFMAs at priority 0") {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    std::vector<gemm::HkGemmShape> shapes;
    gemm::HkGemmShape unprioritized = gemm::hk_gemm_shape(dev->arch());
    unprioritized.mfma_priority = 0;
    shapes.push_back(unprioritized);
    gemm::HkGemmShape pipelined = gemm::hk_gemm_shape(dev->arch());
    pipelined.ping_pong = false;
    shapes.push_back(pipelined);
    if (dev->arch() == "gfx950") {  // 3 x 32 KiB of LDS; gfx942's 64 KiB holds two
      gemm::HkGemmShape three = pipelined;
      three.k_step = 32;
      three.stages = 3;
      shapes.push_back(three);
      // The ping-pong on K steps of one MFMA k step (32 bf16): it splits each step by rows of C.
      gemm::HkGemmShape split_rows = gemm::hk_gemm_shape(dev->arch());
      split_rows.k_step = 32;
      shapes.push_back(split_rows);
    }
    for (const gemm::HkGemmShape& shape : shapes) {
      CAPTURE(shape.ping_pong);
      CAPTURE(shape.k_step);
      CAPTURE(shape.stages);
      CAPTURE(shape.mfma_priority);
      const gemm::RunResult r = gemm::run_hk_gemm(*dev, shape, 256, 512, 160, dtypes::float32, false, weft::testing::rng()());
      INFO(r.check.first_bad);
      CHECK(r.check.count == size_t{256 * 512});
      CHECK(r.check.passed());
    }
  }
}

TEST_CASE("hk_gemm: K = 8 and K = 64") {
  check_hk_gemm(64, 48, 8, dtypes::float32);
  check_hk_gemm(130, 70, 64, dtypes::bfloat16);
}

// The target's fp8 (e4m3 on gfx950, e4m3fnuz on gfx942) in A and B, on its own schedule (K steps
// of 128 or 64 fp8), through gfx950's f8f6f4 MFMA 16x16x128 (the ping-pong splitting a step's
// MFMAs by rows of C) and gfx942's MFMA 16x16x32 fp8: identity bit-exact, random within fp32
// accumulation, ragged, the pipelined loop as well as the ping-pong.
TEST_CASE("hk_gemm with the target's fp8 inputs: identity bit-exact, random, ragged, both schedules") {
  struct Case {
    int64_t m, n, k;
    DType output;
    bool identity, ping_pong;
  };
  const Case cases[] = {{256, 256, 256, dtypes::float32, true, true},  {256, 256, 256, dtypes::bfloat16, true, true},
                        {512, 256, 384, dtypes::bfloat16, false, true}, {300, 200, 144, dtypes::float32, false, true},
                        {200, 300, 208, dtypes::float32, false, false}, {64, 48, 16, dtypes::bfloat16, false, true}};
  for (const std::string& target : weft::testing::emulators()) {
    auto dev = rt::open_device(target);
    const DType fp8 = tile::mfma_fp8(dev->arch());
    for (const Case& c : cases) {
      CAPTURE(target);
      CAPTURE(c.m);
      CAPTURE(c.n);
      CAPTURE(c.k);
      CAPTURE(c.output.name());
      CAPTURE(c.ping_pong);
      gemm::HkGemmShape shape = gemm::gemm_block_shape(dev->arch(), fp8);
      shape.ping_pong = c.ping_pong;
      const gemm::RunResult r = gemm::run_hk_gemm(*dev, shape, c.m, c.n, c.k, c.output, c.identity, weft::testing::rng()(), fp8);
      INFO(r.check.first_bad);
      CHECK(r.check.count == static_cast<size_t>(c.m * c.n));
      CHECK(r.check.passed());
    }
    const emu::KernelStats stats = emu::kernel_stats(rt::inspect(gemm::hk_gemm_fp8(dev->arch()), dev->arch()).code_object);
    const bool f8f6f4 = dev->arch() == "gfx950";
    CHECK((stats.count("v_mfma_f32_16x16x128_f8f6f4") > 0) == f8f6f4);
    CHECK((stats.count("v_mfma_f32_16x16x32_fp8_fp8") > 0) == !f8f6f4);
    CHECK(stats.scratch_bytes == 0);
    CHECK(stats.vgpr_spills == 0);
  }
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx942", dtypes::float32, gemm::hk_gemm_shape("gfx942"), dtypes::fp8e4m3),
                       doctest::Contains("the inputs are bfloat16 or float8_e4m3fnuz on gfx942, not float8_e4m3"), Error);
  CHECK_THROWS_WITH_AS(gemm::gemm_block_shape("sm_90", dtypes::fp8e4m3), doctest::Contains("the block GEMM takes bfloat16 inputs; not float8_e4m3"), Error);
}

TEST_CASE("hk_gemm: sizes it cannot take are errors") {
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx90a"), doctest::Contains("no schedule for target 'gfx90a'"), Error);
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx950", dtypes::float16), doctest::Contains("bfloat16 or float32, not float16"), Error);
  gemm::HkGemmShape three = gemm::hk_gemm_shape("gfx950");
  three.stages = 3;
  CHECK_THROWS_WITH_AS(gemm::hk_gemm("gfx950", dtypes::float32, three), doctest::Contains("the ping-pong runs 2 stages over 2 rows of waves"), Error);
}

TEST_CASE("hk_gemm: an A past the 32-bit offsets of its direct-to-LDS copies is an error at launch, not a wrapped read") {
  // A is 2^20 x 2^12 bf16, 8 GiB: buffer_load ... lds would wrap its byte offsets. The arrays
  // claim the sizes the kernel expects (the check runs before anything is read).
  auto dev = rt::open_device(weft::testing::emulators().front());
  const rt::CompiledKernel k = rt::CompiledKernel::compile(*dev, gemm::hk_gemm(dev->arch()));
  const int64_t m = int64_t{1} << 20, n = 16, kk = int64_t{1} << 12;
  rt::DeviceArray c = weft::testing::poisoned(*dev, dtypes::bfloat16, 16), a = weft::testing::poisoned(*dev, dtypes::bfloat16, 16, "a"),
                  b = weft::testing::poisoned(*dev, dtypes::bfloat16, static_cast<size_t>(n * kk), "b");
  c.elements = static_cast<size_t>(m * n);
  a.elements = static_cast<size_t>(m * kk);
  const rt::DeviceArray args[] = {c, a, b};
  const std::string expected = "buffer argument 1 holds 8589934592 bytes; on " + dev->arch() +
                               " the kernel reads it with direct-to-LDS copies (buffer_load ... lds), whose byte offsets are 32-bit";
  CHECK_THROWS_WITH_AS(k.launch(*dev, args, {{"M", m}, {"N", n}, {"K", kk}}), doctest::Contains(expected.c_str()), Error);
}

#ifdef WEFT_HAVE_LLVM
TEST_CASE("hk_gemm's code object: no scratch, LDS within the CU, direct-to-LDS fills, 64 MFMAs a K step in the ping-pong's clusters") {
  struct Expect {
    const char* target;
    const char* mfma;
    const char* fill;
    uint64_t lds_limit;
  };
  for (const Expect& e : {Expect{"gfx950", "v_mfma_f32_16x16x32_bf16", "buffer_load_dwordx4 lds", 160 * 1024},
                          Expect{"gfx942", "v_mfma_f32_16x16x16_bf16", "buffer_load_dword lds", 64 * 1024}}) {
    CAPTURE(e.target);
    const gemm::HkGemmShape shape = gemm::hk_gemm_shape(e.target);
    const emu::KernelStats s = emu::kernel_stats(rt::inspect(gemm::hk_gemm(e.target), e.target).code_object);
    CHECK(s.scratch_bytes == 0);
    CHECK(s.vgpr_spills == 0);
    // Two stages of A and B tiles, nothing else in LDS.
    CHECK(s.lds_bytes == static_cast<uint64_t>(shape.stages * (shape.block_m + shape.block_n) * shape.k_step * 2));
    CHECK(s.lds_bytes <= e.lds_limit);
    // The prologue's fills and the loop's: 2 x (A + B) per wave, all direct-to-LDS.
    const int64_t bytes_per_lane = std::string(e.target) == "gfx950" ? 16 : 4;
    const int64_t fills = 2 * (shape.block_m + shape.block_n) * shape.k_step * 2 / (8 * 64 * bytes_per_lane);
    CHECK(s.count(e.fill) == static_cast<uint64_t>(fills));
    // One K step: (128/16) x (64/16) sub-tiles of C, k_step / k MFMAs each; the loop is not unrolled.
    const int64_t k = std::string(e.target) == "gfx950" ? 32 : 16;
    CHECK(s.count(e.mfma) == static_cast<uint64_t>(8 * 4 * (shape.k_step / k)));
    CHECK(s.vgprs < 212);  // tinygrad's version of the seed kernel: 212-240 VGPRs
    // The ping-pong: the prologue's barrier, the stagger's two (one per wave row, each behind a
    // branch) and four a K step; between two barriers a cluster of MFMAs (at s_setprio 1, half
    // the step's) or of memory instructions, never both.
    CHECK(s.count_text("s_setprio 1") == 2);
    CHECK(s.count("s_barrier") == 7);
    std::vector<std::pair<int, int>> clusters{{0, 0}};  // (MFMAs, LDS reads and fills) between barriers
    for (const emu::CodeLine& line : s.code) {
      if (line.mnemonic == "s_barrier") clusters.emplace_back(0, 0);
      if (line.mnemonic == e.mfma) ++clusters.back().first;
      if (line.mnemonic.starts_with("ds_read") || line.mnemonic == e.fill) ++clusters.back().second;
    }
    int mfma_clusters = 0;
    for (const auto& [mfmas, memory] : clusters) {
      CHECK_MESSAGE((mfmas == 0 || memory == 0), mfmas << " MFMAs and " << memory << " memory instructions between two barriers");
      if (mfmas == 0) continue;
      CHECK(mfmas == 8 * 4 * (shape.k_step / k) / 2);
      ++mfma_clusters;
    }
    CHECK(mfma_clusters == 2);
    // Each memory cluster waits for its own LDS reads before its barrier, the second also for
    // the next step's fills: vmcnt(0), no fill left in flight across a compute cluster's end.
    CHECK(s.count_text("s_waitcnt vmcnt(0)") >= 2);
  }
}

TEST_CASE("hk_gemm's pipelined schedule leaves the next stage's fills in flight across its barrier") {
  for (const char* target : {"gfx950", "gfx942"}) {
    CAPTURE(target);
    gemm::HkGemmShape shape = gemm::hk_gemm_shape(target);
    shape.ping_pong = false;
    const emu::KernelStats s = emu::kernel_stats(rt::inspect(gemm::hk_gemm(target, dtypes::bfloat16, shape), target).code_object);
    const int64_t fills = 2 * (shape.block_m + shape.block_n) * shape.k_step * 2 / (8 * 64 * (std::string(target) == "gfx950" ? 16 : 4));
    CHECK(s.count_text("s_setprio 1") >= 1);
    // Before the barrier that publishes a stage, the wait leaves the next stage's fills in
    // flight (they overlap this step's MFMAs) instead of draining every fill.
    CHECK(s.count_text("s_waitcnt vmcnt(" + std::to_string(fills / 2) + ")") == 1);
  }
}
#endif
