#include "weft/gemm/block_gemm.h"

#include "weft/kernels/pipeline.h"

namespace weft::gemm {

using namespace tile;

GemmBlockShape gemm_block_shape(std::string_view arch) {
  if (arch == "gfx950") return {256, 256, 64, 2, 2, 4};
  if (arch == "gfx942") return {256, 256, 32, 2, 2, 4};
  if (arch.starts_with("sm_")) return {128, 128, 32, 2, 2, 4, 32, SharedSwizzle::swizzle_64b};
  throw Error("gemm_block_shape: no block schedule for target '" + std::string(arch) + "' (gfx950, gfx942, sm_XY)");
}

Workgroup gemm_workgroup(std::string_view arch, const GemmBlockShape& s, const std::vector<UOp>& grid) {
  return Workgroup(std::string(arch), grid, s.wave_rows, s.wave_cols, s.wave_size);
}

UOp tiles_of(const UOp& dim, int64_t size) { return (dim.cast(dtypes::index) + (size - 1)) / size; }

acc gemm_block(const Workgroup& wg, const GemmBlockShape& s, const gl& a, const gl& b, const UOp& a_row0, const UOp& b_row0, const UOp& steps) {
  const st as = shared(s.block_m, s.k_step, dtypes::bfloat16, s.swizzle, s.stages);
  const st bs = shared(s.block_n, s.k_step, dtypes::bfloat16, s.swizzle, s.stages);
  // HipKittens' tic/toc loop over K steps: each step fills the stage `stages - 1` steps ahead
  // (zeros past K) and computes on its own once the fills have landed and a barrier has
  // published them (pipeline.h: the waits come from the fills).
  const acc c0 = zero(accumulator(wg, s.wave_m(), s.wave_n()), wg);
  return pipelined<acc>(wg, steps, s.stages, [&](const PipelineStep& p) {
    const UOp k_fill = p.fill_step * s.k_step;
    return StepBody<acc>{{fill(wg, as, p.fill_stage, a, a_row0, k_fill), fill(wg, bs, p.fill_stage, b, b_row0, k_fill)},
                         [&, p](const std::vector<UOp>& ready) {
                           const tile::rt ar = load(wg, as.after(ready), p.stage, MatrixOperand::A, s.wave_m(), wg.wave_row());
                           const tile::rt br = load(wg, bs.after(ready), p.stage, MatrixOperand::B, s.wave_n(), wg.wave_col());
                           return mma_ABt(wg, c0, ar, br, {p.step}, s.mfma_priority);
                         }};
  });
}

}  // namespace weft::gemm
