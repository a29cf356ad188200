// Hazard mode (LaunchOptions::sanitize): for each kind of hazard a planted-bug kernel that it
// reports, with the instruction, the PCs, the wave and the lane, and the fixed kernel it runs
// clean (and right). The bugs are planted with inline assembly LLVM's waitcnt pass cannot see
// into, or with plain IR that needs a barrier it lacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "kernel_io.h"
#include "test_seed.h"
#include "toolchain.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/hazards.h"
#include "weft/emulator/kernel_args.h"

using namespace weft::emu;

namespace {

const char* kKernels = R"IR(target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8), ptr addrspace(3), i32, i32, i32, i32, i32)
@shared = internal addrspace(3) global [64 x i32] poison, align 16
@shared2 = internal addrspace(3) global [128 x i32] poison, align 16

; out[t] = in[t] + 1 with the load in inline assembly: LLVM's waitcnt pass does not see it, so
; @early adds before the load has landed; @waited waits.
define amdgpu_kernel void @early(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %t
  %v = call i32 asm sideeffect "global_load_dword $0, $1, off", "=v,v"(ptr addrspace(1) %p)
  %w = add i32 %v, 1
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %w, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @waited(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(1) %in, i32 %t
  %v = call i32 asm sideeffect "global_load_dword $0, $1, off\0As_waitcnt vmcnt(0)", "=v,v"(ptr addrspace(1) %p)
  %w = add i32 %v, 1
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %w, ptr addrspace(1) %q
  ret void
}

; out[t] = in[t] through LDS: a direct-to-LDS buffer load fills shared[t], an inline-assembly
; ds_read reads it back, before (@fill_early) or after (@fill_waited) s_waitcnt vmcnt(0).
define amdgpu_kernel void @fill_early(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 256, i32 159744)
  %o = mul i32 %t, 4
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) @shared, i32 4, i32 %o, i32 0, i32 0, i32 0)
  %a = getelementptr i32, ptr addrspace(3) @shared, i32 %t
  %ai = ptrtoint ptr addrspace(3) %a to i32
  %v = call i32 asm sideeffect "ds_read_b32 $0, $1\0As_waitcnt lgkmcnt(0)", "=v,v"(i32 %ai)
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @fill_waited(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %r = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %in, i16 0, i64 256, i32 159744)
  %o = mul i32 %t, 4
  call void @llvm.amdgcn.raw.ptr.buffer.load.lds(ptr addrspace(8) %r, ptr addrspace(3) @shared, i32 4, i32 %o, i32 0, i32 0, i32 0)
  %a = getelementptr i32, ptr addrspace(3) @shared, i32 %t
  %ai = ptrtoint ptr addrspace(3) %a to i32
  %v = call i32 asm sideeffect "s_waitcnt vmcnt(0)\0Ads_read_b32 $0, $1\0As_waitcnt lgkmcnt(0)", "=v,v"(i32 %ai)
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}

; out[t] = *in (a scalar load in inline assembly), used before (@scalar_early) or after
; (@scalar_waited) s_waitcnt lgkmcnt(0).
define amdgpu_kernel void @scalar_early(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "s_load_dword $0, $1, 0x0", "=s,s"(ptr addrspace(1) %in)
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @scalar_waited(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "s_load_dword $0, $1, 0x0\0As_waitcnt lgkmcnt(0)", "=s,s"(ptr addrspace(1) %in)
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}

; Two waves: wave 0 writes shared[lane] = t, wave 1 reads it into out[lane]. @race has no
; barrier; @unwaited_barrier passes an s_barrier (inline assembly, so LLVM adds no wait) while
; the LDS write may still be in flight; @synced has the fences and the barrier.
define amdgpu_kernel void @race(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = and i32 %t, 63
  %p = getelementptr i32, ptr addrspace(3) @shared, i32 %lane
  %first = icmp ult i32 %t, 64
  br i1 %first, label %write, label %read
write:
  store i32 %t, ptr addrspace(3) %p
  ret void
read:
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %lane
  store i32 %v, ptr addrspace(1) %q
  ret void
}
; Wave 0 writes shared2[lane]; wave 1 writes shared2[64 + lane] and reads it back, except lane
; 37, which reads shared2[37]: one lane of each wave races, on one dword.
define amdgpu_kernel void @one_lane_race(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = and i32 %t, 63
  %first = icmp ult i32 %t, 64
  br i1 %first, label %write, label %read
write:
  %p = getelementptr i32, ptr addrspace(3) @shared2, i32 %lane
  store i32 %t, ptr addrspace(3) %p
  ret void
read:
  %own = add i32 %lane, 64
  %mine = getelementptr i32, ptr addrspace(3) @shared2, i32 %own
  store volatile i32 %t, ptr addrspace(3) %mine
  %is37 = icmp eq i32 %lane, 37
  %index = select i1 %is37, i32 37, i32 %own
  %r = getelementptr i32, ptr addrspace(3) @shared2, i32 %index
  %v = load volatile i32, ptr addrspace(3) %r
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %lane
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @unwaited_barrier(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = and i32 %t, 63
  %p = getelementptr i32, ptr addrspace(3) @shared, i32 %lane
  %first = icmp ult i32 %t, 64
  br i1 %first, label %write, label %sync
write:
  store i32 %t, ptr addrspace(3) %p
  br label %sync
sync:
  call void asm sideeffect "s_barrier", ""()
  br i1 %first, label %done, label %read
read:
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %lane
  store i32 %v, ptr addrspace(1) %q
  br label %done
done:
  ret void
}
define amdgpu_kernel void @synced(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %lane = and i32 %t, 63
  %p = getelementptr i32, ptr addrspace(3) @shared, i32 %lane
  %first = icmp ult i32 %t, 64
  br i1 %first, label %write, label %sync
write:
  store i32 %t, ptr addrspace(3) %p
  br label %sync
sync:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %first, label %done, label %read
read:
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %lane
  store i32 %v, ptr addrspace(1) %q
  br label %done
done:
  ret void
}

; Reads of what nothing wrote: v40 (@uninit_vgpr; @init_vgpr writes it first) and shared[t]
; (@uninit_lds).
define amdgpu_kernel void @uninit_vgpr(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "v_mov_b32 $0, v40", "=v,~{v40}"()
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @init_vgpr(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "v_mov_b32 v40, 7\0Av_mov_b32 $0, v40", "=v,~{v40}"()
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
; A 64-bit multiply-add whose addend's high half (v41) nothing wrote: its high result is
; undefined, which is no bug while only the low half is used (@carry_low; LLVM emits
; v_mad_u64_u32 so as a 32-bit multiply-add) and a read of what nothing wrote when the high half
; is (@carry_high).
define amdgpu_kernel void @carry_low(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "v_mov_b32 v40, 5\0Av_mad_u64_u32 v[40:41], vcc, v40, 3, v[40:41]\0Av_mov_b32 $0, v40", "=v,~{v40},~{v41},~{vcc}"()
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @carry_high(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %v = call i32 asm sideeffect "v_mov_b32 v40, 5\0Av_mad_u64_u32 v[40:41], vcc, v40, 3, v[40:41]\0Av_mov_b32 $0, v41", "=v,~{v40},~{v41},~{vcc}"()
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @uninit_lds(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(3) @shared, i32 %t
  %v = load i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}
; The fixed @uninit_lds: each lane writes shared[t] before it reads it back.
define amdgpu_kernel void @init_lds(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr i32, ptr addrspace(3) @shared, i32 %t
  %w = add i32 %t, 100
  store volatile i32 %w, ptr addrspace(3) %p
  %v = load volatile i32, ptr addrspace(3) %p
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %v, ptr addrspace(1) %q
  ret void
}

; out[t + 1] = t: the last lane writes one element past a buffer of 64 (@in_bounds, the fixed
; kernel: out[t] = t).
define amdgpu_kernel void @in_bounds(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %t
  store i32 %t, ptr addrspace(1) %q
  ret void
}
define amdgpu_kernel void @past_end(ptr addrspace(1) %out) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %u = add i32 %t, 1
  %q = getelementptr i32, ptr addrspace(1) %out, i32 %u
  store i32 %t, ptr addrspace(1) %q
  ret void
}
)IR";

std::mt19937_64& rng() {
  static std::mt19937_64 gen = weft::testing::seeded_rng("test_sanitizer");
  return gen;
}

const CodeObject& kernels(const std::string& arch) {
  static const CodeObject gfx942 = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx942"));
  static const CodeObject gfx950 = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx950"));
  return arch == "gfx942" ? gfx942 : gfx950;
}

struct Run {
  std::vector<Hazard> hazards;  // empty: the launch ran clean
  std::vector<uint32_t> out;
};

// Launches `kernel` in hazard mode over one workgroup of `threads` work-items with `in` as its
// first argument (where it is not empty: the kernels that take one) and an `out` of 64 words
// poisoned with 0xCD.
Run run_sanitized(const std::string& arch, const std::string& kernel, uint32_t threads, const std::vector<uint32_t>& in,
                  uint64_t schedule_seed = 1) {
  const CodeObject& code = kernels(arch);
  GlobalMemory mem;
  std::vector<ArgValue> args;
  if (!in.empty()) args.push_back(ArgValue::pointer(weft::testing::upload(mem, in, "in")));
  const uint64_t out = weft::testing::upload(mem, std::vector<uint32_t>(64, 0xCDCDCDCDu), "out");
  args.push_back(ArgValue::pointer(out));
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {threads, 1, 1};
  o.kernarg = pack_kernel_args(code.kernel(kernel), args);
  o.sanitize = true;
  o.schedule_seed = schedule_seed;
  Run r;
  try {
    run_kernel(code, kernel, mem, o);
  } catch (const HazardError& e) {
    r.hazards = e.hazards();
    INFO(e.what());
  }
  r.out = weft::testing::download<uint32_t>(mem, out, 64);
  return r;
}

std::vector<uint32_t> random_words() {
  std::vector<uint32_t> v(64);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng()() >> 8);
  return v;
}

const Hazard* find(const Run& r, HazardKind kind) {
  const auto it = std::find_if(r.hazards.begin(), r.hazards.end(), [&](const Hazard& h) { return h.kind == kind; });
  return it == r.hazards.end() ? nullptr : &*it;
}

std::string listing(const Run& r) {
  std::string s;
  for (const Hazard& h : r.hazards) s += h.message + "\n";
  return s;
}

}  // namespace

TEST_CASE("hazard mode reports a VGPR read before the s_waitcnt that covers its load, and accepts the kernel that waits") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const std::vector<uint32_t> in = random_words();
    const Run bad = run_sanitized(arch, "early", 64, in);
    INFO(listing(bad));
    const Hazard* h = find(bad, HazardKind::ReadBeforeWait);
    REQUIRE(h != nullptr);
    CHECK(h->other_instruction == "global_load_dword");
    CHECK(h->pc > h->other_pc);
    CHECK(h->wave == 0);
    CHECK(h->lane == 0);
    CHECK(h->message.find("before an s_waitcnt covers it (vmcnt(0) would)") != std::string::npos);
    CHECK(h->message.find("kernel early, workgroup (0,0,0), wave 0, lane 0") != std::string::npos);

    const Run good = run_sanitized(arch, "waited", 64, in);
    INFO(listing(good));
    CHECK(good.hazards.empty());
    for (size_t t = 0; t < 64; ++t) CHECK(good.out[t] == in[t] + 1);
  }
}

TEST_CASE("hazard mode reports an LDS read of a direct-to-LDS fill before its vmcnt wait") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const std::vector<uint32_t> in = random_words();
    const Run bad = run_sanitized(arch, "fill_early", 64, in);
    INFO(listing(bad));
    const Hazard* h = find(bad, HazardKind::ReadBeforeWait);
    REQUIRE(h != nullptr);
    CHECK(h->instruction == "ds_read_b32");
    CHECK(h->other_instruction == "buffer_load_dword");
    CHECK(h->message.find("the direct-to-LDS load at") != std::string::npos);

    const Run good = run_sanitized(arch, "fill_waited", 64, in);
    INFO(listing(good));
    CHECK(good.hazards.empty());
    CHECK(good.out == in);
  }
}

TEST_CASE("hazard mode reports an SGPR read before the lgkmcnt wait of its scalar load") {
  const std::vector<uint32_t> in = random_words();
  const Run bad = run_sanitized("gfx950", "scalar_early", 64, in);
  INFO(listing(bad));
  const Hazard* h = find(bad, HazardKind::ReadBeforeWait);
  REQUIRE(h != nullptr);
  CHECK(h->other_instruction == "s_load_dword");
  CHECK(h->message.find("lgkmcnt(0) would") != std::string::npos);
  const Run good = run_sanitized("gfx950", "scalar_waited", 64, in);
  INFO(listing(good));
  CHECK(good.hazards.empty());
  CHECK(std::all_of(good.out.begin(), good.out.end(), [&](uint32_t x) { return x == in[0]; }));
}

TEST_CASE("hazard mode reports an LDS race between waves with no barrier, or with a barrier the write has not waited for") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    // The race is found whichever wave the schedule runs first.
    for (int i = 0; i < 4; ++i) {
      const uint64_t seed = rng()();
      CAPTURE(seed);
      const Run bad = run_sanitized(arch, "race", 128, {}, seed);
      INFO(listing(bad));
      const Hazard* h = find(bad, HazardKind::LdsRace);
      REQUIRE(h != nullptr);
      CHECK(h->wave != h->other_wave);
      CHECK(h->message.find("with no s_barrier between them") != std::string::npos);
      CHECK((h->instruction == "ds_write_b32" || h->instruction == "ds_read_b32"));
    }
    const Run unwaited = run_sanitized(arch, "unwaited_barrier", 128, {}, rng()());
    INFO(listing(unwaited));
    const Hazard* h = find(unwaited, HazardKind::LdsRace);
    REQUIRE(h != nullptr);
    CHECK(h->instruction == "ds_read_b32");
    CHECK(h->other_instruction == "ds_write_b32");
    CHECK(h->wave == 1);
    CHECK(h->other_wave == 0);
    CHECK(h->message.find("an s_barrier lies between them, but no s_waitcnt made that wave wait for its access") != std::string::npos);

    const Run good = run_sanitized(arch, "synced", 128, {}, rng()());
    INFO(listing(good));
    CHECK(good.hazards.empty());
    for (uint32_t lane = 0; lane < 64; ++lane) CHECK(good.out[lane] == lane);
  }
}

// A DS instruction's lanes are checked together, as merged runs of the bytes they touch
// (Sanitizer::lds_lanes); the report still names the lane whose bytes race.
TEST_CASE("hazard mode names the one lane of a DS instruction that races, whichever wave runs first") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    for (int i = 0; i < 4; ++i) {
      const uint64_t seed = rng()();
      CAPTURE(seed);
      const Run bad = run_sanitized(arch, "one_lane_race", 128, {}, seed);
      INFO(listing(bad));
      const Hazard* h = find(bad, HazardKind::LdsRace);
      REQUIRE(h != nullptr);
      CHECK(h->lane == 37);
      CHECK(h->address == 37 * 4);  // shared2[37]: the kernel's only LDS variable, at 0
      CHECK(h->wave != h->other_wave);
      // Where wave 1 reads first, lane 37 also reads bytes nothing wrote yet: reported at its lane.
      for (const Hazard& other : bad.hazards) {
        CHECK(other.lane == 37);
        CHECK((other.kind == HazardKind::LdsRace || other.kind == HazardKind::UninitializedRead));
      }
    }
  }
}

TEST_CASE("hazard mode reports reads of a VGPR or of LDS that nothing wrote") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const Run bad = run_sanitized(arch, "uninit_vgpr", 64, {});
    INFO(listing(bad));
    const Hazard* h = find(bad, HazardKind::UninitializedRead);
    REQUIRE(h != nullptr);
    CHECK(h->instruction == "v_mov_b32_e32");
    CHECK(h->message.find("reads v40, which nothing wrote") != std::string::npos);
    CHECK(h->other_pc == UINT64_MAX);

    const Run lds = run_sanitized(arch, "uninit_lds", 64, {});
    INFO(listing(lds));
    const Hazard* l = find(lds, HazardKind::UninitializedRead);
    REQUIRE(l != nullptr);
    CHECK(l->instruction == "ds_read_b32");
    CHECK(l->message.find("which this workgroup never wrote") != std::string::npos);

    const Run good = run_sanitized(arch, "init_vgpr", 64, {});
    INFO(listing(good));
    CHECK(good.hazards.empty());
    CHECK(std::all_of(good.out.begin(), good.out.end(), [](uint32_t x) { return x == 7; }));

    const Run good_lds = run_sanitized(arch, "init_lds", 64, {});
    INFO(listing(good_lds));
    CHECK(good_lds.hazards.empty());
    for (size_t t = 0; t < good_lds.out.size(); ++t) CHECK(good_lds.out[t] == t + 100);
  }
}

TEST_CASE("hazard mode: an undefined high half of a 64-bit addend taints only the result's high half") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const Run low = run_sanitized(arch, "carry_low", 64, {});
    INFO(listing(low));
    CHECK(low.hazards.empty());
    CHECK(std::all_of(low.out.begin(), low.out.end(), [](uint32_t x) { return x == 5 * 3 + 5; }));

    const Run high = run_sanitized(arch, "carry_high", 64, {});
    INFO(listing(high));
    const Hazard* h = find(high, HazardKind::UninitializedRead);
    REQUIRE(h != nullptr);
    CHECK(h->instruction == "v_mov_b32_e32");  // the read of v41, not the multiply-add
    CHECK(h->message.find("reads v41, which nothing wrote") != std::string::npos);
  }
}

TEST_CASE("hazard mode reports an access out of bounds as a hazard and ends the launch, and accepts the kernel in bounds") {
  for (const char* arch : {"gfx942", "gfx950"}) {
    CAPTURE(arch);
    const Run bad = run_sanitized(arch, "past_end", 64, {});
    INFO(listing(bad));
    REQUIRE(bad.hazards.size() == 1);
    CHECK(bad.hazards[0].kind == HazardKind::OutOfBounds);
    CHECK(bad.hazards[0].instruction == "global_store_dword");
    CHECK(bad.hazards[0].message.find("out of bounds: kernel past_end") != std::string::npos);
    CHECK(bad.hazards[0].message.find("lane 63") != std::string::npos);

    const Run good = run_sanitized(arch, "in_bounds", 64, {});
    INFO(listing(good));
    CHECK(good.hazards.empty());
    for (size_t t = 0; t < good.out.size(); ++t) CHECK(good.out[t] == t);
  }
}

TEST_CASE("hazard mode's reports and results are the same for the same schedule seed") {
  const uint64_t seed = rng()();
  CAPTURE(seed);
  const Run a = run_sanitized("gfx950", "race", 128, {}, seed), b = run_sanitized("gfx950", "race", 128, {}, seed);
  CHECK(listing(a) == listing(b));
  CHECK(a.out == b.out);
}
