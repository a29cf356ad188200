// Kernels compiled by llc-22 at test time, run on the emulator on both targets and checked
// against host references with fresh random inputs and poisoned outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "kernel_io.h"
#include "listing_check.h"
#include "toolchain.h"
#include "weft/dsl/error.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/isa.h"
#include "weft/emulator/listing.h"

using namespace weft::emu;

namespace {

using weft::testing::upload;

const char* kKernels = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare float @llvm.fma.f32(float, float, float)
define amdgpu_kernel void @saxpy(ptr addrspace(1) %x, ptr addrspace(1) %y, float %a, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 256
  %i = add i32 %base, %tid
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %body, label %done
body:
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  %vx = load float, ptr addrspace(1) %px
  %vy = load float, ptr addrspace(1) %py
  %r = call float @llvm.fma.f32(float %a, float %vx, float %vy)
  store float %r, ptr addrspace(1) %py
  br label %done
done:
  ret void
}
@lds = internal addrspace(3) global [256 x float] undef
define amdgpu_kernel void @reduce(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 256
  %i = add i32 %base, %tid
  %p = getelementptr float, ptr addrspace(1) %in, i32 %i
  %v = load float, ptr addrspace(1) %p
  %l = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %l
  br label %loop
loop:
  %s = phi i32 [128, %0], [%s2, %cont]
  call void @llvm.amdgcn.s.barrier()
  %act = icmp ult i32 %tid, %s
  br i1 %act, label %add, label %cont
add:
  %j = add i32 %tid, %s
  %lj = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %j
  %a = load float, ptr addrspace(3) %l
  %b = load float, ptr addrspace(3) %lj
  %c = fadd float %a, %b
  store float %c, ptr addrspace(3) %l
  br label %cont
cont:
  %s2 = lshr i32 %s, 1
  %more = icmp ne i32 %s2, 0
  br i1 %more, label %loop, label %fin
fin:
  call void @llvm.amdgcn.s.barrier()
  %z = icmp eq i32 %tid, 0
  br i1 %z, label %w, label %end
w:
  %r = load float, ptr addrspace(3) @lds
  %po = getelementptr float, ptr addrspace(1) %out, i32 %bid
  store float %r, ptr addrspace(1) %po
  br label %end
end:
  ret void
}
)";

// Barriers count the arrivals of the live waves, not program counters: wave 0 waits at one
// s_barrier, waves 1 and 2 at another, and wave 3 ends (s_endpgm) without reaching either, so the
// barrier is complete once waves 0 to 2 have arrived. Each wave then reads what another wave
// wrote to LDS before the barrier.
const char* kStaggered = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)
declare void @llvm.amdgcn.s.barrier()
@slots = internal addrspace(3) global [192 x float] undef
define amdgpu_kernel void @staggered(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wv = lshr i32 %tid, 6
  %w = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %wv)
  %early = icmp eq i32 %w, 3
  br i1 %early, label %done, label %work
work:
  %p = getelementptr float, ptr addrspace(1) %in, i32 %tid
  %v = load float, ptr addrspace(1) %p
  %l = getelementptr [192 x float], ptr addrspace(3) @slots, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %l
  %first = icmp eq i32 %w, 0
  br i1 %first, label %a, label %b
a:
  call void @llvm.amdgcn.s.barrier()
  %ja = add i32 %tid, 64
  %la = getelementptr [192 x float], ptr addrspace(3) @slots, i32 0, i32 %ja
  %xa = load float, ptr addrspace(3) %la
  br label %write
b:
  call void @llvm.amdgcn.s.barrier()
  %jb0 = add i32 %tid, 128
  %jb = urem i32 %jb0, 192
  %lb = getelementptr [192 x float], ptr addrspace(3) @slots, i32 0, i32 %jb
  %xb0 = load float, ptr addrspace(3) %lb
  %xb = fmul float %xb0, 2.0
  br label %write
write:
  %x = phi float [%xa, %a], [%xb, %b]
  %po = getelementptr float, ptr addrspace(1) %out, i32 %tid
  store float %x, ptr addrspace(1) %po
  br label %done
done:
  ret void
}
)";

std::mt19937& rng() {
  static std::mt19937 r(std::random_device{}());
  return r;
}

std::vector<float> random_floats(size_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng());
  return v;
}

template <typename... T>
std::vector<uint8_t> pack(T... args) {
  std::vector<uint8_t> out;
  auto put = [&](auto v) {
    const size_t align = sizeof(v);
    out.resize((out.size() + align - 1) / align * align);
    const size_t at = out.size();
    out.resize(at + sizeof(v));
    std::memcpy(out.data() + at, &v, sizeof(v));
  };
  (put(args), ...);
  return out;
}

const Arch kArchs[] = {Arch::Gfx942, Arch::Gfx950};

}  // namespace

TEST_CASE("every instruction of the compiled test kernels disassembles as llvm-objdump prints it") {
  for (Arch arch : kArchs) weft::testing::check_listing_matches_objdump(weft::testing::compile_ll(kKernels, arch_name(arch)), arch);
}

TEST_CASE("saxpy with a bounds check runs on both targets") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    const int n = 1000;  // not a multiple of the block: the tail lanes are masked off
    const std::vector<float> x = random_floats(n), y = random_floats(n);
    const float a = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng());
    GlobalMemory mem;
    const uint64_t px = upload(mem, x, "x"), py = upload(mem, y, "y");
    LaunchOptions o;
    o.grid = {4, 1, 1};
    o.block = {256, 1, 1};
    o.kernarg = pack(px, py, a, n);
    const RunReport r = run_kernel(code, "saxpy", mem, o);
    CHECK(r.waves == 16);
    const float* got = reinterpret_cast<const float*>(mem.data(py));
    for (int i = 0; i < n; ++i) REQUIRE(got[i] == std::fma(a, x[static_cast<size_t>(i)], y[static_cast<size_t>(i)]));
  }
}

// run_kernel keeps the programs it decoded for later launches, keyed by target, kernel name and
// code bytes: two code objects whose kernels share a name but not their code must each run their
// own, however launches of the two alternate.
TEST_CASE("launches reuse a decoded program only for the same code: same-named kernels of two code objects stay apart") {
  const auto source = [](const char* op) {
    return std::string(R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @step(ptr addrspace(1) %x) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr float, ptr addrspace(1) %x, i32 %tid
  %v = load float, ptr addrspace(1) %p
  %r = )") + op + R"( float %v, 3.0
  store float %r, ptr addrspace(1) %p
  ret void
}
)";
  };
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject add = CodeObject::load(weft::testing::compile_ll(source("fadd"), arch_name(arch)));
    const CodeObject mul = CodeObject::load(weft::testing::compile_ll(source("fmul"), arch_name(arch)));
    const std::vector<float> x = random_floats(64);
    GlobalMemory mem;
    const uint64_t px = upload(mem, x, "x");
    LaunchOptions o;
    o.grid = {1, 1, 1};
    o.block = {64, 1, 1};
    o.kernarg = pack(px);
    std::vector<float> want = x;
    for (const CodeObject* code : {&add, &mul, &add, &mul, &mul, &add}) {
      run_kernel(*code, "step", mem, o);
      for (float& v : want) v = code == &add ? v + 3.0f : v * 3.0f;
      const float* got = reinterpret_cast<const float*>(mem.data(px));
      for (size_t i = 0; i < want.size(); ++i) REQUIRE(got[i] == want[i]);
    }
  }
}

TEST_CASE("an LDS tree reduction with barriers across four waves") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, arch_name(arch)));
    const int groups = 6;
    const std::vector<float> in = random_floats(256 * groups);
    GlobalMemory mem;
    const uint64_t pin = upload(mem, in, "in");
    const uint64_t pout = upload(mem, std::vector<float>(groups, std::nanf("")), "out");  // poisoned
    LaunchOptions o;
    o.grid = {groups, 1, 1};
    o.block = {256, 1, 1};
    o.kernarg = pack(pin, pout);
    run_kernel(code, "reduce", mem, o);
    const float* got = reinterpret_cast<const float*>(mem.data(pout));
    for (int g = 0; g < groups; ++g) {
      double want = 0;
      for (int i = 0; i < 256; ++i) want += in[static_cast<size_t>(g * 256 + i)];
      CHECK(std::abs(got[g] - want) <= 1e-5 * 256);
    }
  }
}

TEST_CASE("a barrier completes when every live wave arrives, at whichever s_barrier, with ended waves left out") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kStaggered, arch_name(arch)));
    std::ostringstream listing;
    write_listing(code, listing);
    INFO(listing.str());
    size_t barriers = 0;
    for (size_t at = listing.str().find("s_barrier"); at != std::string::npos; at = listing.str().find("s_barrier", at + 1)) ++barriers;
    REQUIRE(barriers == 2);  // two barrier instructions, not one hoisted into the common path
    const std::vector<float> in = random_floats(256);
    GlobalMemory mem;
    const uint64_t pin = upload(mem, in, "in");
    const uint64_t pout = upload(mem, std::vector<float>(256, std::nanf("")), "out");  // poisoned
    LaunchOptions o;
    o.grid = {1, 1, 1};
    o.block = {256, 1, 1};
    o.kernarg = pack(pin, pout);
    run_kernel(code, "staggered", mem, o);
    const float* got = reinterpret_cast<const float*>(mem.data(pout));
    for (size_t t = 0; t < 256; ++t) {
      CAPTURE(t);
      if (t < 64) CHECK(got[t] == in[t + 64]);
      else if (t < 192) CHECK(got[t] == in[(t + 128) % 192] * 2.0f);
      else CHECK(std::isnan(got[t]));  // wave 3 ended first and wrote nothing
    }
  }
}

// Workgroups that wait for each other (LaunchOptions::cooperative): workgroup g sleeps until the
// flag holds G - 1 - g, records what it saw and hands the flag on, so the chain runs from the
// last workgroup to the first, which one at a time, in order, never would. And a launch whose
// workgroups only ever wait (one wave sleeping on a flag, the others at a barrier) is an error
// naming the kernel, not a hang; in hazard mode too.
const char* kHandOff = R"(
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.sleep(i32)
declare void @llvm.amdgcn.s.barrier()
define amdgpu_kernel void @hand_off(ptr addrspace(1) %flag, ptr addrspace(1) %out, i32 %groups) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %g = call i32 @llvm.amdgcn.workgroup.id.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %spin, label %done
spin:
  call void @llvm.amdgcn.s.sleep(i32 1)
  %seen = load atomic i32, ptr addrspace(1) %flag syncscope("agent") monotonic, align 4
  %last = sub i32 %groups, 1
  %turn = sub i32 %last, %g
  %mine = icmp eq i32 %seen, %turn
  br i1 %mine, label %go, label %spin
go:
  %slot = getelementptr i32, ptr addrspace(1) %out, i32 %g
  store i32 %seen, ptr addrspace(1) %slot
  %next = add i32 %seen, 1
  store atomic i32 %next, ptr addrspace(1) %flag syncscope("agent") monotonic, align 4
  br label %done
done:
  ret void
}
define amdgpu_kernel void @waits_forever(ptr addrspace(1) %flag) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %spin, label %met
spin:
  call void @llvm.amdgcn.s.sleep(i32 1)
  %v = load atomic i32, ptr addrspace(1) %flag syncscope("agent") monotonic, align 4
  %zero = icmp eq i32 %v, 0
  br i1 %zero, label %spin, label %met
met:
  call void @llvm.amdgcn.s.barrier()
  ret void
}
)";

TEST_CASE("a cooperative launch keeps every workgroup resident and runs them in turns, and one where all only wait is an error") {
  for (Arch arch : kArchs) {
    INFO(std::string(arch_name(arch)));
    const CodeObject code = CodeObject::load(weft::testing::compile_ll(kHandOff, arch_name(arch)));
    constexpr uint32_t groups = 6;
    for (const bool sanitize : {false, true}) {
      CAPTURE(sanitize);
      GlobalMemory mem;
      const uint64_t flag = upload(mem, std::vector<int32_t>{0}, "flag");
      const uint64_t out = upload(mem, std::vector<int32_t>(groups, -7), "out");  // poisoned
      LaunchOptions o;
      o.grid = {groups, 1, 1};
      o.block = {128, 1, 1};
      o.kernarg = pack(flag, out, groups);
      o.cooperative = true;
      o.sanitize = sanitize;
      run_kernel(code, "hand_off", mem, o);
      const int32_t* seen = reinterpret_cast<const int32_t*>(mem.data(out));
      for (uint32_t g = 0; g < groups; ++g) CHECK(seen[g] == static_cast<int32_t>(groups - 1 - g));
      CHECK(*reinterpret_cast<const int32_t*>(mem.data(flag)) == static_cast<int32_t>(groups));
    }

    // Waves 1 to 3 of each workgroup wait at a barrier while wave 0 sleeps on a flag nothing sets.
    GlobalMemory idle;
    LaunchOptions forever;
    forever.grid = {3, 1, 1};
    forever.block = {256, 1, 1};
    forever.kernarg = pack(upload(idle, std::vector<int32_t>{0}, "flag"));
    forever.cooperative = true;
    for (const bool sanitize : {false, true}) {
      CAPTURE(sanitize);
      forever.sanitize = sanitize;
      CHECK_THROWS_WITH_AS(run_kernel(code, "waits_forever", idle, forever),
                           doctest::Contains("cooperative launch of waits_forever: for 1000 turns in a row every workgroup only waited"), weft::Error);
    }
  }
}

TEST_CASE("an out-of-bounds store is reported with kernel, PC, workgroup, wave, lane and the nearest buffer") {
  const CodeObject code = CodeObject::load(weft::testing::compile_ll(kKernels, "gfx950"));
  GlobalMemory mem;
  const uint64_t px = upload(mem, random_floats(100), "x"), py = upload(mem, random_floats(100), "y");
  LaunchOptions o;
  o.grid = {1, 1, 1};
  o.block = {256, 1, 1};
  o.kernarg = pack(px, py, 1.0f, 200);  // n larger than the buffers: a planted bug
  try {
    run_kernel(code, "saxpy", mem, o);
    FAIL("no error");
  } catch (const weft::Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("kernel saxpy") != std::string::npos);
    CHECK(m.find("PC 0x") != std::string::npos);
    CHECK(m.find("workgroup (0,0,0)") != std::string::npos);
    CHECK(m.find("wave 1") != std::string::npos);
    CHECK(m.find("lane 36") != std::string::npos);  // element 100 = wave 1, lane 36
    CHECK(m.find("out-of-bounds global access") != std::string::npos);
    CHECK(m.find("nearest buffer 'x'") != std::string::npos);
  }
}
