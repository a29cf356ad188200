// Flash attention's forward kernel (attention/flash_attention.h) on the emulated CDNA targets
// and, where one is, an NVIDIA GPU: O against a double-precision softmax for fresh random
// inputs (run_flash_attention; the seed is printed), with and without the causal mask, both
// head dimensions, ragged and tiny sequence lengths, several heads, SK unlike SQ, and the
// log-sum-exp output against the reference's; the errors;
// the NVIDIA kernel compiled with NVRTC without a GPU; and the sanitizer's view of the
// pipeline (every emulated launch runs in hazard mode).
#include <doctest/doctest.h>

#include "kernels/kernel_harness.h"
#include "occurrences.h"
#include "weft/attention/flash_attention.h"
#include "weft/dsl/error.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/pipeline.h"
#include "weft/runtime/nvrtc.h"

using namespace weft;
using weft::testing::occurrences;

namespace {

struct Case {
  int64_t heads, sq, sk;
  attention::FlashAttentionSpec spec;
};

void check_on(const std::string& target, const Case& c) {
  CAPTURE(target);
  CAPTURE(c.heads);
  CAPTURE(c.sq);
  CAPTURE(c.sk);
  CAPTURE(c.spec.head_dim);
  CAPTURE(c.spec.causal);
  CAPTURE(c.spec.lse);
  CAPTURE(c.spec.kv_group);
  auto dev = rt::open_device(target);
  const gemm::RunResult r = attention::run_flash_attention(*dev, c.spec, c.heads, c.sq, c.sk, weft::testing::rng()());
  INFO(r.check.first_bad);
  INFO("largest error / tolerance: " << r.check.worst_ratio);
  CHECK(r.check.count == static_cast<size_t>(c.heads * c.sq * (c.spec.head_dim + (c.spec.lse ? 1 : 0))));  // O, and LSE
  CHECK(r.check.passed());
}

void check(const Case& c) {
  for (const std::string& target : weft::testing::devices()) check_on(target, c);
}

}  // namespace

WEFT_DEVICE_TEST_CASE("flash_attention: d 64, two heads, several key blocks") { check({2, 128, 192, {.head_dim = 64}}); }

WEFT_DEVICE_TEST_CASE("flash_attention: d 128, causal, ragged lengths, with the log-sum-exp") {
  check({2, 100, 100, {.head_dim = 128, .causal = true, .lse = true}});
}

WEFT_DEVICE_TEST_CASE("flash_attention: one query and one key") { check({1, 1, 1, {.head_dim = 64}}); }

WEFT_DEVICE_TEST_CASE("flash_attention: more keys than queries, causal (top-left), a scale of 0.3") {
  check({3, 70, 150, {.head_dim = 64, .causal = true, .scale = 0.3, .lse = true}});
}

WEFT_DEVICE_TEST_CASE("flash_attention: more queries than keys, d 128") { check({1, 200, 37, {.head_dim = 128}}); }

WEFT_DEVICE_TEST_CASE("flash_attention: more queries than keys, causal: the rows past the last key attend every key") {
  check({2, 150, 70, {.head_dim = 64, .causal = true}});
}

WEFT_DEVICE_TEST_CASE("flash_attention: grouped-query attention, 4 query heads a K/V head, and 2, causal") {
  check({8, 96, 80, {.head_dim = 64, .kv_group = 4}});
  check({4, 70, 70, {.head_dim = 128, .causal = true, .lse = true, .kv_group = 2}});
}

TEST_CASE("flash_attention: the errors name what is wrong") {
  CHECK_THROWS_WITH_AS(attention::flash_attention("gfx950", {.head_dim = 96}), doctest::Contains("head dimension of 96; the kernel takes 64 or 128"),
                       Error);
  CHECK_THROWS_WITH_AS(attention::flash_attention("gfx1100", {}), doctest::Contains("no schedule for target 'gfx1100'"), Error);
  CHECK_THROWS_WITH_AS(attention::flash_attention("gfx950", {.kv_group = 0}), doctest::Contains("a kv_group of 0; query heads per K/V head is at least 1"), Error);
#ifdef WEFT_HAVE_LLVM
  auto dev = rt::open_device("emu:gfx950");
  CHECK_THROWS_WITH_AS(attention::run_flash_attention(*dev, {.kv_group = 4}, 6, 16, 16, 1), doctest::Contains("6 query heads do not share 4 to a K/V head"), Error);
  CHECK_THROWS_WITH_AS(attention::run_flash_attention(*dev, {}, 0, 16, 16, 1), doctest::Contains("heads, SQ and SK >= 1; got 0, 16, 16"), Error);
  // The raw kernel with 6 query heads in groups of 4: K and V hold 2 heads (rounded up), so the
  // last query heads' K/V head lies inside them; a K of one head is refused at launch.
  const auto kernel = rt::CompiledKernel::compile(*dev, attention::flash_attention("gfx950", {.head_dim = 64, .kv_group = 4}));
  const auto buffer = [&](int64_t heads) { return weft::testing::poisoned(*dev, dtypes::bfloat16, static_cast<size_t>(heads * 16 * 64)); };
  const rt::DeviceArray short_kv[] = {buffer(6), buffer(6), buffer(1), buffer(1)};
  CHECK_THROWS_WITH_AS(kernel.launch(*dev, short_kv, {{"BH", int64_t{6}}, {"SQ", int64_t{16}}, {"SK", int64_t{16}}}),
                       doctest::Contains("buffer argument 2 holds 1024 elements, the kernel's"), Error);
#endif
}

TEST_CASE("flash_attention: the NVIDIA kernel renders mma.sync over a cp.async pipeline and compiles with NVRTC (no GPU needed)") {
  if (!rt::nvrtc_available()) WEFT_SKIP("NVRTC (libnvrtc.so) not found: the CUDA C++ cannot be compiled here");
  for (const int64_t d : {64, 128})
    for (const bool causal : {false, true}) {
      CAPTURE(d);
      CAPTURE(causal);  // the causal forms also write the log-sum-exp
      lower::LowerOptions options;
      options.wave_size = 32;
      const auto lowered = lower::lower(attention::flash_attention("sm_90", {.head_dim = d, .causal = causal, .lse = causal}), options);
      const std::string src = cuda::render_cuda(lowered, 90);
      CHECK(src.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
      CHECK(src.find("cp.async.cg.shared.global") != std::string::npos);
      CHECK(src.find("cp.async.wait_group 1;") != std::string::npos);
      // Per warp and key block: K's 64 x d as the N x K operand, 4 x d/16 ldmatrix.x4; V's 64 x d
      // as the col-major B operand, d/16 x 4 ldmatrix.x4.trans (Q is read once, before the loop,
      // 16 x d: d/16 more as stored). P stays in registers, so no ldmatrix reads it.
      CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == static_cast<size_t>(4 * d / 16 + d / 16));
      CHECK(occurrences(src, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == static_cast<size_t>(4 * d / 16));
      CHECK(occurrences(src, "mma.sync.aligned.m16n8k16") == static_cast<size_t>(2 * (4 * d / 16) + 2 * (d / 16 * 4)));
      CHECK(rt::nvrtc_compile(src, lowered.name, cuda::nvrtc_arch(lowered, 90)).size() > 0);
    }
}
