// pipelined(range, stages, body): a software pipeline over a loop of steps whose inputs are
// filled asynchronously into staged shared tiles (HipKittens' tic/toc buffers, TileLang's
// T.Pipelined), written with the tile layer's primitives: fills (load(st, gl)), wait_counts,
// async_commit and an unfenced barrier.
//
//   acc sum = pipelined<acc>(wg, k_steps, /*stages=*/2, [&](const PipelineStep& p) {
//     return StepBody<acc>{
//         {fill(wg, as, p.fill_stage, a, row0, p.fill_step * 64), fill(wg, bs, p.fill_stage, b, col0, p.fill_step * 64)},
//         [&, p](const std::vector<UOp>& ready) {
//           const rt ar = load(wg, as.after(ready), p.stage, MatrixOperand::A, 128, wg.wave_row());
//           const rt br = load(wg, bs.after(ready), p.stage, MatrixOperand::B, 64, wg.wave_col());
//           return mma_ABt(wg, c, ar, br, {p.step}, 1);
//         }};
//   });
//
// The schedule, for S stages and n steps (stage of step k: k % S):
//   prologue   fills of steps 0 .. S-2 (the body called with fill_step = 0 .. S-2)
//   step k     fills of step k + S - 1 into its stage; wait until at most the fills of steps
//              k+1 .. k+S-1 are outstanding (so step k's have landed); an unfenced barrier (every
//              wave has passed that wait: the stage is complete in LDS); compute on stage k % S.
//              The pipeline's write-after-read barrier ends the step (insert_barriers), so no
//              wave refills a stage another wave still reads.
//   epilogue   the last S-1 steps are the same loop: the steps they fill lie past the end, and
//              the tile layer's fills read zeros there through the buffer's range check (no
//              memory is touched), so the compute is written once (one copy of the MFMAs).
// The wait counts come from the fills the body returns (fill_instructions per wave on CDNA,
// where vmcnt counts every instruction; one cp.async group per step on NVIDIA, where
// async_commit closes it), never from the author. docs/tiles.md describes the pipeline.
#pragma once

#include <functional>
#include <vector>

#include "weft/kernels/tiles.h"

namespace weft::tile {

// One asynchronous fill of a stage and the number of memory instructions it issues per wave.
struct Fill {
  UOp effect;
  int64_t instructions = 0;
};
// load(wg, dst, stage, src, row0, col0) (direct-to-LDS / cp.async) as a Fill.
Fill fill(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0);

// The indices one call of the body gets. In the loop: compute on `step` (the loop range) held in
// `stage`, and fill `fill_step` into `fill_stage`. In the prologue (the body's fills only):
// `fill_step` and `fill_stage` are the constants 0 .. S-2 and `step`, `stage` are not set.
struct PipelineStep {
  UOp step, stage;
  UOp fill_step, fill_stage;
};

// What the body returns: the fills of `fill_step` and the compute on `stage`, a function of the
// effects a read of the stage must follow (the barrier that publishes it: read tiles as
// `tile.after(ready)`).
template <class Result>
struct StepBody {
  std::vector<Fill> fills;
  std::function<Result(const std::vector<UOp>& ready)> compute;
};

namespace detail {
// The loop's indices and `ready`: the barrier that publishes stage `step.stage` (after the
// prologue's fills and this step's wait). `body_fills` is called for each prologue step and once
// for the loop's step. Shared by every pipelined<Result>.
struct PipelineLoop {
  PipelineStep step;
  std::vector<UOp> ready;
};
PipelineLoop pipeline_loop(const Workgroup& wg, const UOp& steps, int64_t stages,
                           const std::function<std::vector<Fill>(const PipelineStep&)>& body_fills);
}  // namespace detail

// Runs `body` over `steps` loop iterations (a LOOP range made here, its size an index expression)
// with `stages` >= 2 stages, and returns what the loop's compute returns (an accumulator after
// the loop, or an effect). The compute must end its updates over `step` (mma_ABt(..., {p.step})).
template <class Result>
Result pipelined(const Workgroup& wg, const UOp& steps, int64_t stages, const std::function<StepBody<Result>(const PipelineStep&)>& body) {
  std::function<Result(const std::vector<UOp>&)> compute;
  const detail::PipelineLoop loop = detail::pipeline_loop(wg, steps, stages, [&](const PipelineStep& p) {
    StepBody<Result> b = body(p);
    if (p.step.node() != nullptr) compute = std::move(b.compute);
    return std::move(b.fills);
  });
  if (!compute) throw Error("pipelined: the body returned no compute for the loop's step");
  return compute(loop.ready);
}

// HipKittens' 8-wave ping-pong stagger around `body` (a loop whose steps pass their barriers in
// the same order in every wave): the waves of wave-grid row 1 pass one barrier before it, those
// of row 0 one after it, so each barrier of one row pairs with the other row's previous one and
// the rows alternate between the clusters the barriers separate (one row's MFMAs while the
// other issues its memory instructions; on CDNA the two waves of a SIMD are one of each row).
// Both rows pass the same number of barriers. check_async_reads follows the pairing wave by wave
// (docs/passes.md). Throws weft::Error unless the wave grid has 2 rows.
UOp staggered(const Workgroup& wg, const UOp& body);

}  // namespace weft::tile
