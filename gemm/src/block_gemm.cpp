#include "weft/gemm/block_gemm.h"

#include "weft/kernels/pipeline.h"

namespace weft::gemm {

using namespace tile;

GemmBlockShape gemm_block_shape(std::string_view arch) {
  GemmBlockShape cdna{256, 256, 64, 2, 2, 4};
  cdna.ping_pong = true;
  if (arch == "gfx950") return cdna;
  if (arch == "gfx942") return cdna.k_step = 32, cdna;
  if (arch.starts_with("sm_")) return {128, 128, 32, 2, 2, 4, 32, SharedSwizzle::swizzle_64b};
  throw Error("gemm_block_shape: no block schedule for target '" + std::string(arch) + "' (gfx950, gfx942, sm_XY)");
}

GemmBlockShape gemm_block_shape(std::string_view arch, DType input) {
  GemmBlockShape s = gemm_block_shape(arch);
  if (input == dtypes::bfloat16) return s;
  if (arch.starts_with("sm_") || input != mfma_fp8(arch))
    throw Error("gemm_block_shape: the block GEMM takes bfloat16 inputs" +
                (arch.starts_with("sm_") ? std::string() : ", or " + mfma_fp8(arch).name() + " on " + std::string(arch)) + "; not " + input.name());
  // As many bytes a step: 128 fp8 on gfx950 in HipKittens' fp8 tiles; 64 on gfx942, whose 64 KiB
  // of LDS hold two stages of 64-byte rows, too narrow for st_16x128: unswizzled there.
  s.k_step *= 2;
  s.swizzle = s.k_step % 128 == 0 ? SharedSwizzle::st_16x128 : SharedSwizzle::unswizzled;
  return s;
}

Workgroup gemm_workgroup(std::string_view arch, const GemmBlockShape& s, const std::vector<UOp>& grid) {
  return Workgroup(std::string(arch), grid, s.wave_rows, s.wave_cols, s.wave_size);
}

UOp tiles_of(const UOp& dim, int64_t size) { return (dim.cast(dtypes::index) + (size - 1)) / size; }

namespace {

// HipKittens' 8-wave ping-pong. Each K step is four clusters, each ended by an unfenced barrier:
//   memory 1  fill step k+1 into stage (k+1) % 2 (every wave its share); read the first half of
//             the step's operands of stage k % 2 into registers
//   compute 1 the MFMAs of that half, at s_setprio mfma_priority
//   memory 2  read the second half; wait until this wave's fills of step k+1 have landed
//   compute 2 the MFMAs of the second half
// A half is half of the step's MFMA k steps (all of A and B, half of K each), or, where a step is
// one MFMA k step (gfx950's fp8 through the f8f6f4 16x16x128), half of the wave's rows of C:
// memory 1 reads all of B and the first half of A's rows, compute 1 updates those rows of the
// accumulator (subtile), memory 2 reads the other half of A's rows, compute 2 updates the rest.
// Wave row 1 passes one barrier before the loop and row 0 one after it (staggered), so that row
// 0's n-th barrier pairs with row 1's (n-1)-th: while one row computes, the other runs a memory
// cluster, and the two waves of each SIMD (one of each row) keep its matrix core fed. With that
// offset, what one wave completes before its n-th barrier is ordered before what any wave does
// after its (n+1)-th, so a stage is read two barriers after every wave's wait for its fills (the
// wait in memory 2, the reads in memory 1 and 2 of the next step) and refilled two barriers after
// every wave's last read of it has returned (memory 2 of step k-1, then memory 1 of step k+1's
// fill): each memory cluster waits for its LDS reads (lgkmcnt(0)) before its barrier, so that
// the compute clusters also run their MFMAs without waiting.
// check_async_reads proves this wave by wave; the fills leave nothing in flight after the loop.
acc ping_pong_block(const Workgroup& wg, const GemmBlockShape& s, const gl& a, const gl& b, const UOp& a_row0, const UOp& b_row0, const UOp& steps) {
  if (s.stages != 2 || s.wave_rows != 2 || wg.arch().starts_with("sm_"))
    throw Error("gemm_block: the ping-pong runs 2 stages over 2 rows of waves on CDNA; got " + std::to_string(s.stages) + " stages, " +
                std::to_string(s.wave_rows) + " rows on " + wg.arch());
  const st as = shared(s.block_m, s.k_step, a.buffer.dtype(), s.swizzle, 2);
  const st bs = shared(s.block_n, s.k_step, b.buffer.dtype(), s.swizzle, 2);
  const auto fill_step = [&](const UOp& stage, const UOp& step) {
    return group({load(wg, as, stage, a, a_row0, step * s.k_step), load(wg, bs, stage, b, b_row0, step * s.k_step)});
  };
  const UOp first = constant(Wide(0));
  const UOp published = barrier({wait_counts({.vm = 0}, {fill_step(first, first)})}, BarrierFence::None);
  const UOp k = wg.range(steps.dtype() == dtypes::index ? steps : steps.cast(dtypes::index), AxisType::LOOP);
  const acc c0 = zero(accumulator(wg, s.wave_m(), s.wave_n()), wg);
  // The wave's operands of stage k % 2, read after `ready`: half h of them, and the rows of the
  // accumulator that half updates. `reads` are the reads half h issues itself (the second half
  // of a split by rows reuses `first`'s B, the first half's).
  struct Half {
    tile::rt a, b;
    int64_t row0, rows;
    std::vector<UOp> reads;
  };
  const auto parts_of = [](std::initializer_list<const tile::rt*> tiles) {
    std::vector<UOp> parts;
    for (const tile::rt* t : tiles) parts.insert(parts.end(), t->parts.begin(), t->parts.end());
    return parts;
  };
  const auto operands = [&](const UOp& ready, int64_t h, const Half* first) {
    const tile::rt ar = load(wg, as.after({ready}), k % 2, MatrixOperand::A, s.wave_m(), wg.wave_row());
    const tile::rt br = load(wg, bs.after({ready}), k % 2, MatrixOperand::B, s.wave_n(), wg.wave_col());
    const int64_t steps_per_k = ar.k() / ar.k_step(), a_tiles = s.wave_m() / 16;
    if (steps_per_k % 2 == 0) {
      Half half{k_slice(ar, h * steps_per_k / 2, steps_per_k / 2), k_slice(br, h * steps_per_k / 2, steps_per_k / 2), 0, s.wave_m(), {}};
      half.reads = parts_of({&half.a, &half.b});
      return half;
    }
    if (steps_per_k != 1 || a_tiles % 2)
      throw Error("gemm_block: the ping-pong splits a K step's " + std::to_string(steps_per_k) + " MFMA k steps, or a wave's " +
                  std::to_string(a_tiles) + " sub-tile rows of C, in halves");
    Half half{mn_slice(ar, h * a_tiles / 2, a_tiles / 2), first ? first->b : br, h * s.wave_m() / 2, s.wave_m() / 2, {}};
    half.reads = first ? parts_of({&half.a}) : parts_of({&half.a, &half.b});
    return half;
  };
  // A memory cluster's barrier: `before`, the half's own reads, `after`, all issued before it.
  const auto cluster_end = [](std::vector<UOp> before, const Half& half, const std::vector<UOp>& after) {
    before.insert(before.end(), half.reads.begin(), half.reads.end());
    before.insert(before.end(), after.begin(), after.end());
    return barrier(before, BarrierFence::None);
  };
  // Half h's MFMAs into its rows of `c`, after the memory cluster `memory`; the whole accumulator after them.
  const auto compute = [&](const acc& c, const Half& half, const UOp& memory, const std::vector<UOp>& loops, LoopEnd end) {
    const acc rows = subtile(c, half.row0, half.rows, 0, s.wave_n());
    const acc updated = mma_ABt(wg, rows, half.a.after({memory}), half.b.after({memory}), loops, s.mfma_priority, end);
    return c.after({updated.written()});
  };
  const Half half1 = operands(published, 0, nullptr);
  const UOp memory1 = cluster_end({fill_step((k + 1) % 2, k + 1)}, half1, {wait_counts({.lgkm = 0})});
  const acc c1 = compute(c0, half1, memory1, {k}, LoopEnd::open);
  const UOp compute1 = barrier({c1.written()}, BarrierFence::None);
  const Half half2 = operands(compute1, 1, &half1);
  const UOp memory2 = cluster_end({}, half2, {wait_counts({.vm = 0, .lgkm = 0}, {compute1})});
  const acc c2 = compute(c1, half2, memory2, {}, LoopEnd::closes);
  const UOp compute2 = barrier({c2.written()}, BarrierFence::None);
  const UOp loop = group({memory1, c1.written(), compute1, memory2, c2.written(), compute2}).end({k});
  return c0.after({group({published, staggered(wg, loop)})});
}

}  // namespace

acc gemm_block(const Workgroup& wg, const GemmBlockShape& s, const gl& a, const gl& b, const UOp& a_row0, const UOp& b_row0, const UOp& steps) {
  if (s.ping_pong) return ping_pong_block(wg, s, a, b, a_row0, b_row0, steps);
  const st as = shared(s.block_m, s.k_step, a.buffer.dtype(), s.swizzle, s.stages);
  const st bs = shared(s.block_n, s.k_step, b.buffer.dtype(), s.swizzle, s.stages);
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
