#include "weft/gemm/mma_tile.h"

#include "host_matrix.h"
#include "weft/dsl/builder.h"
#include "weft/kernels/fragments.h"
#include "weft/kernels/layout_expr.h"
#include "weft/kernels/tiles.h"

namespace weft::gemm {

namespace {

// mma.sync's fragments are the same on every target from sm_80 on; the tile layer needs an
// NVIDIA target name to pick them (and 32-lane warps).
constexpr const char* kArch = "sm_90";

}  // namespace

UOp mma_tile(DType input) {
  using namespace tile;
  // One warp, one instruction: the catalog's m16n8k16 fragments straight from global memory.
  Workgroup wg(kArch, {constant(Wide(1))}, 1, 1, 32);
  const WmmaArg shape = mma_shape(wg, input);
  const Layout la = mma_m16n8k16_operand(input, MatrixOperand::A), lb = mma_m16n8k16_operand(input, MatrixOperand::B),
               lc = mma_m16n8k16_operand(input, MatrixOperand::C);
  UOp d = placeholder({16, 8}, dtypes::float32, 0), a = placeholder({16, 16}, input, 1), b = placeholder({16, 8}, input, 2);
  const UOp ea = wg.range(8, AxisType::UPCAST), eb = wg.range(4, AxisType::UPCAST);
  auto [ar, ac] = operand_index(la, wg.lane(), ea);
  auto [br, bc] = operand_index(lb, wg.lane(), eb);
  const UOp a_frag = a[{ar, ac}].load().contract({ea}), b_frag = b[{br, bc}].load().contract({eb});
  const UOp out = wmma(a_frag, b_frag, vectorize(std::vector<UOp>(4, constant(0.0, dtypes::float32))), shape);
  std::vector<UOp> stores;
  for (int64_t e = 0; e < 4; ++e) {
    auto [dr, dc] = operand_index(lc, wg.lane(), constant(Wide(e)));
    stores.push_back(d[{dr, dc}].store(out.gep(e)));
  }
  return sink({"mma_tile"}, {group(stores).end(wg.hardware_ranges())});
}

RunResult run_mma_tile(rt::Device& device, DType input, bool identity_b, uint64_t seed, rt::CompileCache* cache) {
  return run_matrix_product(device, mma_tile(input), 16, 8, 16, input, identity_b, seed, cache);
}

UOp mma_gemm(int64_t m, int64_t n, int64_t k, DType input) {
  using namespace tile;
  constexpr int64_t kBlock = 128, kStep = 32, kStages = 2, kWaveRows = 2, kWaveCols = 4;
  if (m <= 0 || n <= 0 || k <= 0 || m % kBlock || n % kBlock || k % kStep)
    throw Error("mma_gemm: M and N must be positive multiples of " + std::to_string(kBlock) + " and K of " + std::to_string(kStep) +
                "; got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  auto size = [](int64_t v) { return constant(Wide(v)); };
  const gl d = global(0, size(m), size(n), dtypes::float32), a = global(1, size(m), size(k), input), b = global(2, size(k), size(n), input);
  // A 128 x 128 block of D per workgroup of 2 x 4 warps, each warp 64 x 32 of it.
  Workgroup wg(kArch, {size(n / kBlock), size(m / kBlock)}, kWaveRows, kWaveCols, 32);
  const UOp row0 = wg.block(1) * kBlock, col0 = wg.block(0) * kBlock, start = size(0);
  // A's 128 x 32 K step and B's 32 x 128 (K x N, as B is stored), two stages each, in NVIDIA's
  // 64-byte swizzle: the warps' 4-byte A reads (8 rows of one 16-byte chunk) and 2-byte B reads
  // (4 rows of one chunk) meet every bank once.
  const st as = shared(kBlock, kStep, input, SharedSwizzle::swizzle_64b, kStages);
  const st bs = shared(kStep, kBlock, input, SharedSwizzle::swizzle_64b, kStages);

  // Prologue: stage 0 holds K step 0, one cp.async group.
  const UOp first = async_commit({group({load(wg, as, start, a, row0, start), load(wg, bs, start, b, start, col0)})});
  // Step ks: fill the other stage with step ks + 1 (zeros past K) as a new group, then compute on
  // this one. Its group is complete once at most the new one is in flight (cp.async.wait_group
  // 1), and the barrier publishes every warp's copies.
  const UOp ks = wg.range(k / kStep, AxisType::LOOP);
  const UOp here = ks % kStages, next = (ks + 1) % kStages, k_next = (ks + 1) * kStep;
  const UOp prefetch = async_commit({group({load(wg, as, next, a, row0, k_next), load(wg, bs, next, b, k_next, col0)})});
  const UOp ready = barrier({first, wait_counts({.vm = 1}, {prefetch})}, BarrierFence::None);
  const tile::rt ar = load(wg, as.after({ready}), here, MatrixOperand::A, kBlock / kWaveRows, wg.wave_row());
  const tile::rt br = load_kn(wg, bs.after({ready}), here, kBlock / kWaveCols, wg.wave_col());
  // 4 x 2 sub-tiles of 16 x 16, two k steps of 16, two mma.sync each: 32 a warp per step. The
  // pipeline's write-after-read barrier ends the step before the next one refills this stage.
  acc sum = mma_ABt(wg, zero(accumulator(wg, kBlock / kWaveRows, kBlock / kWaveCols), wg), ar, br, {ks});
  // The last step's prefetch (zeros past K) is still in flight: drain it before the warps leave.
  sum.buffer = sum.buffer.after({wait_counts({.vm = 0}, {sum.buffer.src(1)})});

  const UOp wave_row0 = row0 + wg.wave_row() * (kBlock / kWaveRows), wave_col0 = col0 + wg.wave_col() * (kBlock / kWaveCols);
  return sink({"mma_gemm"}, {store(wg, d, sum, wave_row0, wave_col0)});
}

RunResult run_mma_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType input, bool identity_b, uint64_t seed,
                       rt::CompileCache* cache) {
  if (identity_b && k != n) throw Error("run_mma_gemm: an identity B needs K == N");
  return run_matrix_product(device, mma_gemm(m, n, k, input), m, n, k, input, identity_b, seed, cache);
}

}  // namespace weft::gemm
