// pipelined(range, stages, body): the prologue's fills, then a loop whose step fills the stage S-1
// steps ahead, waits for this step's stage and publishes it with an unfenced barrier before the
// body's compute reads it. pipeline.h describes the schedule.
#include "weft/kernels/pipeline.h"

#include <string>

namespace weft::tile {
namespace {

// NVIDIA counts cp.async groups (one per step, closed by async_commit); CDNA's vmcnt counts
// every instruction (async_commit is nothing there).
bool counts_groups(const Workgroup& wg) { return wg.arch().starts_with("sm_"); }

// The body's fills of one step as one effect, with the step's cp.async group closed after them.
UOp step_fills(const std::vector<Fill>& fills, int64_t& instructions) {
  if (fills.empty()) throw Error("pipelined: the body fills nothing; a pipeline needs a fill per step");
  std::vector<UOp> effects;
  instructions = 0;
  for (const Fill& f : fills) {
    if (f.effect.node() == nullptr || f.instructions < 1) throw Error("pipelined: a fill without an effect or instructions (make it with fill(...))");
    effects.push_back(f.effect);
    instructions += f.instructions;
  }
  const UOp issued = group(effects);
  return group({issued, async_commit({issued})});
}

}  // namespace

Fill fill(const Workgroup& wg, const st& dst, const UOp& stage, const gl& src, const UOp& row0, const UOp& col0) {
  return {load(wg, dst, stage, src, row0, col0), fill_instructions(wg, dst)};
}

UOp staggered(const Workgroup& wg, const UOp& body) {
  if (wg.wave_rows() != 2)
    throw Error("staggered: the ping-pong pairs two rows of waves; this wave grid has " + std::to_string(wg.wave_rows()));
  return group({when(wg.wave_row().eq(1), {barrier({}, BarrierFence::None)}), body, when(wg.wave_row().eq(0), {barrier({}, BarrierFence::None)})});
}

namespace detail {

PipelineLoop pipeline_loop(const Workgroup& wg, const UOp& steps, int64_t stages,
                           const std::function<std::vector<Fill>(const PipelineStep&)>& body_fills) {
  if (stages < 2) throw Error("pipelined: " + std::to_string(stages) + " stage(s); a pipeline overlaps fills with compute in at least 2");
  // Prologue: steps 0 .. S-2 into stages 0 .. S-2.
  std::vector<UOp> prologue;
  int64_t per_step = 0;
  for (int64_t s = 0; s + 1 < stages; ++s) {
    PipelineStep p;
    p.fill_step = p.fill_stage = constant(Wide(s));
    int64_t n = 0;
    prologue.push_back(step_fills(body_fills(p), n));
    if (s > 0 && n != per_step) throw Error("pipelined: the body's fills differ between steps (" + std::to_string(per_step) + " and " + std::to_string(n) + " instructions)");
    per_step = n;
  }
  // Step k: fill step k + S - 1, then wait for step k's stage. Outstanding after the fills: the
  // steps k .. k+S-1; the wait leaves those of k+1 .. k+S-1, S-1 steps' worth.
  PipelineLoop loop;
  const UOp k = wg.range(steps.dtype() == dtypes::index ? steps : steps.cast(dtypes::index), AxisType::LOOP);
  loop.step.step = k;
  loop.step.stage = k % stages;
  loop.step.fill_step = k + (stages - 1);
  loop.step.fill_stage = (k + (stages - 1)) % stages;
  int64_t n = 0;
  const UOp fills = step_fills(body_fills(loop.step), n);
  if (n != per_step) throw Error("pipelined: the body's fills differ between steps (" + std::to_string(per_step) + " and " + std::to_string(n) + " instructions)");
  const int64_t outstanding = (stages - 1) * (counts_groups(wg) ? 1 : per_step);
  const UOp landed = wait_counts({.vm = outstanding}, {fills});
  // Unfenced: a fenced barrier would drain every fill (the next stages' too).
  std::vector<UOp> after = prologue;
  after.push_back(landed);
  loop.ready = {barrier(after, BarrierFence::None)};
  return loop;
}

}  // namespace detail
}  // namespace weft::tile
