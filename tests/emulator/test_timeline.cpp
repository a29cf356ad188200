// The timeline model (timeline.h) on kernels LLVM 22 compiled, with the instruction mix fixed by
// inline assembly: the matrix core's occupancy per MFMA shape, SIMDs running in parallel and
// waves sharing one, s_waitcnt on vector memory, LDS and scalar memory, s_barrier, s_setprio; and
// the trace, picture and table it writes. The expectations are computed from cu_model's
// constants, so the tests pin the model's rules, not its numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "kernel_io.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/kernel_args.h"
#include "weft/emulator/mfma.h"
#include "weft/emulator/timeline.h"

using namespace weft::emu;

namespace {

// Inline-assembly lines joined into one IR string constant.
std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : "\\0A") + l;
  return s;
}

// `count` MFMAs of `mnemonic` (4 accumulator registers) with independent accumulators, A and B
// in `operand` (v[0:3] and v[4:7] by default), `modifiers` after them.
std::string mfmas(const std::string& mnemonic, int count, const std::string& operand = "", const std::string& modifiers = "") {
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    const std::string acc = "v[" + std::to_string(8 + 4 * i) + ":" + std::to_string(11 + 4 * i) + "]";
    const std::string a = operand.empty() ? "v[0:3]" : operand, b = operand.empty() ? "v[4:7]" : operand;
    lines.push_back(mnemonic + " " + acc + ", " + a + ", " + b + ", " + acc + modifiers);
  }
  return joined(lines);
}

std::string valu(int count) {
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) lines.push_back("v_add_f32 v" + std::to_string(i % 32) + ", v" + std::to_string(i % 32) + ", v40");
  return joined(lines);
}

std::string clobbers() {
  std::string c;
  for (int i = 0; i < 64; ++i) c += (i ? ",~{v" : "~{v") + std::to_string(i) + "}";
  return c;
}

// A kernel whose waves run `body` (inline assembly); wave `special` runs `prologue` first.
std::string asm_kernel(const std::string& name, const std::string& body, const std::string& prologue = "", int special = 0) {
  std::string ir = "define amdgpu_kernel void @" + name + "(ptr addrspace(1) %out) {\n";
  ir += "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n";
  if (!prologue.empty()) {
    ir += "  %w = lshr i32 %t, 6\n  %special = icmp eq i32 %w, " + std::to_string(special) +
          "\n  br i1 %special, label %pro, label %body\npro:\n";
    ir += "  call void asm sideeffect \"" + prologue + "\", \"" + clobbers() + "\"()\n  br label %body\nbody:\n";
  }
  ir += "  call void asm sideeffect \"" + body + "\", \"" + clobbers() + "\"()\n";
  ir += "  ret void\n}\n";
  return ir;
}

constexpr int kMfmaCount = 12;  // accumulators v[8:11] .. v[52:55]

const CodeObject& kernels() {
  static const CodeObject code = [] {
    std::string ir = "target triple = \"amdgcn-amd-amdhsa\"\ndeclare i32 @llvm.amdgcn.workitem.id.x()\n";
    ir += asm_kernel("mfmas", mfmas("v_mfma_f32_16x16x32_bf16", kMfmaCount));
    ir += asm_kernel("mfmas_fp8", mfmas("v_mfma_f32_16x16x128_f8f6f4", kMfmaCount, "v[0:7]"));
    ir += asm_kernel("mfmas_fp4", mfmas("v_mfma_f32_16x16x128_f8f6f4", kMfmaCount, "v[0:3]", " cbsz:4 blgp:4"));
    ir += asm_kernel("valu", valu(64));
    ir += asm_kernel("valu_prio", valu(64), "s_setprio 3", 4);
    ir += asm_kernel("late_barrier", "s_barrier", valu(32), 0);
    // A global load and an LDS round trip, each waited for.
    ir += R"IR(
@shared = internal addrspace(3) global [64 x i32] poison, align 16
define amdgpu_kernel void @memory(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %t
  %v = load i32, ptr addrspace(1) %p
  %s = getelementptr i32, ptr addrspace(3) @shared, i32 %t
  store volatile i32 %v, ptr addrspace(3) %s
  %r = load volatile i32, ptr addrspace(3) %s
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %r, ptr addrspace(1) %q
  ret void
}
)IR";
    return CodeObject::load(weft::testing::compile_ll(ir, "gfx950"));
  }();
  return code;
}

// Runs `kernel` with `waves` waves in one workgroup and models the workgroup's timeline.
struct Modelled {
  WorkgroupRecording recording;
  Timeline timeline;
};
Modelled model(const std::string& kernel, uint32_t waves) {
  GlobalMemory mem;
  const uint64_t in = mem.allocate(4 * 64 * waves, "in"), out = mem.allocate(4 * 64 * waves, "out");
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {64 * waves, 1, 1};
  const Kernel& k = kernels().kernel(kernel);
  std::vector<ArgValue> args{ArgValue::pointer(out)};
  if (kernel == "memory") args.insert(args.begin(), ArgValue::pointer(in));  // the one kernel with an input
  o.kernarg = pack_kernel_args(k, args);
  o.record_workgroup = 0;
  RunReport r = run_kernel(kernels(), kernel, mem, o);
  REQUIRE(r.recording);
  Modelled m{std::move(*r.recording), {}};
  m.timeline = model_timeline(m.recording, cu_model(Arch::Gfx950));
  return m;
}

uint64_t mfma_cycles(const char* mnemonic) {
  const CuModel c = cu_model(Arch::Gfx950);
  return static_cast<uint64_t>(find_mfma(mnemonic, Arch::Gfx950)->passes * c.cycles_per_pass);
}

}  // namespace

TEST_CASE("timeline: one wave's MFMAs keep its SIMD's matrix core busy back to back") {
  if (!weft::testing::have_llvm_tools()) return;
  const Modelled m = model("mfmas", 1);
  const uint64_t each = mfma_cycles("v_mfma_f32_16x16x32_bf16");
  REQUIRE(m.timeline.simds[0].mfma.size() == kMfmaCount);
  CHECK(m.timeline.simds[0].mfma_busy == kMfmaCount * each);
  for (size_t i = 1; i < m.timeline.simds[0].mfma.size(); ++i)  // each starts when the one before ends
    CHECK(m.timeline.simds[0].mfma[i].start == m.timeline.simds[0].mfma[i - 1].end);
  CHECK(m.timeline.waves[0].stalled[static_cast<size_t>(Stall::MatrixCore)] > 0);
  CHECK(m.timeline.simds[1].mfma_busy == 0);
}

TEST_CASE("timeline: gfx950's f8f6f4 MFMAs take twice the passes with fp8 operands as with fp4") {
  if (!weft::testing::have_llvm_tools()) return;
  const CuModel c = cu_model(Arch::Gfx950);
  const Modelled fp8 = model("mfmas_fp8", 1), fp4 = model("mfmas_fp4", 1);
  const uint32_t first_mfma = fp8.timeline.simds[0].mfma.at(0).index;
  CHECK(mfma_passes(fp8.recording.instructions[first_mfma], Arch::Gfx950) == 8);
  CHECK(fp8.timeline.simds[0].mfma_busy == kMfmaCount * 8 * static_cast<uint64_t>(c.cycles_per_pass));
  CHECK(fp4.timeline.simds[0].mfma_busy == kMfmaCount * 4 * static_cast<uint64_t>(c.cycles_per_pass));
}

TEST_CASE("timeline: waves on four SIMDs run their MFMAs in parallel, and a fifth wave shares SIMD 0") {
  if (!weft::testing::have_llvm_tools()) return;
  const uint64_t each = mfma_cycles("v_mfma_f32_16x16x32_bf16");
  const Modelled one = model("mfmas", 1), four = model("mfmas", 4), five = model("mfmas", 5);
  for (int s = 0; s < 4; ++s) CHECK(four.timeline.simds[static_cast<size_t>(s)].mfma_busy == kMfmaCount * each);
  // Four SIMDs: the same time as one wave, give or take the turns of the SIMDs' first issues.
  CHECK(four.timeline.cycles <= one.timeline.cycles + 4);
  // Two waves on SIMD 0: its matrix core does twice the work, one MFMA after another.
  CHECK(five.timeline.simds[0].mfma_busy == 2 * kMfmaCount * each);
  CHECK(five.timeline.simds[0].waves == std::vector<int>{0, 4});
  CHECK(five.timeline.cycles >= 2 * kMfmaCount * each);
}

TEST_CASE("timeline: s_waitcnt waits for global memory, LDS and scalar memory by the model's latencies") {
  if (!weft::testing::have_llvm_tools()) return;
  const CuModel c = cu_model(Arch::Gfx950);
  const Modelled m = model("memory", 1);
  const WaveTimeline& w = m.timeline.waves[0];
  // The kernel arguments' scalar load, the global load, the LDS write then read, the store: each
  // waited for once, so each latency shows up whole (less the turns issued meanwhile).
  CHECK(w.stalled[static_cast<size_t>(Stall::Vmcnt)] >= static_cast<uint64_t>(c.global_latency) - 16);
  const uint64_t lds = static_cast<uint64_t>(c.lds_latency_for(4));  // ds_write_b32, ds_read_b32
  CHECK(w.stalled[static_cast<size_t>(Stall::Lgkmcnt)] >= lds + static_cast<uint64_t>(c.scalar_latency) - 48);
  CHECK(m.timeline.cycles >= static_cast<uint64_t>(c.global_latency + c.scalar_latency) + lds);
}

TEST_CASE("timeline: a barrier holds every wave until the last one arrives") {
  if (!weft::testing::have_llvm_tools()) return;
  const CuModel c = cu_model(Arch::Gfx950);
  const Modelled m = model("late_barrier", 2);  // wave 0 runs 32 VALU ops first
  const uint64_t waited = m.timeline.waves[1].stalled[static_cast<size_t>(Stall::Barrier)];
  CHECK(waited >= 32 * static_cast<uint64_t>(c.turn_cycles) - 8);
  CHECK(m.timeline.waves[0].stalled[static_cast<size_t>(Stall::Barrier)] <= static_cast<uint64_t>(c.barrier_latency) + 4);
}

TEST_CASE("timeline: s_setprio lets a younger wave take its SIMD's VALU ahead of an older one") {
  if (!weft::testing::have_llvm_tools()) return;
  const Modelled plain = model("valu", 5), prio = model("valu_prio", 5);  // waves 0 and 4 share SIMD 0
  CHECK(plain.timeline.waves[0].ended < plain.timeline.waves[4].ended);  // the oldest first
  CHECK(prio.timeline.waves[4].ended < prio.timeline.waves[0].ended);
  CHECK(prio.timeline.waves[0].stalled[static_cast<size_t>(Stall::Issue)] + prio.timeline.waves[0].stalled[static_cast<size_t>(Stall::ValuBusy)] >
        60 * 4);
}

TEST_CASE("timeline: the trace has a slice per instruction, stall and MFMA, and names its tracks") {
  if (!weft::testing::have_llvm_tools()) return;
  const Modelled m = model("mfmas", 5);
  std::ostringstream trace, svg, stats;
  write_chrome_trace(m.timeline, m.recording, trace);
  write_timeline_svg(m.timeline, m.recording, svg);
  write_timeline_stats(m.timeline, m.recording, stats);
  size_t slices = 0;
  for (const WaveTimeline& w : m.timeline.waves) slices += w.issued.size() + w.stalls.size();
  for (const SimdTimeline& s : m.timeline.simds) slices += s.mfma.size();
  const std::string t = trace.str();
  size_t found = 0;
  for (size_t p = 0; (p = t.find("\"ph\":\"X\"", p)) != std::string::npos; ++p) ++found;
  CHECK(found == slices);
  for (const char* name : {"wave 0 (SIMD 0)", "wave 4 (SIMD 0)", "SIMD 3 matrix core", "v_mfma_f32_16x16x32_bf16 v[8:11], v[0:3], v[4:7], v[8:11]"})
    CHECK(t.find(name) != std::string::npos);
  CHECK(svg.str().starts_with("<svg"));
  CHECK(svg.str().find("wave 4 (SIMD 0)") != std::string::npos);
  CHECK(svg.str().ends_with("</svg>\n"));
  CHECK(stats.str().find("MFMA busy") != std::string::npos);
  // Waves 0 and 4 share SIMD 0's matrix core: the costliest stall is an MFMA waiting for it.
  const std::string table = stats.str();
  const size_t costliest = table.find("most stalled instructions");
  REQUIRE(costliest != std::string::npos);
  const std::string first = table.substr(costliest, table.find('\n', table.find('\n', costliest) + 1) - costliest);
  CHECK(first.find("matrix core") != std::string::npos);
  CHECK(first.find("v_mfma_f32_16x16x32_bf16") != std::string::npos);
}

TEST_CASE("timeline: a recording the model cannot time is an error, not a guess") {
  WorkgroupRecording empty;
  empty.arch = Arch::Gfx950;
  CHECK(weft::testing::error_of([&] { model_timeline(empty, cu_model(Arch::Gfx950)); }).find("at least one wave") != std::string::npos);
  WorkgroupRecording cut;  // one VALU op and no s_endpgm
  cut.arch = Arch::Gfx950;
  const uint8_t v_nop[4] = {0x00, 0x00, 0x00, 0x7e};
  cut.instructions.push_back(*decode(v_nop, Arch::Gfx950));
  cut.offsets.push_back(0);
  cut.waves.push_back({{0, 64}});
  CHECK(weft::testing::error_of([&] { model_timeline(cut, cu_model(Arch::Gfx950)); }).find("without s_endpgm") != std::string::npos);
}
