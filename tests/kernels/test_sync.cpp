// Synchronization as typed effects (docs/ir.md 4.3.1): wait_counts, async_commit, unfenced
// barriers, scheduling hints and barriers under a wave-uniform when(). Each reaches the code:
// the gfx950 and gfx942 listings hold the instruction with its operands, LLVM's IR holds the
// scheduling intrinsics, the CUDA source holds its counterpart; the ping-pong kernel proves on
// the emulators that staggered barriers pair as the schedule says.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "kernel_harness.h"
#include "listing_text.h"
#include "weft/dsl/builder.h"
#include "weft/dsl/verify.h"
#include "weft/emulator/hazards.h"
#include "weft/emulator/listing.h"
#include "weft/lowering/amdgpu_codegen.h"
#include "weft/lowering/cuda_codegen.h"
#include "weft/lowering/passes.h"
#include "weft/lowering/pipeline.h"

using namespace weft;
using weft::testing::get;
using weft::testing::put;
using weft::testing::has_line;
using weft::testing::listing_of;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t count_in(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// out[l] = in[l] * 2 + in[l + 128] read through LDS, with every kind of synchronization
// statement between the steps: two waves of 64 lanes (LLVM drops barriers in one-wave
// workgroups). The waits are apart from each other and from the waits LLVM inserts, which it
// would merge them with.
UOp sync_statements_kernel() {
  UOp in = placeholder({256}, dtypes::float32, 1), out = placeholder({128}, dtypes::float32, 0);
  UOp lds = alloc_shared({128}, dtypes::float32);
  UOp l = range(128, 0, AxisType::LOCAL);
  UOp st = lds[l].store(in[l + 128].load());
  return sink({"sync_statements"},
              {group({wait_counts({.vm = 0}), st, wait_counts({.vm = 3, .lgkm = 2}), async_commit(), barrier({}, BarrierFence::None),
                      sched_barrier(SchedMask::VALU | SchedMask::DSRead), sched_group_barrier(SchedMask::MFMA, 1, 0),
                      sched_group_barrier(SchedMask::DSRead, 2, 0), wave_priority(1), barrier(),
                      out[l].store(in[l].load() * 2.0 + lds[l].load()), wait_counts({.lgkm = 0}), wave_priority(0)})
                   .end({l})});
}

// HipKittens' ping-pong stagger over two waves (64 lanes, a WARP range of 2): wave 1 passes one
// barrier before the loop, wave 0 one after it, so wave 0's i-th loop barrier pairs with wave 1's
// (i-1)-th. In iteration i each wave writes its slot i of an LDS table and then reads the newest
// slot of the other wave that the pairing makes safe: wave 1 reads wave 0's slot min(i + 1, n - 1)
// (written before wave 0's barrier i + 1), wave 0 reads wave 1's slot i - 1 and, after the loop,
// slot n - 1. Without the stagger wave 1 would read slots wave 0 has not written yet.
constexpr int64_t kSteps = 5;

UOp ping_pong_kernel(bool staggered) {
  UOp in = placeholder({kSteps, 2, 64}, dtypes::float32, 1), out = placeholder({2, kSteps, 64}, dtypes::float32, 0);
  UOp lds = alloc_shared({kSteps, 2, 64}, dtypes::float32);
  UOp l = range(64, 0, AxisType::LOCAL), w = range(2, 1, AxisType::WARP), i = range(kSteps, 2, AxisType::LOOP);
  UOp zero = constant(Wide(0)), one = constant(Wide(1)), last = constant(Wide(kSteps - 1));
  UOp step = group({lds[{i, w, l}].store(in[{i, w, l}].load()), barrier(),
                    when(w.eq(0) & (i >= 1), {out[{zero, i - 1, l}].store(lds[{i - 1, one, l}].load())}),
                    when(w.eq(1), {out[{one, i, l}].store(lds[{min(i + 1, last), zero, l}].load())})})
                 .end({i});
  std::vector<UOp> effects;
  if (staggered) effects.push_back(when(w.eq(1), {barrier()}));
  effects.push_back(step);
  if (staggered) effects.push_back(when(w.eq(0), {barrier()}));
  effects.push_back(when(w.eq(0), {out[{zero, last, l}].store(lds[{last, one, l}].load())}));
  return sink({staggered ? "ping_pong" : "no_stagger"}, {group(effects).end({l, w})});
}

// What ping_pong_kernel's schedule computes, [wave][step][lane].
std::vector<float> ping_pong_reference(const std::vector<float>& in) {
  auto at = [&](int64_t s, int64_t w, int64_t l) { return in[static_cast<size_t>((s * 2 + w) * 64 + l)]; };
  std::vector<float> out(static_cast<size_t>(2 * kSteps * 64));
  for (int64_t s = 0; s < kSteps; ++s)
    for (int64_t l = 0; l < 64; ++l) {
      out[static_cast<size_t>(s * 64 + l)] = at(s, 1, l);
      out[static_cast<size_t>((kSteps + s) * 64 + l)] = at(std::min(s + 1, kSteps - 1), 0, l);
    }
  return out;
}

}  // namespace

WEFT_DEVICE_TEST_CASE("waits, unfenced barriers, scheduling hints and priorities keep the kernel's result") {
  UOp k = sync_statements_kernel();
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, k);
    auto x = weft::testing::random_floats(256);
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, 128);
    for (size_t q = 0; q < 128; ++q) {
      CAPTURE(q);
      REQUIRE(y[q] == x[q] * 2.0f + x[q + 128]);
    }
  }
}

TEST_CASE("wait_counts and the unfenced barrier are s_waitcnt and a bare s_barrier on gfx950 and gfx942") {
  if (weft::testing::emulators().empty()) WEFT_SKIP("built without LLVM: no AMDGPU code generator");
  UOp k = sync_statements_kernel();
  for (const char* mcpu : {"gfx950", "gfx942"}) {
    CAPTURE(mcpu);
    auto dev = rt::open_device(std::string("emu:") + mcpu);
    const std::string listing = listing_of(rt::CompiledKernel::compile(*dev, k));
    INFO(listing);
    CHECK(has_line(listing, {"s_waitcnt vmcnt(3) lgkmcnt(2)"}));
    CHECK(has_line(listing, {"s_waitcnt vmcnt(0)"}));
    CHECK(has_line(listing, {"s_waitcnt lgkmcnt(0)"}));
    CHECK(has_line(listing, {"s_setprio 1"}));
    CHECK(count_in(listing, "s_barrier") == 2);

    // LLVM's IR: the scheduling hints with their masks, and one barrier without fences.
    std::string ir;
    amdgpu::compile_kernel(lower::lower(k), mcpu, &ir);
    INFO(ir);
    CHECK(has_line(ir, {"call void @llvm.amdgcn.sched.barrier(i32 258)"}));  // VALU | DSRead
    CHECK(has_line(ir, {"call void @llvm.amdgcn.sched.group.barrier(i32 8, i32 1, i32 0)"}));
    CHECK(has_line(ir, {"call void @llvm.amdgcn.sched.group.barrier(i32 256, i32 2, i32 0)"}));
    CHECK(has_line(ir, {"call void @llvm.amdgcn.s.waitcnt(i32 3952)"}));  // vmcnt(0): 0x0F70
    CHECK(count_in(ir, "call void @llvm.amdgcn.s.barrier()") == 2);
    CHECK(count_in(ir, "fence syncscope(\"workgroup\")") == 2);  // the fenced barrier's two fences only
  }
}

TEST_CASE("a wait above a counter's maximum is an error naming the node on AMD") {
  if (weft::testing::emulators().empty()) WEFT_SKIP("built without LLVM: no AMDGPU code generator");
  UOp out = placeholder({64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL);
  auto kernel = [&](WaitCounts c) {
    return sink({"too_many"}, {group({wait_counts(c), out[l].store(constant(1.0, dtypes::float32))}).end({l})});
  };
  for (const char* mcpu : {"gfx950", "gfx942"}) {
    CAPTURE(mcpu);
    CHECK_THROWS_WITH_AS(amdgpu::compile_kernel(lower::lower(kernel({.vm = 64})), mcpu), doctest::Contains("above vmcnt's maximum of 63"), Error);
    CHECK_THROWS_WITH_AS(amdgpu::compile_kernel(lower::lower(kernel({.vm = 64})), mcpu), doctest::Contains("WAIT"), Error);
    CHECK_THROWS_WITH_AS(amdgpu::compile_kernel(lower::lower(kernel({.lgkm = 16})), mcpu),
                         doctest::Contains("above lgkmcnt's maximum of 15"), Error);
    CHECK_NOTHROW(amdgpu::compile_kernel(lower::lower(kernel({.vm = 63, .lgkm = 15})), mcpu));
  }
}

TEST_CASE("CUDA: wait_counts is cp.async.wait_group, async_commit commits, lgkm and scheduling hints are comments") {
  lower::LowerOptions options;
  options.wave_size = 32;
  const auto lowered = lower::lower(sync_statements_kernel(), options);
  const std::string src = cuda::render_cuda(lowered, 90);
  INFO(src);
  CHECK(has_line(src, {"cp.async.wait_group 3;"}));
  CHECK(has_line(src, {"cp.async.wait_group 0;"}));
  CHECK(has_line(src, {"cp.async.commit_group;"}));
  CHECK(has_line(src, {"// wait lgkm=2: no NVIDIA counterpart"}));
  CHECK(has_line(src, {"// SCHED_GROUP_BARRIER", "mask=0x8", "size=1"}));
  CHECK(count_in(src, "__syncthreads();") == 2);
  const std::string ping = cuda::render_cuda(lower::lower(ping_pong_kernel(true), options), 90);
  INFO(ping);
  // Staggered: warps meet at different barrier instructions, so every barrier is the unaligned
  // barrier.sync (compute-sanitizer's synccheck reports __syncthreads() there as divergent); two
  // of the three are inside an if.
  CHECK(count_in(ping, "__syncthreads();") == 0);
  CHECK(count_in(ping, "asm volatile(\"barrier.sync 0;\"") == 3);
  CHECK(count_in(ping, ") {\n    asm volatile(\"barrier.sync 0;\"") + count_in(ping, ") {\n      asm volatile(\"barrier.sync 0;\"") == 2);
}

TEST_CASE("builder and verifier: counts, masks and sites of the synchronization statements") {
  CHECK_THROWS_WITH_AS(wait_counts({}), doctest::Contains("waits on no counter"), Error);
  CHECK_THROWS_WITH_AS(wait_counts({.vm = -1}), doctest::Contains("vm count -1 is negative"), Error);
  CHECK_THROWS_WITH_AS(sched_group_barrier(SchedMask::MFMA, 0, 0), doctest::Contains("a group of 0 instructions"), Error);
  CHECK_THROWS_WITH_AS(sched_barrier(static_cast<SchedMask>(0x800)), doctest::Contains("unknown bits"), Error);
  // Two identical calls are two statements.
  CHECK_FALSE(wait_counts({.vm = 1}).same(wait_counts({.vm = 1})));
  CHECK_FALSE(async_commit().same(async_commit()));
  CHECK_FALSE(sched_barrier(SchedMask::None).same(sched_barrier(SchedMask::None)));
  UOp out = placeholder({4}, dtypes::float32, 0);
  UOp st = out[constant(Wide(0))].store(constant(1.0, dtypes::float32));
  for (const UOp& bare : {UOp::make(Op::WAIT, dtypes::void_, {}, WaitArg{0, 1, -1}), UOp::make(Op::ASYNC_COMMIT, dtypes::void_, {}, EffectArg{}),
                          UOp::make(Op::SCHED_BARRIER, dtypes::void_, {}, SchedArg{}),
                          UOp::make(Op::SCHED_GROUP_BARRIER, dtypes::void_, {}, SchedArg{0, SchedMask::DS, 1, 0})}) {
    CAPTURE(op_name(bare.op()));
    CHECK_THROWS_WITH_AS(verify(sink({"bare"}, {st, bare})), doctest::Contains("has no site id"), Error);
  }
  CHECK_THROWS_WITH_AS(verify(sink({"no_counter"}, {st, UOp::make(Op::WAIT, dtypes::void_, {}, WaitArg{7, -1, -1})})),
                       doctest::Contains("at least one"), Error);
  CHECK_THROWS_WITH_AS(verify(sink({"bad_fence"}, {st, UOp::make(Op::BARRIER, dtypes::void_, {}, EffectArg{7, 2, {}})})),
                       doctest::Contains("a fence"), Error);
  CHECK_THROWS_WITH_AS(verify(sink({"grouped"}, {st, UOp::make(Op::SCHED_BARRIER, dtypes::void_, {}, SchedArg{7, SchedMask::DS, 2, 0})})),
                       doctest::Contains("an instruction mask"), Error);
  // Canonical form renumbers every kind of site, so the same kernel built twice is one kernel.
  CHECK(lower::canonical_allocations(sync_statements_kernel()).same(lower::canonical_allocations(sync_statements_kernel())));
}

TEST_CASE("when(): a barrier needs a wave-uniform condition") {
  UOp out = placeholder({2, 64}, dtypes::float32, 0);
  UOp l = range(64, 0, AxisType::LOCAL), w = range(2, 1, AxisType::WARP);
  UOp st = out[{w, l}].store(constant(1.0, dtypes::float32));
  UOp lane_dependent = sink({"by_lane"}, {group({st, when(l < 32, {barrier()})}).end({l, w})});
  CHECK_THROWS_WITH_AS(lower::lower(lane_dependent), doctest::Contains("not every thread would reach it"), Error);
  CHECK_THROWS_WITH_AS(lower::lower(lane_dependent), doctest::Contains("range 0 (LOCAL)"), Error);
  UOp in = placeholder({64}, dtypes::float32, 1);
  UOp memory_dependent = sink({"by_memory"}, {group({st, when(in[l].load() < 0.0, {wait_counts({.vm = 0})})}).end({l, w})});
  CHECK_THROWS_WITH_AS(lower::lower(memory_dependent), doctest::Contains("WAIT inside when"), Error);
  // A load differs between lanes where its address does.
  CHECK_THROWS_WITH_AS(lower::lower(memory_dependent), doctest::Contains("it depends on range 0 (LOCAL)"), Error);
  // An atomic's result is each lane's own.
  UOp counter = placeholder({1}, dtypes::int32, 1);
  UOp by_atomic = sink({"by_atomic"}, {group({st, when(atomic(AtomicOp::Add, counter[constant(Wide(0))], constant(Wide(1), dtypes::int32)) < 3,
                                                        {wait_counts({.vm = 0})})}).end({l, w})});
  CHECK_THROWS_WITH_AS(lower::lower(by_atomic), doctest::Contains("it depends on memory"), Error);
  // A thread's registers differ between lanes, whatever the index.
  UOp reg = placeholder({1}, dtypes::float32, fresh_id(), AddrSpace::REG);
  UOp by_register = sink({"by_register"}, {group({st, when(reg[constant(Wide(0))].load() < 0.0, {wait_counts({.vm = 0})})}).end({l, w})});
  CHECK_THROWS_WITH_AS(lower::lower(by_register), doctest::Contains("it depends on registers"), Error);
  // A value ordered after effects is still the value: the lane range under the AFTER counts.
  UOp by_after = sink({"by_after"}, {group({st, when(l.after({st}) < 32, {wait_counts({.vm = 0})})}).end({l, w})});
  CHECK_THROWS_WITH_AS(lower::lower(by_after), doctest::Contains("range 0 (LOCAL)"), Error);
  // A load at a wave-uniform address (a WARP range) is the same in every lane: a branch.
  UOp by_uniform_load = sink({"by_uniform_load"}, {group({st, when(in[w].load() < 0.0, {wait_counts({.vm = 0})})}).end({l, w})});
  bool branched = false;
  for (const auto& s : lower::lower(by_uniform_load).program) branched |= s.op.op() == Op::WHEN;
  CHECK(branched);
  // Uniform: WARP ranges, a kernel variable; nested regions and-ed; stores in the region stay masked.
  UOp n = variable("n", 0, 8);
  UOp nested = sink({"nested"}, {when(w.eq(1), {when(n > 2, {st, barrier({}, BarrierFence::None), wave_priority(2)})}).end({l, w})});
  auto lowered = lower::lower(nested);
  size_t branches = 0;
  for (const auto& s : lowered.program)
    if (s.op.op() == Op::WHEN) {
      ++branches;
      CHECK(opsets::sync.contains(s.op.src(1).op()));
    }
  CHECK(branches == 2);
  // A barrier after a store of the region follows the guarded store: no store runs unguarded.
  UOp ordered = sink({"ordered"}, {when(w.eq(1), {st, barrier({st})}).end({l, w})});
  size_t stores = 0;
  for (const auto& s : lower::lower(ordered).program)
    if (s.op.op() == Op::STORE) {
      ++stores;
      CHECK(s.op.src(0).src().size() == 3);  // the INDEX carries the condition as its validity
    }
  CHECK(stores == 1);
}

WEFT_DEVICE_TEST_CASE("ping-pong: wave-group barriers before and after the loop pair the waves' loop barriers one apart") {
  for (const std::string& target : weft::testing::devices()) {
    CAPTURE(target);
    auto dev = rt::open_device(target);
    auto compiled = rt::CompiledKernel::compile(*dev, ping_pong_kernel(true));
    if (target.starts_with("emu:")) {
      // The conditional s_barriers (the first and the last) are jumped over by a scalar branch on
      // SCC or VCC, never EXEC-masked (s_barrier would run anyway); LLVM may unroll the loop.
      const std::string listing = listing_of(compiled);
      INFO(listing);
      const auto lines = lines_of(listing);
      std::vector<size_t> barriers;
      for (size_t q = 0; q < lines.size(); ++q)
        if (lines[q].find("s_barrier") != std::string::npos) barriers.push_back(q);
      CHECK((barriers.size() == 3 || barriers.size() == static_cast<size_t>(kSteps) + 2));
      auto branched = [&](size_t q) {
        for (size_t back = 1; back <= 3 && back <= q; ++back)
          if (lines[q - back].find("s_cbranch_scc") != std::string::npos || lines[q - back].find("s_cbranch_vcc") != std::string::npos)
            return true;
        return false;
      };
      REQUIRE(barriers.size() >= 2);
      CHECK(branched(barriers.front()));
      CHECK(branched(barriers.back()));
      CHECK(listing.find("s_cbranch_execz") == std::string::npos);
    }
    auto x = weft::testing::random_floats(static_cast<size_t>(kSteps * 2 * 64));
    auto y = weft::testing::run_float_kernel(*dev, compiled, x, static_cast<size_t>(2 * kSteps * 64));
    const auto want = ping_pong_reference(x);
    for (size_t q = 0; q < want.size(); ++q) {
      CAPTURE(q);
      REQUIRE(y[q] == want[q]);
    }
    if (target.starts_with("emu:")) {
      // The same kernel without the stagger reads slots not yet written: the check above can
      // fail, and the emulator's hazard mode says why.
      rt::EmulatorOptions options = rt::EmulatorOptions::from_environment();
      options.sanitize = false;
      auto plain_dev = rt::open_device(target, options);
      auto plain = rt::CompiledKernel::compile(*plain_dev, ping_pong_kernel(false));
      auto z = weft::testing::run_float_kernel(*plain_dev, plain, x, static_cast<size_t>(2 * kSteps * 64));
      CHECK_FALSE(std::equal(z.begin(), z.end(), want.begin()));
      options.sanitize = true;
      auto checked_dev = rt::open_device(target, options);
      auto checked = rt::CompiledKernel::compile(*checked_dev, ping_pong_kernel(false));
      try {
        weft::testing::run_float_kernel(*checked_dev, checked, x, static_cast<size_t>(2 * kSteps * 64));
        FAIL("hazard mode ran the unstaggered ping-pong without a report");
      } catch (const emu::HazardError& e) {
        INFO(e.what());
        CHECK(std::any_of(e.hazards().begin(), e.hazards().end(), [](const emu::Hazard& h) {
          return (h.kind == emu::HazardKind::UninitializedRead || h.kind == emu::HazardKind::LdsRace) && h.instruction.starts_with("ds_read") &&
                 h.wave == 1;
        }));
      }
    }
  }
}

size_t loop_barriers(const UOp& kernel) {
  size_t inside = 0, depth = 0;
  for (const auto& s : lower::lower(kernel).program) {
    if (s.kind == lower::LinearOp::Kind::LoopBegin) ++depth;
    if (s.kind == lower::LinearOp::Kind::LoopEnd) --depth;
    if (depth > 0 && s.kind == lower::LinearOp::Kind::Effect && s.op.op() == Op::BARRIER) ++inside;
  }
  return inside;
}

TEST_CASE("insert_barriers: no implicit write-after-read barrier in a staggered kernel's loop that holds its own barrier") {
  // The loop body stores to and loads from one LOCAL buffer: without conditional barriers the
  // pipeline ends it with a barrier of its own; with them the author's schedule stands.
  CHECK(loop_barriers(ping_pong_kernel(false)) == 2);
  CHECK(loop_barriers(ping_pong_kernel(true)) == 1);
}

TEST_CASE("insert_barriers: a loop of shared-memory atomics alone needs no barrier, one that also loads the buffer does") {
  // A histogram: every iteration adds to shared counters; the adds commute, so iterations need no
  // order. Reading a counter inside the loop makes the next iteration's adds a hazard for it.
  auto histogram = [](bool read_inside) {
    const UOp out = placeholder({64}, dtypes::int32, 0), in = placeholder({1024}, dtypes::int32, 1);
    const UOp l = range(64, 0, AxisType::LOCAL), i = range(16, 1, AxisType::LOOP);
    const UOp count = alloc_shared({64}, dtypes::int32, 0);
    const UOp zero = count[l].store(constant(Wide(0), dtypes::int32));
    const UOp v = in[i * 64 + l].load() & 63;
    std::vector<UOp> body{atomic(AtomicOp::Add, count.after({zero})[v.cast(dtypes::index)], constant(Wide(1), dtypes::int32), Scope::Workgroup)};
    if (read_inside) body.push_back(out[l].store(count.after({zero})[(l + i) % 64].load()));
    const UOp adds = group(body).end({i});
    const UOp result = out[l].store(count.after({adds})[l].load());
    return sink({read_inside ? "histogram_reads" : "histogram"}, {group({zero, adds, result}).end({l})});
  };
  CHECK(loop_barriers(histogram(false)) == 0);
  CHECK(loop_barriers(histogram(true)) == 1);
}
