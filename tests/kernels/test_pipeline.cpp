// pipelined(range, stages, body) and the static check that every read of an asynchronously
// filled stage is covered by a wait and a barrier (check_async_reads, after linearization).
// A pipelined copy (global -> staged shared tile -> global) runs with 2 and 3 stages on both
// emulated targets, bit-exact; hand-written kernels that drop the wait, drop the barrier, wait
// with too large a count or prefetch into the stage they read are compile errors naming the
// stage and the read. Staggered schedules (HipKittens' ping-pong: barriers under a wave-row
// when) are checked wave by wave: a correct stagger passes (and copies exactly), one whose
// barriers pair a read with a barrier before the writer's wait, or a refill with a barrier
// before another wave's read, is an error naming both waves.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "weft/gemm/hk_gemm.h"
#include "weft/kernels/layout_expr.h"
#include "weft/kernels/pipeline.h"
#include "weft/lowering/pipeline.h"

using namespace weft;
using namespace weft::tile;

namespace {

constexpr int64_t kRows = 32, kCols = 64;  // one step: a 32 x 64 bf16 tile

// dst rows [step*32, step*32 + 32) = stage `stage` of `tile`, read element by element through the
// tile's layout by every thread (each thread reads elements other waves filled). Ended over
// `loops` (the step's loop, if any).
UOp copy_out(const Workgroup& wg, const st& tile, const UOp& stage, const gl& dst, const UOp& step, const std::vector<UOp>& loops) {
  const UOp j = wg.range(tile.size() / wg.threads(), AxisType::UNROLL);
  const UOp e = j * wg.threads() + wg.thread();
  const UOp r = e / kCols, c = e % kCols;
  const UOp offset = layout_index(tile.layout, {{"row", r}, {"col", c}}, "offset");
  std::vector<UOp> ranges{j};
  ranges.insert(ranges.end(), loops.begin(), loops.end());
  return dst.buffer[{step * kRows + r, c}].store(tile.buffer[stage * tile.size() + offset].load()).end(ranges);
}

lower::LowerOptions waves_of(int64_t lanes) {
  lower::LowerOptions o;
  o.wave_size = lanes;
  return o;
}

struct CopyKernel {
  Workgroup wg;
  gl dst, src;
  st tile;
};

// `steps` (a kernel variable S) tiles of 32 x 64 bf16, one workgroup of 2 x 2 waves of `lanes`.
CopyKernel copy_kernel(const std::string& arch, int64_t stages, int64_t lanes = 64) {
  const UOp steps = variable("S", 1, 1 << 12);
  const UOp rows = steps.cast(dtypes::index) * kRows;
  CopyKernel k{Workgroup(arch, {constant(Wide(1))}, 2, 2, lanes), global(0, rows, constant(Wide(kCols)), dtypes::bfloat16),
               global(1, rows, constant(Wide(kCols)), dtypes::bfloat16),
               shared(kRows, kCols, dtypes::bfloat16, SharedSwizzle::st_16x32, stages)};
  return k;
}

UOp pipelined_copy(const std::string& arch, int64_t stages, int64_t lanes = 64) {
  const CopyKernel k = copy_kernel(arch, stages, lanes);
  const UOp steps = variable("S", 1, 1 << 12).cast(dtypes::index);
  const UOp done = pipelined<UOp>(k.wg, steps, stages, [&](const PipelineStep& p) {
    return StepBody<UOp>{{fill(k.wg, k.tile, p.fill_stage, k.src, p.fill_step * kRows, constant(Wide(0)))},
                         [&, p](const std::vector<UOp>& ready) { return copy_out(k.wg, k.tile.after(ready), p.stage, k.dst, p.step, {p.step}); }};
  });
  return sink({"pipelined_copy"}, {done.end(k.wg.hardware_ranges())});
}

std::vector<uint16_t> random_bf16(size_t n) {
  std::vector<uint16_t> v;
  for (float x : weft::testing::random_floats(n, -100.0f, 100.0f)) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    v.push_back(static_cast<uint16_t>(bits >> 16));
  }
  return v;
}

void check_copy(int64_t stages, int64_t steps) {
  for (const std::string& target : weft::testing::emulators()) {
    CAPTURE(target);
    CAPTURE(stages);
    CAPTURE(steps);
    auto dev = rt::open_device(target);
    const rt::CompiledKernel k = rt::CompiledKernel::compile(*dev, pipelined_copy(dev->arch(), stages));
    const std::vector<uint16_t> input = random_bf16(static_cast<size_t>(steps * kRows * kCols));
    const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::bfloat16, input.size()), weft::testing::put(*dev, dtypes::bfloat16, input)};
    k.launch(*dev, args, {{"S", steps}});
    const std::vector<uint16_t> got = weft::testing::get<uint16_t>(*dev, args[0]);
    REQUIRE(got.size() == input.size());
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != input[i] && bad++ == 0) FAIL_CHECK("element " << i << " (row " << i / kCols << "): got " << got[i] << ", want " << input[i]);
    CHECK(bad == 0);
  }
}

// One stage filled by every wave, then read by every thread. How it is synchronized:
enum class OneShot { Covered, NoWait, NoBarrier, WaitTooLarge };

UOp one_shot(OneShot how) {
  const CopyKernel k = copy_kernel("gfx950", 1);
  const UOp zero = constant(Wide(0));
  const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
  REQUIRE(fill_instructions(k.wg, k.tile) == 1);
  std::vector<UOp> order{filled};
  UOp ready;
  switch (how) {
    case OneShot::Covered: ready = barrier({wait_counts({.vm = 0}, {filled})}, BarrierFence::None); break;
    case OneShot::NoWait: ready = barrier({filled}, BarrierFence::None); break;
    case OneShot::WaitTooLarge: ready = barrier({wait_counts({.vm = 1}, {filled})}, BarrierFence::None); break;
    case OneShot::NoBarrier:
      // The wait names no predecessor (the group orders it after the fill), so the pipeline sees
      // no stores before the read and inserts no barrier of its own.
      ready = wait_counts({.vm = 0});
      order.push_back(ready);
      break;
  }
  order.push_back(copy_out(k.wg, k.tile.after({ready}), zero, k.dst, zero, {}));
  return sink({"one_shot"}, {group(order).end(k.wg.hardware_ranges())});
}

// hk_gemm's loop written by hand: stage 0 filled before the loop, step ks fills step ks + 1 into
// stage `next`, waits with `vm`, passes an unfenced barrier and reads stage ks % 2.
UOp hand_pipeline(int64_t vm, bool prefetch_into_read_stage) {
  const CopyKernel k = copy_kernel("gfx950", 2);
  const UOp zero = constant(Wide(0));
  const UOp first = load(k.wg, k.tile, zero, k.src, zero, zero);
  const UOp ks = k.wg.range(variable("S", 1, 1 << 12).cast(dtypes::index), AxisType::LOOP);
  const UOp here = ks % 2, next = prefetch_into_read_stage ? here : (ks + 1) % 2;
  const UOp prefetch = load(k.wg, k.tile, next, k.src, (ks + 1) * kRows, zero);
  const UOp ready = barrier({first, wait_counts({.vm = vm}, {prefetch})}, BarrierFence::None);
  return sink({"hand_pipeline"}, {copy_out(k.wg, k.tile.after({ready}), here, k.dst, ks, {ks}).end(k.wg.hardware_ranges())});
}

// one_shot with HipKittens' ping-pong stagger around the read: wave row 1 passes a barrier of its
// own (before the wait when `early_before_wait`, after it otherwise), then every wave the common
// barrier and the read, and wave row 0 one barrier of its own after the read, so that every wave
// passes two. Wave row 0's common barrier (its #1) pairs with wave row 1's own barrier.
UOp staggered_one_shot(bool early_before_wait, const std::string& arch = "gfx950") {
  const CopyKernel k = copy_kernel(arch, 1);
  const UOp zero = constant(Wide(0));
  const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
  const UOp early = when(k.wg.wave_row().eq(1), {barrier({}, BarrierFence::None)});
  const UOp landed = wait_counts({.vm = 0});
  std::vector<UOp> order{filled};
  if (early_before_wait) order.insert(order.end(), {early, landed});
  else order.insert(order.end(), {landed, early});
  const UOp ready = barrier({}, BarrierFence::None);
  order.push_back(ready);
  order.push_back(copy_out(k.wg, k.tile.after({ready}), zero, k.dst, zero, {}));
  order.push_back(when(k.wg.wave_row().eq(0), {barrier({}, BarrierFence::None)}));
  return sink({"staggered_one_shot"}, {group(order).end(k.wg.hardware_ranges())});
}

// hand_pipeline with the ping-pong stagger around its loop (wave row 1 one barrier ahead): step ks
// prefetches, waits, passes two barriers, reads stage ks % 2 and passes `closing` barriers. With 2
// the loop is safe: a wave's read follows the other row's publication (2 barriers), and the next
// fill of a stage follows the other row's read of it. With 1, wave row 0's fill of step ks + 2
// comes after its barrier paired with the one after which wave row 1 still reads that stage.
// The reads complete (wait_counts{.lgkm = 0}) before the closing barriers unless `leave_reads_in_flight`.
UOp staggered_loop(int64_t closing, bool leave_reads_in_flight = false) {
  const CopyKernel k = copy_kernel("gfx950", 2);
  const UOp zero = constant(Wide(0));
  const UOp first = load(k.wg, k.tile, zero, k.src, zero, zero);
  const UOp ks = k.wg.range(variable("S", 1, 1 << 12).cast(dtypes::index), AxisType::LOOP);
  const UOp here = ks % 2, next = (ks + 1) % 2;
  const UOp prefetch = load(k.wg, k.tile, next, k.src, (ks + 1) * kRows, zero);
  // Each statement names the one before it, so every barrier stays in the loop, in this order.
  const UOp landed = wait_counts({.vm = 1}, {prefetch});
  const UOp ready = barrier({barrier({first, landed}, BarrierFence::None)}, BarrierFence::None);
  std::vector<UOp> step{copy_out(k.wg, k.tile.after({ready}), here, k.dst, ks, {})};
  if (!leave_reads_in_flight) step.push_back(wait_counts({.lgkm = 0}, {step.back()}));
  for (int64_t c = 0; c < closing; ++c) step.push_back(barrier({step.back()}, BarrierFence::None));
  return sink({"staggered_loop"}, {group({first, when(k.wg.wave_row().eq(1), {barrier({}, BarrierFence::None)}), group(step).end({ks}),
                                          when(k.wg.wave_row().eq(0), {barrier({}, BarrierFence::None)})})
                                       .end(k.wg.hardware_ranges())});
}

// NVIDIA's counting: cp.async groups. Fills, an optional commit, wait_group 0, an unfenced barrier.
UOp cuda_one_shot(bool commit) {
  const CopyKernel k = copy_kernel("sm_90", 1, 32);
  const UOp zero = constant(Wide(0));
  const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
  const UOp issued = commit ? group({filled, async_commit({filled})}) : filled;
  const UOp ready = barrier({wait_counts({.vm = 0}, {issued})}, BarrierFence::None);
  return sink({"cuda_one_shot"}, {copy_out(k.wg, k.tile.after({ready}), zero, k.dst, zero, {}).end(k.wg.hardware_ranges())});
}

// A stagger around a grid barrier: wave row 1 passes a barrier of its own, then (when
// `balanced`) wave row 0 one of its own, then every wave the grid barrier and the read; with
// `fill`, the tile is filled asynchronously first and the grid barrier publishes it.
UOp staggered_grid(bool balanced, bool fill) {
  const CopyKernel k = copy_kernel("gfx950", 1);
  const UOp zero = constant(Wide(0));
  std::vector<UOp> order;
  if (fill) order.push_back(load(k.wg, k.tile, zero, k.src, zero, zero));
  order.push_back(when(k.wg.wave_row().eq(1), {barrier({}, BarrierFence::None)}));
  if (balanced) order.push_back(when(k.wg.wave_row().eq(0), {barrier({}, BarrierFence::None)}));
  const UOp met = grid_barrier(placeholder({1}, dtypes::uint32, fill ? 2 : 1)[zero]);  // (slot 1 is the fill's source)
  order.push_back(met);
  order.push_back(copy_out(k.wg, k.tile.after({met}), zero, k.dst, zero, {}));
  if (!balanced) order.push_back(when(k.wg.wave_row().eq(0), {barrier({}, BarrierFence::None)}));
  return sink({"staggered_grid"}, {group(order).end(k.wg.hardware_ranges())});
}

// The error lowering `kernel` throws, or "no error".
std::string error_of(const UOp& kernel) {
  try {
    lower::lower(lower::canonical_allocations(kernel));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("pipelined: a copy through 2 and 3 stages, bit-exact, steps fewer than, equal to and past the stages") {
  for (int64_t steps : {1, 2, 3, 7}) {
    check_copy(2, steps);
    check_copy(3, steps);
  }
}

TEST_CASE("pipelined: the wait leaves (stages - 1) steps of fills in flight") {
  // The body's fills, not the author, set the count: 1 instruction a step on gfx950 (a 32 x 64
  // bf16 tile, 256 threads x 16 bytes), 4 on gfx942; one cp.async group a step on NVIDIA.
  struct Expect {
    const char* arch;
    int64_t lanes, stages, vm;
  };
  for (const Expect& e : {Expect{"gfx950", 64, 2, 1}, Expect{"gfx950", 64, 3, 2}, Expect{"gfx942", 64, 3, 8}, Expect{"sm_90", 32, 3, 2}}) {
    CAPTURE(e.arch);
    CAPTURE(e.stages);
    const lower::LoweredKernel lowered = lower::lower(pipelined_copy(e.arch, e.stages, e.lanes), waves_of(e.lanes));
    std::vector<int64_t> waits;
    int64_t barriers = 0, commits = 0;
    for (const lower::LinearOp& s : lowered.program) {
      if (s.op.op() == Op::WAIT) waits.push_back(s.op.arg_as<WaitArg>().vm);
      if (s.op.op() == Op::BARRIER && std::holds_alternative<EffectArg>(s.op.arg()) &&
          s.op.arg_as<EffectArg>().value == static_cast<Wide>(BarrierFence::None))
        ++barriers;
      if (s.op.op() == Op::ASYNC_COMMIT) ++commits;
    }
    CHECK(waits == std::vector<int64_t>{e.vm});
    CHECK(barriers == 1);
    CHECK(commits == e.stages);  // one a prologue step, one in the loop
  }
}

TEST_CASE("pipelined: bad pipelines are errors") {
  const CopyKernel k = copy_kernel("gfx950", 2);
  const UOp steps = constant(Wide(4));
  auto body = [&](const PipelineStep& p) {
    return StepBody<UOp>{{fill(k.wg, k.tile, p.fill_stage, k.src, p.fill_step * kRows, constant(Wide(0)))},
                         [&, p](const std::vector<UOp>& ready) { return copy_out(k.wg, k.tile.after(ready), p.stage, k.dst, p.step, {p.step}); }};
  };
  CHECK_THROWS_WITH_AS(pipelined<UOp>(k.wg, steps, 1, body), doctest::Contains("at least 2"), Error);
  auto no_fills = [&](const PipelineStep&) { return StepBody<UOp>{{}, [](const std::vector<UOp>&) { return UOp(); }}; };
  CHECK_THROWS_WITH_AS(pipelined<UOp>(k.wg, steps, 2, no_fills), doctest::Contains("the body fills nothing"), Error);
}

TEST_CASE("check_async_reads: hk_gemm and the pipelined kernels pass") {
  // (The attention kernel passes in test_attention_tiles.cpp: every lowering runs the check.)
  for (const char* arch : {"gfx950", "gfx942"}) {
    CAPTURE(arch);
    CHECK_NOTHROW(lower::lower(gemm::hk_gemm(arch)));
    CHECK_NOTHROW(lower::lower(pipelined_copy(arch, 3)));
  }
  CHECK_NOTHROW(lower::lower(pipelined_copy("sm_90", 3, 32), waves_of(32)));
  CHECK_NOTHROW(lower::lower(one_shot(OneShot::Covered)));
  CHECK_NOTHROW(lower::lower(hand_pipeline(1, false)));
  CHECK_NOTHROW(lower::lower(cuda_one_shot(true), waves_of(32)));
  CHECK_NOTHROW(lower::lower(staggered_one_shot(false)));
}

// A grid barrier holds two fenced workgroup barriers: it publishes the fills before it (the
// check accepts the read with no wait of its own) and orders the stores before it (no barrier is
// inserted after it).
TEST_CASE("check_async_reads and insert_barriers: a grid barrier publishes the fills before it, with no barrier added") {
  for (const auto& [arch, lanes] : {std::pair<const char*, int64_t>{"gfx950", 64}, {"sm_90", 32}}) {
    CAPTURE(arch);
    const CopyKernel k = copy_kernel(arch, 1, lanes);
    const UOp zero = constant(Wide(0));
    const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
    const UOp met = grid_barrier(placeholder({1}, dtypes::uint32, 2)[zero], {filled});
    const UOp read = copy_out(k.wg, k.tile.after({met}), zero, k.dst, zero, {});
    const UOp kernel = sink({"grid_published"}, {group({filled, met, read}).end(k.wg.hardware_ranges())});
    const lower::LoweredKernel lowered = lower::lower(lower::canonical_allocations(kernel), waves_of(lanes));
    int64_t barriers = 0, grid_barriers = 0, fills = 0;
    for (const lower::LinearOp& step : lowered.program) {
      if (step.kind != lower::LinearOp::Kind::Effect) continue;
      barriers += step.statement().op() == Op::BARRIER;
      grid_barriers += step.statement().op() == Op::GRID_BARRIER;
      fills += step.statement().op() == Op::ASYNC_COPY;
    }
    CHECK(fills >= 1);
    CHECK(grid_barriers == 1);
    CHECK(barriers == 0);
  }
  SUBCASE("but not an NVIDIA kernel's committed copies, which its barriers do not drain") {
    const CopyKernel k = copy_kernel("sm_90", 1, 32);
    const UOp zero = constant(Wide(0));
    const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
    const UOp met = grid_barrier(placeholder({1}, dtypes::uint32, 2)[zero], {group({filled, async_commit({filled})})});
    const UOp read = copy_out(k.wg, k.tile.after({met}), zero, k.dst, zero, {});
    const UOp kernel = sink({"grid_committed"}, {group({filled, met, read}).end(k.wg.hardware_ranges())});
    try {
      lower::lower(lower::canonical_allocations(kernel), waves_of(32));
      FAIL("no error");
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("with no wait after the fill that covers it") != std::string::npos);
    }
  }
}

TEST_CASE("check_async_reads: a grid barrier in a staggered schedule must find every wave at the same barrier count") {
  // Balanced before it: the grid barrier's fences land the fill and its barriers publish it.
  CHECK(error_of(staggered_grid(true, true)) == "no error");
  CHECK(error_of(staggered_grid(true, false)) == "no error");
  for (bool fill : {true, false}) {  // the pairing is checked whether or not the kernel fills anything
    CAPTURE(fill);
    const std::string what = error_of(staggered_grid(false, fill));
    INFO(what);
    CHECK(what.find("pass check_async_reads") != std::string::npos);
    CHECK(what.find("the grid barrier at step ") != std::string::npos);
    CHECK(what.find("after 0 workgroup barriers and by wave ") != std::string::npos);
    CHECK(what.find(" after 1: its barriers would pair with a staggered one") != std::string::npos);
  }
}

TEST_CASE("check_async_reads: staggered barriers pair each wave's n-th barrier") {
  SUBCASE("the extra barrier after the wait: accepted, and the copy is exact on both emulated targets") {
    CHECK(error_of(staggered_one_shot(false)) == "no error");
    for (const std::string& target : weft::testing::emulators()) {
      CAPTURE(target);
      auto dev = rt::open_device(target);
      const rt::CompiledKernel k = rt::CompiledKernel::compile(*dev, staggered_one_shot(false, dev->arch()));
      const std::vector<uint16_t> input = random_bf16(static_cast<size_t>(kRows * kCols));
      const rt::DeviceArray args[] = {weft::testing::poisoned(*dev, dtypes::bfloat16, input.size()), weft::testing::put(*dev, dtypes::bfloat16, input)};
      k.launch(*dev, args, {{"S", 1}});
      CHECK(weft::testing::get<uint16_t>(*dev, args[0]) == input);
    }
  }
  SUBCASE("the extra barrier before the wait: wave row 0's barrier #1 pairs with it, so its read is unpublished") {
    const std::string what = error_of(staggered_one_shot(true));
    INFO(what);
    CHECK(what.find("pass check_async_reads") != std::string::npos);
    CHECK(what.find("(LOAD bfloat16 of LOCAL.0 elements [") != std::string::npos);
    CHECK(what.find(") by wave ") != std::string::npos);
    CHECK(what.find("after its barrier #1 reads stage 0 of shared buffer LOCAL.0 (elements [0, 2048)), filled asynchronously by wave ") !=
          std::string::npos);
    CHECK(what.find("comes after that wave's barrier #1, so it is published at barrier #2") != std::string::npos);
    CHECK(what.find("the reader's barrier #1 pairs with a barrier before the wait") != std::string::npos);
  }
  SUBCASE("a staggered loop: accepted with two closing barriers, a write-after-read race with one") {
    CHECK(error_of(staggered_loop(2)) == "no error");
    const std::string what = error_of(staggered_loop(1));
    INFO(what);
    CHECK(what.find("pass check_async_reads") != std::string::npos);
    CHECK(what.find(" in iteration r") != std::string::npos);
    CHECK(what.find("by wave 0 (") != std::string::npos);  // wave row 0 refills what wave row 1 reads
    CHECK(what.find("a write-after-read race") != std::string::npos);
  }
  SUBCASE("a staggered loop whose reads are still in flight at the closing barriers: a write-after-read race") {
    // The back end waits for an LDS read only where its value is used, which may lie past the
    // barrier that lets the other row refill the stage (hk_gemm's ping-pong hit this on the
    // emulator's hazard mode before its memory clusters waited for their reads).
    const std::string what = error_of(staggered_loop(2, true));
    INFO(what);
    CHECK(what.find("pass check_async_reads") != std::string::npos);
    CHECK(what.find("but the read is not complete by the reader's barrier #") != std::string::npos);
    CHECK(what.find("no wait_counts{.lgkm = 0} or fenced barrier of the reading wave before it") != std::string::npos);
  }
  SUBCASE("a barrier whose waves depend on a kernel variable cannot be paired") {
    const CopyKernel k = copy_kernel("gfx950", 1);
    const UOp zero = constant(Wide(0));
    const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
    const UOp ready = barrier({wait_counts({.vm = 0}, {filled})}, BarrierFence::None);
    const UOp odd = when(variable("S", 1, 1 << 12) > 1, {barrier({}, BarrierFence::None)});
    const UOp kernel = sink({"odd"}, {group({filled, ready, odd, copy_out(k.wg, k.tile.after({ready}), zero, k.dst, zero, {})}).end(k.wg.hardware_ranges())});
    const std::string what = error_of(kernel);
    INFO(what);
    CHECK(what.find("its pairing is unknown") != std::string::npos);
  }
}

TEST_CASE("check_async_reads: a read without a wait, without a barrier, or after too large a wait is an error naming the stage and the read") {
  const auto names_stage_and_read = [](const std::string& what) {
    INFO(what);
    CHECK(what.find("pass check_async_reads") != std::string::npos);
    CHECK(what.find("the read at step ") != std::string::npos);
    CHECK(what.find("(LOAD bfloat16 of LOCAL.0 elements [") != std::string::npos);
  };
  const auto error_of = [](const UOp& kernel, int64_t wave_size = 64) -> std::string {
    try {
      lower::lower(lower::canonical_allocations(kernel), waves_of(wave_size));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  SUBCASE("no wait") {
    const std::string what = error_of(one_shot(OneShot::NoWait));
    names_stage_and_read(what);
    CHECK(what.find("reads stage 0 of shared buffer LOCAL.0 (elements [0, 2048)), filled asynchronously at step ") != std::string::npos);
    CHECK(what.find("with no wait after the fill that covers it") != std::string::npos);
  }
  SUBCASE("no barrier") {
    const std::string what = error_of(one_shot(OneShot::NoBarrier));
    names_stage_and_read(what);
    CHECK(what.find("reads stage 0 of shared buffer LOCAL.0 (elements [0, 2048))") != std::string::npos);
    CHECK(what.find("without a barrier after the wait at step ") != std::string::npos);
  }
  SUBCASE("a wait that leaves the fill in flight") {
    const std::string what = error_of(one_shot(OneShot::WaitTooLarge));
    names_stage_and_read(what);
    CHECK(what.find("leaves up to 1 in flight, but 0 fill(s) were issued after it") != std::string::npos);
  }
  SUBCASE("NVIDIA: a fenced barrier drains the copies of a kernel that commits no groups, and nothing in one that does") {
    const auto fenced_read = [](bool commit) {
      const CopyKernel k = copy_kernel("sm_90", 1, 32);
      const UOp zero = constant(Wide(0));
      const UOp filled = load(k.wg, k.tile, zero, k.src, zero, zero);
      const UOp ready = barrier({commit ? group({filled, async_commit({filled})}) : filled});  // fenced, no wait
      return sink({"fenced_read"}, {copy_out(k.wg, k.tile.after({ready}), zero, k.dst, zero, {}).end(k.wg.hardware_ranges())});
    };
    CHECK(error_of(fenced_read(false), 32) == "no error");
    const std::string what = error_of(fenced_read(true), 32);
    names_stage_and_read(what);
    CHECK(what.find("with no wait after the fill that covers it") != std::string::npos);
  }
  SUBCASE("a loop whose wait leaves the stage it reads in flight") {
    // vm = 2: the prologue's fill of stage 0 has only the prefetch (1 instruction) after it.
    const std::string what = error_of(hand_pipeline(2, false));
    names_stage_and_read(what);
    CHECK(what.find("in iteration r") != std::string::npos);
    CHECK(what.find("reads stage 0 of shared buffer LOCAL.0 (elements [0, 2048))") != std::string::npos);
    CHECK(what.find("leaves up to 2 in flight, but 1 fill(s) were issued after it") != std::string::npos);
  }
  SUBCASE("a loop that prefetches into the stage it reads") {
    const std::string what = error_of(hand_pipeline(1, true));
    names_stage_and_read(what);
    CHECK(what.find("leaves up to 1 in flight, but 0 fill(s) were issued after it") != std::string::npos);
  }
  SUBCASE("NVIDIA: a cp.async group never committed is never waited for") {
    const std::string what = error_of(cuda_one_shot(false), 32);
    names_stage_and_read(what);
    CHECK(what.find("its cp.async group is never committed") != std::string::npos);
  }
}
