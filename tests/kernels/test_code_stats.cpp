// weft's own kernels through emu::kernel_stats, the API `weft stats` prints and GEMM tests assert
// on: the MFMAs in the code object are the ones the kernel issues, its LDS is exactly its shared
// allocations, and it needs no scratch and spills nothing. Sizes drawn at random (seed printed).
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/emulator/code_stats.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/gemm/mfma_tile.h"
#include "weft/runtime/inspect.h"

using namespace weft;

#ifdef WEFT_HAVE_LLVM
namespace {

// The bytes of LDS a kernel graph allocates: its LOCAL placeholders.
uint64_t shared_bytes(const UOp& kernel) {
  uint64_t bytes = 0;
  for (const UOp& u : toposort(kernel)) {
    if (u.op() != Op::PLACEHOLDER || u.arg_as<BufferArg>().space != AddrSpace::LOCAL) continue;
    uint64_t n = 1;
    for (int64_t d : u.static_shape()) n *= static_cast<uint64_t>(d);
    bytes += n * static_cast<uint64_t>(u.dtype().itemsize());
  }
  return bytes;
}

emu::KernelStats stats_of(const UOp& kernel, const std::string& target) {
  return emu::kernel_stats(rt::inspect(kernel, target).code_object);
}

void check_no_scratch(const emu::KernelStats& s) {
  CHECK(s.scratch_bytes == 0);
  CHECK(s.vgpr_spills == 0);
  CHECK(s.sgpr_spills == 0);
}

}  // namespace

TEST_CASE("kernel stats of the MFMA tile: one MFMA of the shape asked for, no LDS, no scratch") {
  struct Shape {
    const char* target;
    int64_t m, n, k;
    const char* mnemonic;
  };
  for (const Shape& c : {Shape{"gfx942", 16, 16, 16, "v_mfma_f32_16x16x16_f16"}, Shape{"gfx942", 32, 32, 8, "v_mfma_f32_32x32x8_f16"},
                         Shape{"gfx950", 16, 16, 32, "v_mfma_f32_16x16x32_f16"}, Shape{"gfx950", 32, 32, 16, "v_mfma_f32_32x32x16_f16"}}) {
    CAPTURE(c.target);
    CAPTURE(c.mnemonic);
    const UOp kernel = gemm::mfma_tile(c.target, c.m, c.n, c.k, dtypes::float16);
    const emu::KernelStats s = stats_of(kernel, c.target);
    CHECK(s.count_prefix("v_mfma_") == 1);
    CHECK(s.count(c.mnemonic) == 1);
    CHECK(s.lds_bytes == shared_bytes(kernel));
    CHECK(s.lds_bytes == 0);
    check_no_scratch(s);
    CHECK(s.max_flat_workgroup_size == 64);
  }
}

TEST_CASE("kernel stats of the tile GEMM and matmul_relu: LDS is the shared tiles, whole K steps of MFMAs") {
  for (const std::string target : {"gfx942", "gfx950"}) {
    CAPTURE(target);
    const int64_t m = 32 * (1 + weft::testing::rng()() % 4), n = 32 * (1 + weft::testing::rng()() % 4), k = 32 * (1 + weft::testing::rng()() % 8);
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    const UOp gemm = gemm::mfma_gemm(target, m, n, k, dtypes::bfloat16);
    const emu::KernelStats s = stats_of(gemm, target);
    // One wave per 32x32 tile of D as 2x2 MFMA tiles of 16x16, 32 of K per step: 8 MFMAs of
    // 16x16x16 per step on gfx942, 4 of 16x16x32 on gfx950. LLVM may unroll the K loop, so the
    // code holds a whole number of steps that divides the trip count.
    const char* mnemonic = target == "gfx942" ? "v_mfma_f32_16x16x16_bf16" : "v_mfma_f32_16x16x32_bf16";
    const uint64_t per_step = target == "gfx942" ? 8 : 4, steps = static_cast<uint64_t>(k / 32);
    const uint64_t mfmas = s.count_prefix("v_mfma_");
    CHECK(s.count(mnemonic) == mfmas);
    REQUIRE(mfmas > 0);
    CHECK(mfmas % per_step == 0);
    CHECK(steps % (mfmas / per_step) == 0);
    // A and B reach LDS by direct-to-LDS loads only: two 32x32 bf16 tiles a step, 16 bytes a
    // lane on gfx950 (2 + 2 loads), 4 on gfx942 (8 + 8), and no global load through registers.
    const char* fill = target == "gfx942" ? "buffer_load_dword lds" : "buffer_load_dwordx4 lds";
    const uint64_t fills_per_step = target == "gfx942" ? 16 : 4;
    CHECK(s.count(fill) * per_step == mfmas * fills_per_step);
    CHECK(s.count_prefix("global_load") == 0);
    CHECK(s.lds_bytes == shared_bytes(gemm));
    check_no_scratch(s);
    const UOp relu = gemm::matmul_relu(64 * (1 + weft::testing::rng()() % 3), 64, 64 * (1 + weft::testing::rng()() % 3), dtypes::float32);
    const emu::KernelStats r = stats_of(relu, target);
    CHECK(r.lds_bytes == shared_bytes(relu));
    CHECK(r.lds_bytes > 0);
    CHECK(r.count_prefix("v_mfma_") == 0);
    check_no_scratch(r);
  }
}
#endif  // WEFT_HAVE_LLVM
