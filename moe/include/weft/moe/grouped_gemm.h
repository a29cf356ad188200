// The MoE grouped GEMM: one launch computes every expert's product on the dispatched rows of
// the routing plan (plan.h):
//
//   Ys[r, :] = Xs[r, :] * W[e]^T   for every row r of row block b with e = block_expert[b] >= 0
//
// Xs [max_rows, K] bf16 (the dispatched rows, slot 1), W [E, N, K] bf16 (expert e's weight,
// row-major N x K, as hk_gemm's B; the same layout on every target, slot 2), block_expert
// [max_blocks] int32 (slot 3), Ys [max_rows, N] bf16 (slot 0), fp32 accumulation. Variables:
// ROWS = max_rows, N, K, E.
//
// Each workgroup computes one block of the tile layer's GEMM body (gemm/block_gemm.h: 256 x 256
// on gfx950 and gfx942, HipKittens' schedule; 128 x 128 on NVIDIA before Hopper; on sm_90,
// hopper_gemm's grouped form, 128 x 256 blocks of TMA loads, wgmma and TMA stores, with the same
// 128-row block and the same contract, gemm/hopper_gemm.h): it reads its expert from
// block_expert (one wave-uniform load of the plan block that holds its rows), and B's rows
// start at e * N. A block of expert -1 (past offsets[E]) runs no K step and stores nothing:
// its rows of Ys keep whatever they held. Padding rows of an expert's blocks are computed like
// the others: Xs's padding row times W[e]^T, zeros where Xs's padding rows are zeros.
//
// The edges: K past its end reads zeros through the fills' range checks (per row of Xs and W,
// so an expert's columns never run into the next row), which needs K a multiple of 8 (the
// fills' 16-byte vectors). N need not be a multiple of the block: the B tile of expert e's last
// column block then holds rows of expert e + 1 (or zeros past the last expert), but those rows
// only feed the accumulator's columns >= N, which the store masks; no column < N ever reads
// another expert's weight. The plan's block_rows must be a multiple of the kernel's row block,
// so that no kernel block straddles two experts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "weft/gemm/hopper_gemm.h"
#include "weft/gemm/matmul_relu.h"
#include "weft/moe/plan.h"
#include "weft/runtime/compile_cache.h"
#include "weft/runtime/device.h"
#include "weft/runtime/kernel.h"

namespace weft::moe {

// The inputs' precision.
enum class GroupedPrecision {
  Bfloat16,      // Xs and W bf16
  Fp8RowScaled,  // Xs8 [max_rows, K] and W8 [E, N, K] in the target's fp8 (grouped_gemm_input:
                 // float8_e4m3 on sm_90 and gfx950, CDNA3's float8_e4m3fnuz on gfx942) with float32
                 // scales, Xs's per row (dispatch_fp8's) and W's per expert output column [E, N]:
                 //   Ys[r, j] = (Xs8[r, :] . W8[e][j, :]) * x_scale[r] * w_scale[e, j]
                 // Slots: 0 Ys, 1 Xs8, 2 W8, 3 block_expert, 4 x_scale, 5 w_scale. sm_90 (wgmma's
                 // fp8 MMA, its shortened fp32 accumulation as cuBLASLt's fast accumulation), gfx950
                 // (the f8f6f4 MFMA 16x16x128) and gfx942 (the MFMA 16x16x32 fp8), full fp32
                 // accumulation, each lane scaling its accumulators before the store; not NVIDIA
                 // before Hopper.
};

// The dtype of Xs and W for `arch` and `precision`: bfloat16, or the target's fp8.
DType grouped_gemm_input(std::string_view arch, GroupedPrecision precision);

// The grouped GEMM for `arch` (gfx950, gfx942, sm_XY) and a plan of `block_rows`-row blocks.
// Throws weft::Error for another target, a block_rows that is not a positive multiple of the
// target's row block (grouped_gemm_block_rows), or fp8 on NVIDIA before sm_90.
// On sm_90, `sm90_store` is how Ys is written (gemm::HopperStore): by TMA stores (the default;
// the launch then needs Ys's rows, N * 2 bytes, a multiple of 16 bytes, as a tensor map does) or
// by masked stores of each thread's elements (any N). Other targets ignore it.
UOp grouped_gemm(std::string_view arch, int64_t block_rows, GroupedPrecision precision = GroupedPrecision::Bfloat16,
                 gemm::HopperStore sm90_store = gemm::HopperStore::Tma);

// The kernel's row block on `arch`: 256 on gfx950 and gfx942, 128 on NVIDIA (sm_90 included). A plan for it
// has block_rows a multiple of this.
int64_t grouped_gemm_block_rows(std::string_view arch);

// The kernel compiled for a device and a plan's shape, launched on device buffers (the MoE
// layer chains it after dispatch).
class GroupedGemm {
 public:
  // Throws weft::Error for a shape the kernel cannot take (MoeShape::validate, block_rows).
  // `cache` (may be null) must outlive the GroupedGemm: on sm_90 a second form may be compiled
  // through it later (kernel_for).
  GroupedGemm(rt::Device& device, const MoeShape& shape, rt::CompileCache* cache = nullptr,
              GroupedPrecision precision = GroupedPrecision::Bfloat16);

  // ys [max_rows, n], xs [max_rows, k], w [E, n, k] (bf16) and block_expert [max_blocks]
  // (int32), as the plan's buffers are sized. Throws weft::Error for an n or k it cannot take
  // (n >= 1; k >= 8 a multiple of 8; on CDNA W and Xs within 2^31 bytes, the reach of the
  // buffer instructions' 32-bit offsets), for buffers of another dtype or size, or for an error
  // the device reports.
  void launch(rt::Device& device, int64_t n, int64_t k, const rt::DeviceArray& ys, const rt::DeviceArray& xs, const rt::DeviceArray& w,
              const rt::DeviceArray& block_expert) const;
  // The fp8 form (GroupedPrecision::Fp8RowScaled): xs8 [max_rows, k] and w8 [E, n, k] in
  // grouped_gemm_input's fp8, x_scale [max_rows] and w_scale [E, n] float32; k >= 16 a multiple
  // of 16.
  void launch_fp8(rt::Device& device, int64_t n, int64_t k, const rt::DeviceArray& ys, const rt::DeviceArray& xs8, const rt::DeviceArray& w8,
                  const rt::DeviceArray& block_expert, const rt::DeviceArray& x_scale, const rt::DeviceArray& w_scale) const;

  // The kernel for an N whose rows are a multiple of 16 bytes (every N off sm_90).
  const rt::CompiledKernel& kernel() const { return kernel_; }
  // The kernel a launch with this N runs: kernel(), or on sm_90, for an N whose rows of Ys are
  // not a multiple of 16 bytes, the masked-store form, compiled for `device` at its first use
  // (so that a caller can compile it before timing launches).
  const rt::CompiledKernel& kernel_for(rt::Device& device, int64_t n) const;
  // Every kernel compiled so far (kernel() and, once compiled, the masked-store form).
  std::vector<const rt::CompiledKernel*> compiled() const;

 private:
  void check_sizes(int64_t n, int64_t k) const;
  MoeShape shape_;
  std::string arch_;
  GroupedPrecision precision_;
  rt::CompiledKernel kernel_;
  rt::CompileCache* cache_ = nullptr;
  // sm_90, an N whose rows are not a multiple of 16 bytes: the masked-store form, compiled at the
  // first such launch (so a GroupedGemm is not to be launched from two threads at once).
  mutable std::optional<rt::CompiledKernel> direct_store_;
};

// What run_grouped_gemm draws, and what a test may fix instead.
struct GroupedGemmInputs {
  // The choices, tokens * top_k expert ids (k distinct per token); empty: drawn at random.
  std::vector<int32_t> expert_ids;
  // An expert whose weight is the N x K identity (needs N == K): its rows of Ys must equal Xs's
  // bit for bit (times the scales, for fp8). -1: none.
  int64_t identity_expert = -1;
  // fp8 inputs (the target's format) in [-1, 1] with random scales in [0.25, 2.25]
  // (GroupedPrecision::Fp8RowScaled), checked within wgmma's fp8 accumulation bound on sm_90 and
  // the fp32 bound on CDNA.
  bool fp8 = false;
};

// The host entry: expert choices (random, or `inputs`'), plan_reference, random Xs (padding
// rows zero) and W, a poisoned Ys, a launch, and a check of Ys: every real row against
// Xs * W[e]^T in double precision (bf16 tolerance as hk_gemm's; the identity expert's rows
// exactly), padding rows of used blocks exactly zero, and the rows of unused blocks still
// poisoned (not written).
gemm::RunResult run_grouped_gemm(rt::Device& device, const MoeShape& shape, int64_t n, int64_t k, uint64_t seed,
                                 rt::CompileCache* cache = nullptr);
gemm::RunResult run_grouped_gemm(rt::Device& device, const MoeShape& shape, int64_t n, int64_t k, const GroupedGemmInputs& inputs,
                                 uint64_t seed, rt::CompileCache* cache = nullptr);

}  // namespace weft::moe
